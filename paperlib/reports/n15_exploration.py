"""Notebook 15 (paper B's exploration mechanisms): what it says about the table
``bandits.experiments.exploration_table`` writes: per model, each mechanism that changes
coverage or regret significantly against the same model without one (:func:`exploration_sentences`)."""

from __future__ import annotations

import pandas as pd


def exploration_sentences(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """A Markdown bullet per model: its plain coverage, regret and invalid share, each mechanism
    that changes coverage or regret significantly (Welch, ``alpha``), and, where most plain
    steps are invalid (played as random arms), that the comparison shows little, from
    ``experiments.exploration_table``."""
    lines = []
    for model, rows in table[~table["model"].str.startswith("baseline:")].groupby("model", sort=False):
        plain = rows[rows["exploration"] == "none"].iloc[0]
        changes = []
        for r in rows[rows["exploration"] != "none"].itertuples():
            moved = [
                f"{metric} {getattr(r, metric):.2f} ({'up' if getattr(r, metric) > plain[metric] else 'down'}, "
                f"p = {getattr(r, metric + '_p'):.2g})"
                for metric in ("coverage", "regret")
                if getattr(r, metric + "_p") < alpha
            ]
            changes.append(f"{r.exploration}: {'; '.join(moved) if moved else 'no significant change'}")
        lines.append(
            f"- **{model}** without a mechanism: coverage {plain['coverage']:.2f}, regret "
            f"{plain['regret']:.2f}, {plain['invalid']:.0%} of its steps invalid (each played as a random "
            f"arm). " + ". ".join(changes) + "."
        )
        if plain["invalid"] > 0.5:
            lines.append(
                f"  Most of {model}'s steps are invalid, so its coverage is mostly the random fallback's, not "
                "its own exploration: a mechanism can show little beyond that here."
            )
    return "\n".join(lines)
