"""Notebook 01 (the environment and paper A's reward): what it says about the scripted
policies' table (``philosophers.analysis.summarise`` by policy and N), the degenerate maximum
of paper A's reward: the claim A18 in the claims schema and the sentence under the table."""

from __future__ import annotations

import pandas as pd

from paperlib.claims import claims_table, source_name


def degenerate_claims_table(
    summary: pd.DataFrame, source, profile: str, notebook: str = "01_environment_and_reward"
) -> pd.DataFrame:
    """Paper A's degenerate maximum (A18) in the claims schema: the mean reward of the scripted
    ``no_action`` policy (no action, no meal) from ``summarise``'s table, at every N: the
    paper's 1.0 against our lowest cell (rule ``value``; the policy is scripted and its every
    episode scores the same, so the number is exact, and no gate applies)."""
    rows = summary[summary["policy"] == "no_action"].sort_values("n")
    if rows.empty:
        raise ValueError("the summary has no no_action rows")
    cells = ", ".join(
        f"N = {n}: {r:.3f} over {e} episodes" for n, r, e in zip(rows["n"], rows["reward"], rows["episodes"])
    )
    claims = pd.DataFrame(
        [
            {
                "reported": "A18",
                "what": "mean reward of the scripted no_action policy (no action, no meal)",
                "model": "policy:no_action",
                "ours": float(rows["reward"].min()),
                "effect_if": "1.0 at every N (the reward's maximum): our lowest cell, exact, is 1.0",
                "rule": "value",
                "reference": 1.0,
                "note": f"the lowest over N; {cells}",
                "source": source_name(source),
            }
        ]
    )
    return claims_table(claims, notebook, profile)


def degenerate_sentence(summary: pd.DataFrame) -> str:
    """Where the scripted ``no_action`` policy ranks under the paper's reward and the shaped one,
    against the best policy that eats, per N, from ``summarise``'s table (by policy and N)."""
    return (
        f"**What this shows.** `no_action` (no action, no meal) under the paper's reward: "
        f"{_idle_rank(summary, 'reward')}. Under the shaped reward: {_idle_rank(summary, 'reward_shaped')}. "
        "The paper reports 1.0 for such an episode (A18)."
    )


def _idle_rank(summary: pd.DataFrame, column: str) -> str:
    cells = []
    for n, cell in summary.groupby("n", sort=True):
        idle = cell.loc[cell["policy"] == "no_action", column].iloc[0]
        above = int((cell[column] > idle).sum())
        rank = "the top score" if above == 0 else f"below {above} of the {len(cell) - 1} other policies"
        eaters = cell[cell["meals"] > 0].sort_values(column, ascending=False)
        best = (
            f"the best policy that eats, `{eaters['policy'].iloc[0]}`, {eaters[column].iloc[0]:.3f}"
            if len(eaters)
            else "no policy eats"
        )
        cells.append(f"N = {n}: {idle:.3f}, {rank} ({best})")
    return "; ".join(cells)
