"""What several report modules share: paper B's reported numbers (:func:`paper_numbers`, which
notebooks 11-14 set beside theirs) and the frequency-bias table (:func:`frequency_bias_claims`, per
model the entropy-repetitions correlation and the strategy shares beside the paper's), which
notebook 12 shows and writes as claims and notebook 14 shows before and after RLFT; and, for
notebooks 11-13, the claims one model alone supports (:func:`effects_one_model_shows`)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def paper_numbers() -> pd.DataFrame:
    """Paper B's reported numbers (``data/paper_reported.csv``), indexed by id."""
    from paperlib import paths

    table = pd.read_csv(paths.PAPER_REPORTED)
    return table[table["paper"] == "B"].set_index("id")


def frequency_bias_claims(results: dict[str, pd.DataFrame], paper: pd.DataFrame) -> pd.DataFrame:
    """Per model: the entropy-repetitions correlation and the strategy shares beside the
    paper's Gemma2 2B and 27B (B06-B09, B18), and whether ours shows the small model's
    frequency bias (the paper's 2B: r < 0 and most predictions the most frequent action), with
    the number of cases behind the shares (all, and in the 0-10 repetitions window)."""
    from paperlib.bandits.metrics import WINDOW, entropy_correlation, strategy_shares

    rows = []
    for model, result in results.items():
        r, p = entropy_correlation(result)
        shares = strategy_shares(result)
        first = shares.iloc[0]  # the 0-10 repetitions window
        repetitions = result["repetitions"].to_numpy()
        last = max(int(repetitions.max()) - 1, 0) // WINDOW * WINDOW  # strategy_shares' windows
        first_cases = int((np.minimum(repetitions // WINDOW * WINDOW, last) == 0).sum())
        rows.append(
            {
                "model": model,
                "r": r,
                "p": p,
                "paper r (2B / 27B)": f"{paper.loc['B06', 'value']} / {paper.loc['B08', 'value']}",
                "frequent": shares.loc["all", "frequent"],
                "greedy": shares.loc["all", "greedy"],
                "other": shares.loc["all", "other"],
                "paper frequent (2B / 27B)": f"{paper.loc['B07', 'value']} / {paper.loc['B09', 'value']}",
                "frequent, 0-10 repetitions": first["frequent"],
                "cases": len(result),
                "cases, 0-10 repetitions": first_cases,
                "paper frequent 0-10 (2B)": str(paper.loc["B18", "value"]),
                "shown: r < 0 and frequent > 0.5": bool(r < 0 and shares.loc["all", "frequent"] > 0.5),
            }
        )
    return pd.DataFrame(rows)


def effects_one_model_shows(table: pd.DataFrame) -> str:
    """A Markdown bullet per model whose number supports a claim of the paper's (``verdict``
    ``supports`` in a notebook's claims table) that no other model's number in the table supports,
    with the other models' verdicts on it: where a larger model shows an effect the smaller ones
    do not, or the reverse. One sentence when no model stands alone."""
    supports = table[table["verdict"] == "supports"]
    lines = []
    for model, rows in table.groupby("model", sort=False):
        alone = [
            claim
            for claim in dict.fromkeys(rows["reported"])
            if claim in set(supports.loc[supports["model"] == model, "reported"])
            and claim not in set(supports.loc[supports["model"] != model, "reported"])
        ]
        for claim in alone:
            others = table[(table["reported"] == claim) & (table["model"] != model)]
            verdicts = "; ".join(f"{m}: {v}" for m, v in zip(others["model"], others["verdict"])) or "none"
            lines.append(
                f"- **{model}** shows the paper's effect in {claim}, which no other model here shows "
                f"(the others' verdicts: {verdicts})."
            )
    return "\n".join(lines) or "No model shows a paper's effect here that another model here does not also show."


# an RLFT update's phases (paperlib.training.rlft.loop), as its log names them and in words
UPDATE_PHASES = {
    "rollout": "rollout",
    "reference": "reference log-probabilities",
    "forward_backward": "forward and backward",
}


def update_cost(updates: pd.DataFrame) -> str:
    """An RLFT run's seconds per update and where they went (medians, and the range: an update that
    ran beside other work, or while its process was stopped, logs its wall-clock seconds), its
    decisions per update, and its peak memory with each phase's (where the log has them)."""
    decisions = updates["decisions"]
    per_update = (
        f"{int(decisions.iloc[0])} decisions per update"
        if decisions.nunique() == 1
        else f"{decisions.mean():.0f} decisions per update on average"
    )
    went = ", ".join(f"{updates[f'{k}_seconds'].median():.0f} {words}" for k, words in UPDATE_PHASES.items())
    peaks = ", ".join(
        f"{updates[f'{k}_peak_gb'].max():.1f} {words}"
        for k, words in UPDATE_PHASES.items()
        if updates.get(f"{k}_peak_gb", pd.Series(dtype=float)).notna().any()
    )
    return (
        f"seconds per update {updates['seconds'].median():.0f} (median, {updates['seconds'].min():,.0f}-"
        f"{updates['seconds'].max():,.0f} over {len(updates)} updates; medians: {went}); {per_update}; peak memory "
        f"{updates['peak_rss_gb'].max():.1f} GB" + (f" (each phase's peak, GB: {peaks})" if peaks else "")
    )
