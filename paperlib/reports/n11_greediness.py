"""Notebook 11 (paper B's greediness): what it says about the runs of
``bandits.experiments.greediness_runs`` (summarised by ``experiments.summarise``): the coverage
claims B01-B05 per model beside the paper's, with the test of the paper's effect
(:func:`greediness_claims`, in the claims schema by :func:`greediness_claims_table`); the arms each
LLM run chose itself (:func:`own_choices`); and its closing sentences, on the baselines
(:func:`baseline_sentence`), the claims per model (:func:`claims_sentences`) and every LLM run
on the main bandit (:func:`llm_run_sentences`)."""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pandas as pd

from paperlib.claims import claims_table, source_name
from paperlib.stats import BOOTSTRAP_SEED, bootstrap_mean_ci


def stagnation_step(coverage_by_step: pd.Series, share: float = 0.9) -> int:
    """The first step at which mean coverage reaches ``share`` of its final value **[ours]**:
    the paper says coverage "stagnates after about 10 steps" without a rule."""
    final = coverage_by_step.iloc[-1]
    return int(coverage_by_step.index[coverage_by_step.to_numpy() >= share * final][0])


def greediness_claims(summary: pd.DataFrame, steps: pd.DataFrame, settings, paper: pd.DataFrame) -> pd.DataFrame:
    """Paper B's coverage claims (B01-B05) beside ours, per model of ``bandit_models`` and per
    other model the figures show, in the decision mode the figures show it in (``decision``),
    with the test that says whether ours shows the paper's effect. UCB's coverage on the
    same bandits is the reference: it tries every arm by step k. Without CoT the paper's
    effect is coverage below the CoT run's, or below UCB's for a model with no CoT run; the
    stagnation step (B05) is read on the CoT curve, or on the no-CoT one for such a model."""
    k, low = settings.bandit_main_arms, summary["noise"] == "low"
    llm = summary[(summary["agent"] == "llm") & summary["in_figure"] & low]
    ucb = summary[(summary["agent"] == "ucb") & low].set_index("arms")["coverage"]
    ucb_k, ucb_wide = ucb.get(k, float("nan")), ucb.get(20, float("nan"))
    decisions = dict(zip(llm["model"], llm["decision"]))

    def coverage(model, arms, cot):
        row = llm[(llm["model"] == model) & (llm["arms"] == arms) & (llm["cot"] == cot)]
        return float(row["coverage"].iloc[0]) if len(row) else float("nan")

    rows = []
    for model in dict.fromkeys([*settings.bandit_models, *decisions]):
        cot, no_cot, wide = coverage(model, k, True), coverage(model, k, False), coverage(model, 20, True)
        if wide != wide:  # no CoT run at 20 arms: the no-CoT one
            wide = coverage(model, 20, False)
        has_cot = cot == cot  # NaN: no CoT run
        curve_cot = has_cot or no_cot != no_cot  # the CoT curve, or the no-CoT one for a model without CoT runs
        curve = (
            steps[
                (steps["model"] == model)
                & (steps["arms"] == k)
                & (steps["noise"] == "low")
                & (steps["cot"] == curve_cot)
                & steps["in_figure"]
            ]
            .groupby("turn")["coverage"]
            .mean()
        )
        stagnation = stagnation_step(curve) if len(curve) else float("nan")
        below, reference = (
            (no_cot < cot, "below the CoT run") if has_cot else (no_cot < ucb_k, f"below UCB's {ucb_k:.2f}")
        )
        decision = decisions.get(model, settings.bandit_figure_decision)
        rows += [
            (
                model,
                decision,
                "B01/B02",
                f"coverage after 50 steps, {k} arms, CoT",
                "0.40 (2B), 0.65 (9B, 27B)",
                cot,
                f"below UCB's {ucb_k:.2f}",
                cot < ucb_k,
            ),
            (
                model,
                decision,
                "B03",
                f"coverage without CoT, {k} arms",
                str(paper.loc["B03", "value"]),
                no_cot,
                reference,
                below,
            ),
            (
                model,
                decision,
                "B04",
                "coverage, 20 arms",
                str(paper.loc["B04", "value"]),
                wide,
                f"below UCB's {ucb_wide:.2f}",
                wide < ucb_wide,
            ),
            (
                model,
                decision,
                "B05",
                f"step by which coverage reaches 90% of its final value, {'CoT' if curve_cot else 'no CoT'} [ours]",
                str(paper.loc["B05", "value"]),
                stagnation,
                "at most 20 of 50 steps",
                stagnation <= 20,
            ),
        ]
    claims = pd.DataFrame(
        rows, columns=["model", "decision", "id", "claim", "paper", "ours", "the effect, if", "shown"]
    )
    claims["shown"] = claims["shown"].astype("boolean").mask(claims["ours"].isna())  # <NA>: not run on this profile
    return claims


def claims_sentences(claims: pd.DataFrame) -> str:
    """A Markdown bullet per model of :func:`greediness_claims`: the claims whose effect ours
    shows, those whose effect it does not show, and those with no run on this profile."""
    lines = []
    for (model, decision), rows in claims.groupby(["model", "decision"], sort=False):
        shown = rows["shown"]
        groups = (
            ("shown in", shown.fillna(False).astype(bool)),
            ("not shown in", (~shown).fillna(False).astype(bool)),
            ("not run on this profile for", shown.isna()),
        )
        parts = [f"{what} {', '.join(rows.loc[mask, 'id'])}" for what, mask in groups if mask.any()]
        lines.append(f"- **{model} ({decision})**: the paper's effect " + "; ".join(parts) + ".")
    return "\n".join(lines)


def own_choices(steps: pd.DataFrame) -> pd.DataFrame:
    """Per LLM run (step rows from ``experiments.with_runs``), means over its episodes of the arms the
    model chose itself, its valid actions (an invalid step plays the runner's random arm):
    ``arms_chosen``, how many distinct arms, and ``top_share``, the share of them that went
    to the arm it chose most. A run with no valid action has no row."""
    valid = steps[(steps["agent"] == "llm") & steps["valid"]]
    per_episode = valid.groupby(["run", "episode"])["action"].agg(
        arms_chosen="nunique", top_share=lambda actions: actions.value_counts().iloc[0] / len(actions)
    )
    return per_episode.groupby("run").mean().reset_index()


def baseline_sentence(summary: pd.DataFrame, steps: pd.DataFrame, arms: int) -> str:
    """What the baselines do on the ``arms``-armed bandit at low noise, the reference every LLM
    run is read against: UCB's coverage by step ``arms`` (or the last step, if sooner), and
    the final coverage and regret of random, greedy and UCB."""
    low = summary[(summary["agent"] != "llm") & (summary["arms"] == arms) & (summary["noise"] == "low")]
    final = low.set_index("agent")
    ucb_steps = steps[(steps["agent"] == "ucb") & (steps["arms"] == arms) & (steps["noise"] == "low")]
    horizon = int(ucb_steps["turn"].max())
    early = ucb_steps.loc[ucb_steps["turn"] == min(arms, horizon), "coverage"].mean()

    def described(agent):
        return f"{agent} {final.loc[agent, 'coverage']:.0%} (regret {final.loc[agent, 'regret']:.1f})"

    return (
        f"On the {arms}-armed bandit at low noise UCB had tried {early:.0%} of the arms by step {min(arms, horizon)}; "
        f"after {horizon} steps the baselines covered: {', '.join(described(a) for a in ('ucb', 'random', 'greedy'))}."
    )


def llm_run_sentences(summary: pd.DataFrame, choices: pd.DataFrame, arms: int, horizon: int) -> str:
    """A Markdown bullet per LLM run on the ``arms``-armed bandit at low noise: how often a
    free run wrote a valid ACTION=, its coverage after ``horizon`` steps beside UCB's and
    random's, and the arms it chose itself (:func:`own_choices`): how many, and how much of its
    play went to one of them, the commitment paper B calls greedy."""
    low = summary[(summary["arms"] == arms) & (summary["noise"] == "low")]
    reference = low[low["agent"] != "llm"].set_index("agent")["coverage"]
    runs = low[low["agent"] == "llm"].merge(choices, on="run", how="left")
    lines = []
    for row in runs.itertuples():
        valid = ""
        if row.decision == "free":
            fallback = "every step" if row.valid == 0 else "the others" if row.valid < 1 else ""
            valid = f"a valid `ACTION=` in {row.valid:.0%} of its steps" + (
                f" ({fallback} played a random arm); " if fallback else "; "
            )
        chosen = (
            "it never chose an arm itself."
            if row.arms_chosen != row.arms_chosen
            else f"the arms it chose itself: {row.arms_chosen:.1f} of {arms} per episode on average, "
            f"{row.top_share:.0%} of its choices on the one it chose most."
        )
        lines.append(
            f"- **{row.model} {'CoT' if row.cot else 'no CoT'} ({row.decision})**: {valid}coverage after "
            f"{horizon} steps {row.coverage:.2f} (UCB {reference['ucb']:.2f}, random {reference['random']:.2f}); "
            f"{chosen}"
        )
    return "\n".join(lines)


def greediness_claims_table(
    greediness: pd.DataFrame, source: str | os.PathLike, profile: str, steps: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Notebook 11's table (:func:`greediness_claims`) in the schema: one claim per row, the
    model with its decision mode. Each is a number of the paper's against ours (rule
    ``value``): the coverage after the horizon (B01/B02: the paper's range over model sizes,
    0.40 to 0.65; B03, B04) against our 95% interval over instances (seeded bootstrap, within
    [0, 1]), and the stagnation step (B05) against the bootstrap interval of the step our mean
    curve reaches 90% of its final value. With ``steps`` (``experiments.with_runs``'s, the runs'
    steps) the intervals and the gate are computed: a run is tested only where the model
    chose its own arms (``claims.OWN_DECISIONS``, the share of its steps with a valid
    ``ACTION=``; an invalid step plays a random arm). Without them, ours stands alone and is
    not tested. ``source``: the store its runs are in."""
    from paperlib.claims import OWN_DECISIONS, reported_numbers

    paper = reported_numbers()
    main = int(re.search(r"(\d+) arms", greediness["claim"].iloc[0]).group(1)) if len(greediness) else 10
    claims = []
    for row in greediness.to_dict("records"):
        claim = {
            "reported": row["id"],
            "what": row["claim"],
            "model": f"{row['model']} ({row['decision']})",
            "paper_value": row["paper"],
            "ours": row["ours"],
            "effect_if": "the paper's number within our 95% interval",
            "rule": "value",
        }
        if row["id"] == "B01/B02":
            claim.update(
                reference=float(paper.loc["B01", "value"]),
                reference_high=float(paper.loc["B02", "value"]),
                effect_if="our 95% interval meets the paper's range over model sizes",
            )
        else:
            claim["reference"] = float(paper.loc[row["id"], "value"])
        run = _run_steps(steps, row, main) if steps is not None else None
        if run is None or run.empty or row["ours"] != row["ours"]:
            claim.update(ours=math.nan, note="" if row["ours"] != row["ours"] else "no steps given: not tested")
        else:
            claim["gate"] = OWN_DECISIONS.check(float(run["valid"].mean()), "share of steps with a valid ACTION=")
            if row["id"] == "B05":
                claim["ours_low"], claim["ours_high"] = _stagnation_interval(run)
            else:
                final = run[run["turn"] == run["turn"].max()]["coverage"]
                claim["ours"], claim["ours_low"], claim["ours_high"] = bootstrap_mean_ci(final)
            claim["note"] = f"{run['episode'].nunique()} instances"
        claims.append(claim)
    return claims_table(pd.DataFrame(claims).assign(source=source_name(source)), "11_bandit_greediness", profile)


def _run_steps(steps: pd.DataFrame, row: dict, main: int) -> pd.DataFrame:
    """The low-noise steps of the run a row of :func:`greediness_claims` reads (its model, decision
    mode, arms and CoT setting, as that function chose them)."""
    runs = steps[
        (steps["agent"] == "llm")
        & (steps["model"] == row["model"])
        & (steps["decision"] == row["decision"])
        & (steps["noise"] == "low")
        & steps["in_figure"]
    ]
    if row["id"] == "B04":
        wide = runs[runs["arms"] == 20]
        return wide[wide["cot"]] if wide["cot"].any() else wide[~wide["cot"]]
    cot = {"B01/B02": True, "B03": False}.get(row["id"], "no CoT" not in row["claim"])
    return runs[(runs["arms"] == main) & (runs["cot"] == cot)]


def _stagnation_interval(run: pd.DataFrame, resamples: int = 1000) -> tuple[float, float]:
    """A seeded bootstrap interval (95%, over instances) of :func:`stagnation_step` on a run's mean curve."""
    curves = run.pivot_table(index="episode", columns="turn", values="coverage")
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(curves), (resamples, len(curves)))
    found = [stagnation_step(pd.Series(curves.to_numpy()[p].mean(axis=0), index=curves.columns)) for p in picks]
    low, high = np.quantile(found, [0.025, 0.975])
    return float(low), float(high)
