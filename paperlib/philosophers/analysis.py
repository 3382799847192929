"""Per-cell summaries of philosopher episodes: the rows of paper A's tables."""

from __future__ import annotations

import pandas as pd

from paperlib.stats import bootstrap_mean_ci, wilson_ci


def summarise(episodes: pd.DataFrame, by=("model", "n"), rewards=("reward", "reward_shaped")) -> pd.DataFrame:
    """Mean reward with a 95% interval (a seeded bootstrap: within the reward's range), deadlock
    rate with a Wilson interval, meals.

    One row per cell of ``by``; ``rewards`` names the reward columns to summarise.
    """
    rows = []
    for key, cell in episodes.groupby(list(by), sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row["episodes"] = len(cell)
        for column in rewards:
            mean, low, high = bootstrap_mean_ci(cell[column])
            row.update({column: mean, f"{column}_low": low, f"{column}_high": high})
        rate, low, high = wilson_ci(int(cell["deadlock"].sum()), len(cell))
        row.update({"deadlock_rate": rate, "deadlock_low": low, "deadlock_high": high})
        row["meals"] = cell["meals_total"].mean()
        row["zero_meal_share"] = (cell["meals_total"] == 0).mean()
        rows.append(row)
    return pd.DataFrame(rows)


def call_rates(steps: pd.DataFrame, by=("model", "prompt_version")) -> pd.DataFrame:
    """Share of free-mode steps whose completion holds a parseable call of one of the six
    tools (action not "none"), with a Wilson interval, per cell of ``by``. Constrained
    steps always name a tool and are left out; an endpoint error counts as no call."""
    free = steps[steps["decision_mode"] == "free"]
    rows = []
    for key, cell in free.groupby(list(by), sort=False):
        calls = int((cell["action"] != "none").sum())
        rate, low, high = wilson_ci(calls, len(cell))
        rows.append(
            {
                **dict(zip(by, key)),
                "steps": len(cell),
                "calls": calls,
                "call_rate": rate,
                "call_low": low,
                "call_high": high,
            }
        )
    return pd.DataFrame(rows)
