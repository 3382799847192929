"""Reading the action out of a completion: the last ``ACTION=X`` whose X is an arm.

Tolerance **[ours]**, chosen so that what a reader would call "it answered red"
parses, and nothing looser:

- ``ACTION`` in any case, as its own word (``**Action=red**``, ``final_action=red``
  count; ``REACTION=red`` does not);
- spaces or tabs around ``=``; only ``=`` separates (``ACTION: red`` is no answer,
  since the prompt asks for ``ACTION=X``);
- X in any case, wrapped in markdown or quotes or brackets (``ACTION=**Red**``,
  ``ACTION="red"``, ``ACTION=[3]``) and followed by punctuation (``ACTION = red.``);
- X is a whole run of letters or of digits: ``ACTION=3.5``, ``ACTION=red5`` and
  ``ACTION=03`` name no arm (``3`` is an arm name, ``03`` is not);
- a history line (``Step=3 Action=red Reward=0.52``: the action followed by
  ``Reward=``) is a record, not an answer, whether the prompt shows it or the model
  echoes it;
- an answer that names no arm (``ACTION=X``, ``ACTION=grey``, ``ACTION=12`` with 10
  arms) is skipped and the one before it counts: the last *valid* match is the action.

``None`` means no valid action; the runner then plays a random arm and marks the
step invalid (paper B, experimental setup).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_DECORATION = r"[*_`'\"\[\]()<>{}]*"
ACTION_PATTERN = re.compile(
    rf"(?<![a-z])action{_DECORATION}[ \t]*=[ \t]*{_DECORATION}[ \t]*(?P<x>[a-z]+|\d+)(?![a-z0-9]|\.\d)"
    r"(?![ \t]+reward[ \t]*=)",
    re.IGNORECASE,
)


def parse_action(text: str, arm_names: Sequence[str]) -> int | None:
    """Index in ``arm_names`` of the last valid ``ACTION=X`` in ``text``, or None."""
    index = {name.lower(): a for a, name in enumerate(arm_names)}
    for match in reversed(list(ACTION_PATTERN.finditer(text or ""))):
        arm = index.get(match.group("x").lower())
        if arm is not None:
            return arm
    return None
