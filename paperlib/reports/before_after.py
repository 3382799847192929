"""The words every report uses for an adapter against the base model: one row of
``paperlib.training.compare`` (its ``difference``, ``p``, ``test`` and Hedges' ``g``) said in
words, and the verdicts built on them (notebooks 03, 04, 14 and 16)."""

from __future__ import annotations

import pandas as pd

from paperlib.stats import ALPHA


def which_test(row) -> str:
    """A row's test and p, in words."""
    if row.p != row.p:
        return "no test: every episode scored the same"
    return f"{'Welch' if row.test == 'welch' else 'Mann-Whitney, as neither side varies,'} p = {row.p:.2g}"


def hedges(row) -> str:
    """A row's Hedges' g with its interval, in words (none where a side does not vary)."""
    if row.g != row.g:
        return "no Hedges' g: a side's scores do not vary"
    return f"Hedges' g = {row.g:.2f} [{row.g_low:.2f}, {row.g_high:.2f}]"


def verdict(row) -> str:
    """Whether a row is significantly higher or lower than the base model at :data:`~paperlib.stats.ALPHA`."""
    if not row["p"] < ALPHA:
        return "no significant difference"
    return "significantly higher" if row["difference"] > 0 else "significantly lower"


def learned(control: pd.DataFrame) -> bool:
    """Whether a positive control's adapter beats the base model significantly in every row of its
    comparison table."""
    return bool(len(control)) and bool(((control["p"] < ALPHA) & (control["difference"] > 0)).all())


def lowered(row) -> bool:
    """Whether a row is significantly below the base model at :data:`~paperlib.stats.ALPHA` (the RLFT
    positive control's test: the invalid share fell)."""
    return bool(row["p"] < ALPHA and row["difference"] < 0)


def raised(row) -> bool:
    """Whether a row is significantly above the base model at :data:`~paperlib.stats.ALPHA`."""
    return bool(row["p"] < ALPHA and row["difference"] > 0)


def change(row) -> str:
    """A row's change against the base model in words: its direction, p and g when significant at
    :data:`~paperlib.stats.ALPHA`."""
    if not row["p"] < ALPHA:
        return f"no significant change (p = {row['p']:.2g})" if row["p"] == row["p"] else "no test: no variation"
    if row.get("test", "welch") == "welch":
        return f"{'higher' if row['difference'] > 0 else 'lower'}, p = {row['p']:.2g}, g = {row['g']:.2f}"
    return f"{'higher' if row['difference'] > 0 else 'lower'}, p = {row['p']:.2g}, {row['test']}: neither side varies"


def cot_verdict(effect: str, with_cot: bool, without: bool) -> str:
    """Ours beside paper B's CoT ablation (RLFT without CoT does much worse than with it, Fig. 9b):
    whether ``effect`` (e.g. "lowers regret") was significant with CoT and not without, the
    opposite, in both styles or in neither."""
    if with_cot != without:
        return (
            f"Ours {'show that direction' if with_cot else 'show the opposite'}: RLFT {effect} significantly "
            f"{'with' if with_cot else 'without'} CoT and not {'without' if with_cot else 'with'} it."
        )
    return f"Ours do not separate the two: RLFT {effect} significantly in {'both styles' if with_cot else 'neither style'}."
