"""Notebook 12 (paper B's frequency bias): what it says about the scored cases of
``bandits.experiments.frequency_bias_results``, from the table ``reports.common.frequency_bias_claims``
computes: a sentence per model (:func:`frequency_bias_sentences`) and the claims B06, B07 and B18
in the claims schema (:func:`frequency_bias_claims_table`)."""

from __future__ import annotations

import os

import pandas as pd

from paperlib.claims import claims_table, source_name


def frequency_bias_sentences(claims: pd.DataFrame) -> str:
    """A Markdown bullet per model of ``common.frequency_bias_claims``: its correlation and the share
    of its predictions that are the most frequent action, beside the paper's 2B and 27B, and
    whether it shows the 2B's frequency bias."""
    lines = []
    for row in claims.to_dict("records"):
        verdict = "shows" if row["shown: r < 0 and frequent > 0.5"] else "does not show"
        lines.append(
            f"- **{row['model']}**: r = {row['r']:+.2f} (p = {row['p']:.2g}; paper 2B / 27B: {row['paper r (2B / 27B)']}); "
            f"{row['frequent']:.0%} of its predictions are the most frequent action and {row['greedy']:.0%} the greedy "
            f"one (paper frequent 2B / 27B: {row['paper frequent (2B / 27B)']}); at 0-10 repetitions "
            f"{row['frequent, 0-10 repetitions']:.0%} frequent (paper 2B: {row['paper frequent 0-10 (2B)']}). "
            f"It {verdict} the 2B's frequency bias."
        )
    return "\n".join(lines)


def frequency_bias_claims_table(frequency_bias: pd.DataFrame, source: str | os.PathLike, profile: str) -> pd.DataFrame:
    """Notebook 12's table (``common.frequency_bias_claims``, one row per model) in the
    schema: per model the entropy-repetitions correlation (B06), the share of predictions
    that are the most frequent action (B07) and that share at 0-10 repetitions (B18), each
    tested against the paper's Gemma2 2B, whose frequency bias the table's own verdict asks
    about: r < 0 (rule ``lower``: the sign of r and the p of Pearson's test), and most
    predictions the frequent action (rule ``above`` 0.5: the Wilson interval of the share over
    the cases); "most" at 0-10 repetitions is our reading of B18 **[ours]**. The distribution
    is the model's own scores of every arm (no fallback plays), so no gate applies. The cases
    share histories (each repetition count extends the same first steps), so the intervals
    and p take them as independent, which they are not quite **[ours]**. ``source``: the
    store its scores are in."""
    from paperlib.stats import wilson_ci

    rows = []
    for row in frequency_bias.to_dict("records"):
        model = row["model"]
        share, low, high = wilson_ci(round(row["frequent"] * row["cases"]), row["cases"])
        first, first_low, first_high = wilson_ci(
            round(row["frequent, 0-10 repetitions"] * row["cases, 0-10 repetitions"]), row["cases, 0-10 repetitions"]
        )
        rows += [
            {
                "reported": "B06",
                "what": "correlation of the action entropy with the repetitions of the last action (Pearson r)",
                "model": model,
                "ours": row["r"],
                "effect_if": "r < 0, as the paper's 2B (Pearson's test)",
                "rule": "lower",
                "test": f"pearson, {row['cases']} cases",
                "p": row["p"],
                "note": f"paper 2B / 27B: {row['paper r (2B / 27B)']}",
            },
            {
                "reported": "B07",
                "what": "share of predictions that are the most frequent action",
                "model": model,
                "ours": share,
                "ours_low": low,
                "ours_high": high,
                "effect_if": "above 0.5, as the paper's 2B (our Wilson interval wholly above)",
                "rule": "above",
                "reference": 0.5,
                "note": f"{row['cases']} cases; greedy {row['greedy']:.2f}, other {row['other']:.2f}; "
                f"paper 2B / 27B: {row['paper frequent (2B / 27B)']}",
            },
            {
                "reported": "B18",
                "what": "share of predictions that are the most frequent action, 0-10 repetitions",
                "model": model,
                "ours": first,
                "ours_low": first_low,
                "ours_high": first_high,
                "effect_if": "above 0.5 [ours] (our Wilson interval wholly above)",
                "rule": "above",
                "reference": 0.5,
                "note": f"{row['cases, 0-10 repetitions']} cases",
            },
        ]
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "12_frequency_bias", profile)
