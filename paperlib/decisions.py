"""What a batched agent of any game returns when it has more than action indices to report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Decisions:
    actions: np.ndarray  # (M,) action index per live episode, -1 where the output held no valid action
    texts: Sequence[str] | None = None  # raw completion per episode
    extra: dict[str, Sequence] = field(default_factory=dict)  # more step columns, M values each
