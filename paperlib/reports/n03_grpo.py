"""What notebook 03 says about its GRPO runs: the positive control's held-out test, the training
curve under the paper's reward beside paper A's (its peak, its last step, the earlier steps that
beat the last), how the play behind it changed, its cost, and the claims rows A14 and A15.

- :func:`curve`: a training log's peak step and its last step, and how many earlier steps
  beat the last (paper A: the reward peaked at step 9; the saved step 15 was worse than
  several earlier steps).
- :func:`control_sentence`, :func:`curve_sentence`, :func:`behaviour_sentence`: what the
  tables support, written from their numbers; :func:`curve_claims_table`: the curve in the
  claims schema (``paperlib.claims``).
"""

from __future__ import annotations

import math

import pandas as pd

from paperlib.claims import claims_table, source_name
from paperlib.philosophers.training import REWARDS
from paperlib.reports.before_after import hedges, learned, verdict, which_test

# the training log's columns notebook 03 shows
LOG_COLUMNS = [
    "step",
    "train_reward",
    "reward_std",
    "deadlock_rate",
    "meals",
    "valid_call_rate",
    "invalid_action_rate",
    "kl",
    "loss",
    "seconds",
    "rollout_seconds",
    "forward_seconds",
    "kl_seconds",
]


def curve(log: pd.DataFrame) -> dict:
    """The peak and the last step of a run's training reward (the earliest step among equal
    peaks), the earlier steps whose reward beats the last step's, and the standard error of
    the peak-minus-last difference from each step's episodes (their std over sqrt(count))."""
    run = log.sort_values("step").set_index("step")
    by_step = run["train_reward"]
    std = run[f"{REWARDS[run['reward'].iloc[0]]}_std"]
    peak_step, last_step = int(by_step.idxmax()), int(by_step.index[-1])
    better = [int(k) for k, v in by_step.iloc[:-1].items() if v > by_step.iloc[-1]]
    se = math.sqrt(
        (std[peak_step] ** 2 / run["episodes"][peak_step]) + (std[last_step] ** 2 / run["episodes"][last_step])
    )
    return {
        "peak_step": peak_step,
        "peak": float(by_step.max()),
        "last_step": last_step,
        "last": float(by_step.iloc[-1]),
        "earlier_better": better,
        "drop_se": se,
    }


def control_sentence(table: pd.DataFrame, column: str = "valid share") -> str:
    """The positive control's result, from ``philosophers.training.compare_by_n``'s table (one row per
    adapter x N)."""
    parts = [
        f"at N = {r.n} the trained adapter (step {r.step}) has a {column} of {r.mean:.2f} "
        f"[{r.ci_low:.2f}, {r.ci_high:.2f}] against the base model's {r.base_mean:.2f} "
        f"[{r.base_ci_low:.2f}, {r.base_ci_high:.2f}] on {r.episodes} held-out episodes "
        f"({which_test(r)}, {hedges(r)}): {verdict(r._asdict())}"
        for r in table.itertuples()
    ]
    reading = (
        "The trainer learns a learnable reward within this budget, so a null result under the paper's reward "
        "below is not the trainer's failure to learn."
        if learned(table)
        else "The trainer did not raise this learnable reward significantly within this budget: a null result "
        "under the paper's reward below would say nothing about GRPO."
    )
    return "Positive control: " + "; ".join(parts) + ". " + reading


def cost_sentence(paper_log: pd.DataFrame, log: pd.DataFrame) -> str:
    """Where the paper-reward run's seconds per step went, and the peak memory of every run of ``log``."""
    return (
        f"seconds per step: {paper_log['seconds'].mean():.0f} on average ({paper_log['rollout_seconds'].mean():.0f} "
        f"rollout, {paper_log['forward_seconds'].mean():.0f} forward, {paper_log['kl_seconds'].mean():.0f} KL); "
        f"peak memory {log['peak_rss_gb'].max():.1f} GB"
    )


def curve_sentence(log: pd.DataFrame, reported: pd.DataFrame, model: str) -> str:
    """The training curve under the paper's reward beside paper A's (rows A14, A15: steps
    counted from 0, so its peak at step 9 and saved step 15 are our steps 10 and 16)."""
    c = curve(log)
    paper = reported.set_index("id")["value"]
    earlier = (
        f"{len(c['earlier_better'])} earlier step{'s' if len(c['earlier_better']) != 1 else ''} "
        f"({', '.join(map(str, c['earlier_better']))}) had a higher training reward than the last"
        if c["earlier_better"]
        else "no earlier step had a higher training reward than the last"
    )
    return (
        f"Paper A (Qwen3-8B and 14B): the training reward peaked at step {paper['A14']} and the saved step "
        f"{paper['A15']} (the last, counting from 0) was worse than several earlier steps. Ours ({model}, "
        f"{c['last_step']} steps counted from 1): the training reward peaked at step {c['peak_step']} "
        f"({c['peak']:.3f}) and the last step, which the paper's rule keeps, scored {c['last']:.3f}; {earlier}."
        + (
            f" The drop from the peak, {c['peak'] - c['last']:.3f}, is {(c['peak'] - c['last']) / c['drop_se']:.1f} "
            f"standard errors of the two steps' means."
            if c["peak_step"] != c["last_step"] and c["drop_se"] > 0
            else ""
        )
        + " "
        + behaviour_sentence(log)
    )


def behaviour_sentence(log: pd.DataFrame) -> str:
    """How the play behind a run's training reward changed from its first step to its last: the
    valid-call rate, meals and deadlocks, and whether the last step sits at the paper reward's
    degenerate maximum (1.0 with no meal: notebook 01's ``no_action``)."""
    run = log.sort_values("step")
    first, last = run.iloc[0], run.iloc[-1]
    degenerate = last["train_reward"] >= 0.995 and last["meals"] == 0
    return (
        f"From step {int(first['step'])} to step {int(last['step'])} the share of completions holding a tool call "
        f"went {first['valid_call_rate']:.2f} → {last['valid_call_rate']:.2f}, meals per episode "
        f"{first['meals']:.2f} → {last['meals']:.2f} and the deadlock rate {first['deadlock_rate']:.2f} → "
        f"{last['deadlock_rate']:.2f}"
        + (
            ": at the last step the training reward is the degenerate maximum of the paper's reward (1.0 with no "
            "meal, notebook 01), reached by no longer acting."
            if degenerate
            else "."
        )
    )


def curve_claims_table(log: pd.DataFrame, source, profile: str, model: str) -> pd.DataFrame:
    """Notebook 03's run under the paper's reward in the claims schema: A14 (the training reward
    peaks before the last step and declines after: a plateau at the peak is no decline) and A15 (several earlier steps beat the saved last one; ours:
    at least two **[ours]**), as :func:`curve_sentence` reads them. Steps are ours, from 1."""
    c = curve(log)
    claims = pd.DataFrame(
        [
            {
                "reported": "A14",
                "what": "step of the highest training reward (ours counted from 1; the paper's from 0)",
                "model": model,
                "ours": c["peak_step"],
                "effect_if": "a peak before the last step, above it (a decline)",
                "shown": c["peak_step"] < c["last_step"] and c["peak"] > c["last"],
                "note": f"peak {c['peak']:.3f}, last step {c['last_step']} {c['last']:.3f}",
            },
            {
                "reported": "A15",
                "what": "earlier steps with a higher training reward than the saved last step",
                "model": model,
                "ours": len(c["earlier_better"]),
                "effect_if": "at least 2 (the paper: several)",
                "shown": len(c["earlier_better"]) >= 2,
                "note": "steps " + (", ".join(map(str, c["earlier_better"])) or "none"),
            },
        ]
    )
    return claims_table(claims.assign(source=source_name(source)), "03_grpo_training", profile)
