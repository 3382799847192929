"""Reading the move out of a completion: the last ``ACTION=X`` whose X is a cell 0..8.

Tolerance **[ours]**, the same as for the bandit answers, so that what a reader would
call "it answered 4" parses, and nothing looser:

- ``ACTION`` in any case, as its own word (``**Action=4**``, ``final_action=4`` count;
  ``REACTION=4`` does not); spaces or tabs around ``=``; only ``=`` separates
  (``ACTION: 4`` is no answer, since the prompt asks for ``ACTION=X``);
- X wrapped in markdown, quotes or brackets (``ACTION=**4**``, ``ACTION=[4]``) and
  followed by punctuation (``ACTION = 4.``);
- X is a whole run of digits and a single one: ``ACTION=12``, ``ACTION=04``,
  ``ACTION=4.5``, ``ACTION=4a`` name no cell, nor does ``ACTION=9``; such an answer is
  skipped and the one before it counts.

The parser knows the cells, not the board: an answer naming an occupied cell is
returned as it is, and the runner flags it as an illegal move. ``None`` means no move
was found; the runner then plays a random legal move and flags the step invalid.
"""

from __future__ import annotations

import re

from paperlib.tictactoe.game import CELLS

_DECORATION = r"[*_`'\"\[\]()<>{}]*"
ACTION_PATTERN = re.compile(
    rf"(?<![a-z])action{_DECORATION}[ \t]*=[ \t]*{_DECORATION}[ \t]*(?P<x>[0-9]+)(?![a-z0-9]|\.[0-9])",
    re.IGNORECASE,
)


def parse_action(text: str) -> int | None:
    """The cell of the last ``ACTION=X`` in ``text`` that names one, or None."""
    for match in reversed(list(ACTION_PATTERN.finditer(text or ""))):
        x = match.group("x")
        if len(x) == 1 and int(x) < CELLS:
            return int(x)
    return None
