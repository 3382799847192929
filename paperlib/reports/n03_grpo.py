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

from paperlib.claims import DEGENERATE_REWARD, claims_table, source_name
from paperlib.philosophers.training import REWARDS
from paperlib.plots import IDLE_VALID_SHARE
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
    """Where the paper-reward run's seconds per step went, the peak memory of every run of ``log``,
    and which steps the logged KL covers."""
    measured = sorted(set(paper_log.loc[paper_log["kl"].notna(), "step"].astype(int)))  # of every seed's run
    covered = (
        "every step"
        if len(measured) == paper_log["step"].nunique()
        else f"steps {', '.join(map(str, measured))} only (kl_every; empty between)"
        if measured
        else "no step"
    )
    return (
        f"seconds per step: {paper_log['seconds'].mean():.0f} on average ({paper_log['rollout_seconds'].mean():.0f} "
        f"rollout, {paper_log['forward_seconds'].mean():.0f} forward, {paper_log['kl_seconds'].mean():.0f} KL); "
        f"peak memory {log['peak_rss_gb'].max():.1f} GB; the KL to the base model is measured on {covered}"
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


def curve_sentences(log: pd.DataFrame, reported: pd.DataFrame, model: str) -> str:
    """:func:`curve_sentence` for a log of one training seed (or none: the committed data); for several
    (``train_seed``), the seeds' mean curve first (:func:`pooled_over_seeds`: its peak and last
    step, the earlier steps that beat the last, and on how many seeds the last step was below that
    seed's own peak), then each seed's under its heading."""
    from paperlib.reports.seeds import each, heading

    runs = each(log)
    if len(runs) < 2:
        return curve_sentence(log, reported, model)
    c = curve(pooled_over_seeds(log))
    below = sum(curve(run)["last"] < curve(run)["peak"] for run in runs.values())
    earlier = ", ".join(map(str, c["earlier_better"])) or "none"
    lines = [
        f"**{heading('pooled', len(runs))}.** The mean training reward over the {len(runs)} seeds' episodes peaked "
        f"at step {c['peak_step']} ({c['peak']:.3f}); the last step scored {c['last']:.3f}; earlier steps with a "
        f"higher mean: {earlier}. The last step was below its own seed's peak in {below} of {len(runs)} seeds."
    ]
    lines += [f"**{heading(seed)}.** {curve_sentence(run, reported, model)}" for seed, run in runs.items()]
    return "\n\n".join(lines)


def behaviour_sentence(log: pd.DataFrame) -> str:
    """How the play behind a run's training reward changed from its first step to its last: the
    valid-call rate, meals and deadlocks, and whether the last step sits at the paper reward's
    degenerate maximum (1.0 with no meal: notebook 01's ``no_action``)."""
    run = log.sort_values("step")
    first, last = run.iloc[0], run.iloc[-1]
    degenerate = last["train_reward"] >= DEGENERATE_REWARD and last["meals"] == 0
    if last["valid_share_mean"] >= IDLE_VALID_SHARE:
        how = "without a meal"
    elif last["invalid_action_rate"] >= 0.5:
        how = "with no valid action: the rules refuse most of the actions it calls"
    else:
        how = "with no valid action: it calls few"
    return (
        f"From step {int(first['step'])} to step {int(last['step'])} the share of completions holding a tool call "
        f"went {first['valid_call_rate']:.2f} → {last['valid_call_rate']:.2f}, the share of decisions with a valid "
        f"action {first['valid_share_mean']:.2f} → {last['valid_share_mean']:.2f}, meals per episode "
        f"{first['meals']:.2f} → {last['meals']:.2f} and the deadlock rate {first['deadlock_rate']:.2f} → "
        f"{last['deadlock_rate']:.2f}"
        + (
            ": at the last step the training reward is the degenerate maximum of the paper's reward (1.0 with no "
            f"meal, notebook 01), reached {how}."
            if degenerate
            else "."
        )
    )


def pooled_over_seeds(log: pd.DataFrame) -> pd.DataFrame:
    """A training log of several training seeds (``train_seed``) as one curve: per step the
    episodes of every seed pooled (their count summed, the mean reward and meals weighted by it,
    the reward's standard deviation that of all the episodes together); ``log`` itself where it
    holds one seed or no ``train_seed``."""
    if "train_seed" not in log or log["train_seed"].nunique() < 2:
        return log
    std = f"{REWARDS[log['reward'].iloc[0]]}_std"
    rows = []
    for step, seeds in log.groupby("step", sort=True):
        n = seeds["episodes"].astype(float)
        mean = float((seeds["train_reward"] * n).sum() / n.sum())
        spread = ((n - 1) * seeds[std] ** 2 + n * (seeds["train_reward"] - mean) ** 2).sum() / (n.sum() - 1)
        rows.append(
            {
                "step": step,
                "reward": seeds["reward"].iloc[0],
                "train_reward": mean,
                std: math.sqrt(spread),
                "episodes": int(n.sum()),
                "meals": float((seeds["meals"] * n).sum() / n.sum()),
            }
        )
    return pd.DataFrame(rows)


def _decline(log: pd.DataFrame) -> float:
    """One run's A14 number: the last step's training reward minus the highest of the earlier steps'."""
    by_step = log.sort_values("step")["train_reward"]
    return float(by_step.iloc[-1] - by_step.iloc[:-1].max()) if len(by_step) > 1 else math.nan


def curve_claims_table(log: pd.DataFrame, source, profile: str, model: str) -> pd.DataFrame:
    """Notebook 03's run under the paper's reward in the claims schema: A14 (the training reward
    declines after its peak: the last step's episodes against those of the best earlier step,
    rule ``lower``, Welch's t from the two steps' means and standard deviations) and A15 (several
    earlier steps beat the saved last one; ours: at least two **[ours]**, an exact count, rule ``above``), as
    :func:`curve_sentence` reads them, on the mean curve where the log holds several training
    seeds (:func:`pooled_over_seeds`), with each seed's own decline beside it (A14's ``seed_low``,
    ``seed_high``: a decline counts only where every seed's curve falls, ``claims.seeds_agree``).
    Steps are ours, from 1. Both are gated on the run not
    sitting at the paper reward's degenerate maximum (``claims.NOT_DEGENERATE``: the share of
    its steps with a mean reward of 1.0 and no meal): a curve that has stopped acting says
    nothing about what training did to coordination."""
    from scipy.stats import ttest_ind_from_stats

    from paperlib.claims import NOT_DEGENERATE, seed_range
    from paperlib.stats import seeds_in_words

    seeds = log["train_seed"].nunique() if "train_seed" in log else 1
    declines = {seed: _decline(rows) for seed, rows in log.groupby("train_seed")} if seeds > 1 else {}
    log = pooled_over_seeds(log)
    c = curve(log)
    run = log.sort_values("step").set_index("step")
    std = run[f"{REWARDS[run['reward'].iloc[0]]}_std"]
    last = c["last_step"]
    earlier = run["train_reward"].drop(last)
    peak = int(earlier.idxmax()) if len(earlier) else last  # the best step before the last
    p = math.nan
    if peak != last and (std[peak] > 0 or std[last] > 0):
        p = float(
            ttest_ind_from_stats(
                c["last"],
                std[last],
                run["episodes"][last],
                run["train_reward"][peak],
                std[peak],
                run["episodes"][peak],
                equal_var=False,
            ).pvalue
        )
    degenerate = float(((run["train_reward"] >= DEGENERATE_REWARD) & (run["meals"] == 0)).mean())
    gate = NOT_DEGENERATE.check(degenerate, "share of steps at 1.0 with no meal")
    claims = pd.DataFrame(
        [
            {
                "reported": "A14",
                "what": "training reward of the last step minus the highest of the earlier steps",
                "model": model,
                "ours": c["last"] - run["train_reward"][peak],
                "effect_if": "below 0: a decline after the peak (Welch, the two steps' episodes)",
                "rule": "lower",
                "test": f"welch, {int(run['episodes'][last])} and {int(run['episodes'][peak])} episodes"
                if p == p
                else "",
                "p": p,
                **seed_range(declines),
                "gate": gate,
                "note": f"the highest earlier step {peak} (counted from 1) {run['train_reward'][peak]:.3f}, "
                f"last step {last} {c['last']:.3f}"
                + (f"; the mean curve of {seeds} training seeds, {seeds_in_words(declines)}" if seeds > 1 else ""),
            },
            {
                "reported": "A15",
                "what": "earlier steps with a higher training reward than the saved last step",
                "model": model,
                "ours": len(c["earlier_better"]),
                "effect_if": "at least 2 (the paper: several), an exact count",
                "rule": "above",
                "reference": 1.5,
                "gate": gate,
                "note": "steps " + (", ".join(map(str, c["earlier_better"])) or "none"),
            },
        ]
    )
    return claims_table(claims.assign(source=source_name(source)), "03_grpo_training", profile)
