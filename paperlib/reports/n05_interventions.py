"""What notebook 05 says: paper A's three prescriptions, run **[ours]** (the paper proposes them and
runs none): the runs and what each changes, how often a step's groups gave GRPO a signal, the
training curves, each kept adapter against the base model and the recipe under both rewards,
how much of the gap to the best scripted policy it closes, the claims rows and a verdict per
prescription.

The runs (:data:`RUNS`): ``recipe`` (notebook 03's paper-reward run, read with notebook 04's
evaluation rows, never played again) and the profile's ``intervention_runs``
(``paperlib.profiles.INTERVENTIONS``). Every run keeps three adapters
(``paperlib.training.selection``: ``last``, ``best_train``, ``best_val``), so the second
prescription is measured on each; all of them play the base model's evaluation seeds at each N.

A prescription is a contrast (:data:`CONTRASTS`): the adapter that has it against the one that
differs from it in that alone, paired by evaluation seed (several training seeds pooled per
seed, ``paperlib.stats.paired_sides``), at each N, on meals per episode (rule ``higher``) and the
deadlock rate (rule ``no effect``), in the claims schema as our own claims (``claims.OURS``),
Holm-adjusted as the notebook's one family. Its verdict (:func:`prescription_verdict`) reads the
two rows: ``closes the gap`` (meals rise, deadlocks do not), ``no change`` (meals equivalent
within the margin, deadlocks not up), ``worse`` (meals fall or deadlocks rise), ``inconclusive``
(none of these shown; a pooled difference is shown only where every training seed shares its
sign, as in the claims rows), ``cannot test`` (no such run here, a failed gate, or the two sides the
same adapter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperlib.claims import NOT_RUN, OURS, Gate, claims_table, effect, gated, seed_range, seeds_agree, source_name
from paperlib.philosophers.training import REWARDS
from paperlib.stats import ALPHA, holm, paired_sides, per_seed_differences, seeds_in_words, wilson_ci

RUNS = {
    "recipe": "paper A's recipe and reward (notebook 03's run; its adapters' rows are notebook 04's)",
    "shaped": "paper A's first prescription: the no-deadlock credit only in an episode with a meal",
    "curriculum": "the shaped reward over a curriculum of N, paper A's third prescription",
    "penalty": "the shaped reward and paper B's penalty for each invalid or missing call",
}
# [ours: time] the runs' KL to the base model is not measured: this notebook reads none (beta = 0,
# so it is logged, never trained on), and its forward pass is a quarter of a step where measured
MEASURE_KL = False
BASE = "base"  # run and selection of the base model's rows
SCRIPTED = "scripted"  # run of the scripted policies' rows (their selection: the policy)
SCRIPTED_POLICIES = ("waiter", "resource_hierarchy")  # the scripted policies that eat
METRICS = {"meals_total": "meals per episode", "deadlock": "deadlock rate"}
OUTCOMES = ("closes the gap", "no change", "worse", "inconclusive", "cannot test")
EVERY_RUN = "every run"  # a contrast side that pools the runs, paired by run and evaluation seed
OWN_CLAIM = "our own claim, no paper number"  # what every claims row's note says first

LEARNING_SIGNAL = Gate(
    "learning signal",
    0.5,
    True,
    "[ours]: the share of a run's steps in which some group's episodes scored differently. GRPO's "
    "advantage is relative within a group, and a step without signal leaves the adapter as it was "
    "(skip_no_signal): below half, the adapter took fewer than half of its updates, and a comparison "
    "says more about the signal than about the prescription (issue 31: say so rather than tune it away).",
)


@dataclass(frozen=True)
class Contrast:
    """A prescription as a treatment against its control: (run, selection) each, :data:`EVERY_RUN`
    for a side that pools the trained runs, :data:`BASE` for the base model."""

    name: str
    run: str
    selection: str
    control_run: str
    control_selection: str

    def sides(self) -> tuple[str, str]:
        return _side(self.run, self.selection), _side(self.control_run, self.control_selection)


CONTRASTS = (
    Contrast("reward shaping", "shaped", "last", "recipe", "last"),
    Contrast("checkpoint discipline", EVERY_RUN, "best_val", EVERY_RUN, "last"),
    Contrast("curriculum", "curriculum", "last", "shaped", "last"),
    Contrast("paper B's penalty", "penalty", "last", "shaped", "last"),
    Contrast("the three together", "curriculum", "best_val", BASE, BASE),
)


def _side(run: str, selection: str) -> str:
    return "the base model" if run == BASE else f"{run} ({selection})"


# -- what the notebook runs ----------------------------------------------------------------------
def runs_table(profile) -> pd.DataFrame:
    """The runs of ``profile`` (a ``paperlib.profiles.Profile``): what each changes from the recipe and why."""
    changes = {"recipe": "nothing: the profile's grpo_recipe", **profile.intervention_runs}
    return pd.DataFrame(
        [
            {
                "run": run,
                "changes": change if isinstance(change, str) else ", ".join(f"{k} = {v}" for k, v in change.items()),
                "what it tests": RUNS[run],
            }
            for run, change in changes.items()
        ]
    )


def settings_reasons(profile, run: str) -> dict[str, str]:
    """Why ``run``'s settings differ from the profile's recipe where this notebook sets them (a
    settings table's ``notebook`` reasons): the run's own changes, its validation episodes and the
    KL it does not measure."""
    return {
        **{name: f"the {run} run, {RUNS[run]}" for name in profile.intervention_runs.get(run, {})},
        "val_episodes": f"intervention_val_episodes, this notebook's validation budget per step ({profile.name})",
        "measure_kl": "this notebook reads no KL (beta = 0: it is logged, never trained on), so its pass is skipped",
    }


def evaluation_settings(profile) -> pd.DataFrame:
    """The seeds, validation and evaluation sizes of ``profile``."""
    return pd.DataFrame(
        {
            "setting": [
                "training seeds per run",
                "validation episodes per step (N = the recipe's)",
                "evaluation N",
                "evaluation episodes per cell",
                "evaluation seeds",
                "kept adapters per run",
                "scripted references",
            ],
            "value": [
                profile.intervention_seeds,
                profile.intervention_val_episodes,
                profile.intervention_eval_ns,
                profile.intervention_eval_episodes,
                f"0 to {profile.intervention_eval_episodes - 1}: notebook 04's first, the same for every adapter",
                "last, best_train, best_val",
                ", ".join(SCRIPTED_POLICIES) + " on the same seeds (the best that eats is the gap's far end)",
            ],
        }
    )


def check_reuse(profile) -> None:
    """Refuse, in one line, a profile whose notebook 05 reads rows notebook 04 does not play."""
    wanted = {
        "intervention_seeds": (set(profile.intervention_seeds), set(profile.grpo_seeds), "grpo_seeds"),
        "intervention_eval_ns": (set(profile.intervention_eval_ns), set(profile.grpo_eval_ns), "grpo_eval_ns"),
    }
    for name, (ours, theirs, knob) in wanted.items():
        if not ours <= theirs:
            raise ValueError(f"{name} must lie within {knob} (notebook 04's rows are reused)")
    if profile.intervention_eval_episodes > profile.grpo_eval_episodes:
        raise ValueError("intervention_eval_episodes must be at most grpo_eval_episodes (notebook 04's rows)")


def reused_rows(episodes: pd.DataFrame, seeds, ns, count: int) -> pd.DataFrame:
    """Notebook 04's evaluation rows that notebook 05 reads rather than plays again: the base model's
    (run :data:`BASE`) and the recipe's kept adapters of training ``seeds`` (run ``recipe``), at
    ``ns`` on the evaluation seeds below ``count``."""
    rows = episodes[episodes["n"].isin(ns) & (episodes["seed"] < count)]
    base = rows[rows["selection"] == BASE].assign(run=BASE)
    return pd.concat([base, rows[rows["train_seed"].isin(seeds)].assign(run="recipe")], ignore_index=True)


# -- the learning signal --------------------------------------------------------------------------
def had_signal(log: pd.DataFrame) -> pd.Series:
    """Per training step, whether some group's episodes scored differently under the run's reward:
    the rollout's ``signal_share`` above 0 where logged, else (the recipe's log, from before it) the
    step's reward varied."""
    varied = pd.Series([row[f"{REWARDS[row['reward']]}_std"] > 0 for _, row in log.iterrows()], index=log.index)
    return log["signal_share"].gt(0).where(log["signal_share"].notna(), varied)


def signal_table(log: pd.DataFrame) -> pd.DataFrame:
    """Per run and training seed: its steps, the share of them with a learning signal
    (:func:`had_signal`), the mean share of groups with one (NaN where not logged), and the
    :data:`LEARNING_SIGNAL` gate."""
    log = log.assign(had_signal=had_signal(log))
    rows = []
    for (run, seed), steps in log.groupby(["run", "train_seed"], sort=False):
        share = float(steps["had_signal"].mean())
        rows.append(
            {
                "run": run,
                "train_seed": seed,
                "steps": len(steps),
                "steps with a signal": share,
                "groups with a signal": float(steps["signal_share"].mean()),
                "gate": LEARNING_SIGNAL.check(share, "steps with a signal") or "passes",
            }
        )
    return pd.DataFrame(rows)


def signal_sentence(table: pd.DataFrame) -> str:
    """Which runs had too little signal to learn, said as their result: a prescription's run gates
    its comparisons (:func:`_gate`); a run that is no prescription's own (the recipe) gates none by itself."""
    shares = table.groupby("run", sort=False)["steps with a signal"].mean()
    said = "; ".join(f"{run} {share:.0%}" for run, share in shares.items())
    starved = [run for run, share in shares.items() if LEARNING_SIGNAL.check(share)]
    sentences = [f"Steps with a learning signal (mean over training seeds): {said}."]
    if not starved:
        return " ".join([*sentences, "Every run had a signal in at least half of its steps."])
    sentences.append(
        f"Too few to learn in {', '.join(starved)}: most of their steps left the adapter as it was, which is their result."
    )
    treated = {contrast.run for contrast in CONTRASTS}
    if gated_runs := [run for run in starved if run in treated]:
        sentences.append(
            f"Of these, {', '.join(gated_runs)} carry prescriptions that cannot be tested: their comparisons below say so."
        )
    if controls := [run for run in starved if run not in treated]:
        sentences.append(
            f"Of these, {', '.join(controls)} is no prescription's own run: the prescriptions below are measured "
            "against it, and it gates no comparison by itself (checkpoint discipline, which pools every run, reads "
            "the runs' mean share)."
        )
    return " ".join(sentences)


# -- the evaluation -------------------------------------------------------------------------------
def summary_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per run, selection and N: episodes, the kept steps, meals per episode and the deadlock rate
    with 95% intervals (seeded bootstrap; Wilson), both rewards' means and the share of decisions
    holding a call."""
    from paperlib.stats import bootstrap_mean_ci

    rows = []
    for (run, selection, n), cell in episodes.groupby(["run", "selection", "n"], sort=False):
        meals, meals_low, meals_high = bootstrap_mean_ci(cell["meals_total"])
        deadlock, dead_low, dead_high = wilson_ci(int(cell["deadlock"].sum()), len(cell))
        steps = sorted({int(s) for s in cell["step"].dropna()})
        rows.append(
            {
                "run": run,
                "selection": selection,
                "n": n,
                "episodes": len(cell),
                "steps": ", ".join(map(str, steps)),
                "meals": meals,
                "meals_low": meals_low,
                "meals_high": meals_high,
                "deadlock_rate": deadlock,
                "deadlock_low": dead_low,
                "deadlock_high": dead_high,
                "reward": cell["reward"].mean(),
                "reward_shaped": cell["reward_shaped"].mean(),
                "calls": (cell["valid_call_rate"] * cell["decisions"]).sum() / cell["decisions"].sum(),
            }
        )
    return pd.DataFrame(rows)


def _rows(episodes: pd.DataFrame, run: str, selection: str) -> pd.DataFrame:
    if run == EVERY_RUN:
        trained = ~episodes["run"].isin([BASE, SCRIPTED])
        return episodes[trained & (episodes["selection"] == selection)]
    return episodes[(episodes["run"] == run) & (episodes["selection"] == selection)]


def _sides(episodes: pd.DataFrame, contrast: Contrast, n: int) -> tuple[pd.DataFrame, list[str]]:
    """The contrast's rows at ``n`` with ``side`` ("treatment", "control"), and the keys they pair
    by: the evaluation seed (and the run where a side pools the runs)."""
    keys = ["run", "seed"] if contrast.control_run == contrast.run == EVERY_RUN else ["seed"]
    cell = episodes[episodes["n"] == n]
    frame = pd.concat(
        [
            _rows(cell, contrast.run, contrast.selection).assign(side="treatment"),
            _rows(cell, contrast.control_run, contrast.control_selection).assign(side="control"),
        ]
    )
    return frame, keys


def paired(episodes: pd.DataFrame, value: str, contrast: Contrast, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The contrast's two sides of ``value`` at ``n``, paired (:func:`_sides`), each training seed's
    rows averaged per key."""
    frame, keys = _sides(episodes, contrast, n)
    return paired_sides(frame, "side", value, "treatment", "control", keys)


def against_table(episodes: pd.DataFrame, control: str) -> pd.DataFrame:
    """Each run's kept adapters against ``control`` (:data:`BASE`, or ``recipe``: its adapter kept
    by the same rule) at each N, under both rewards, meals and the deadlock rate: the paired
    difference with its 95% bootstrap interval, p (paired t, or Wilcoxon), d_z, and p
    Holm-adjusted within this table."""
    rows = []
    trained = [r for r in dict.fromkeys(episodes["run"]) if r not in (BASE, SCRIPTED, control)]
    for run in trained:
        for selection in dict.fromkeys(episodes.loc[episodes["run"] == run, "selection"]):
            contrast = Contrast("", run, selection, control, BASE if control == BASE else selection)
            for n in sorted(episodes["n"].unique()):
                for value in ("reward", "reward_shaped", *METRICS):
                    treatment, base = paired(episodes, value, contrast, n)
                    tested = effect(treatment, base, paired=True)
                    rows.append(
                        {"run": run, "selection": selection, "n": n, "metric": value, "pairs": len(treatment)}
                        | {key: tested[key] for key in ("ours", "ours_low", "ours_high", "p", "size")}
                    )
    table = pd.DataFrame(rows).rename(columns={"ours": "difference", "ours_low": "low", "ours_high": "high"})
    return table.assign(p_holm=holm(table["p"]))


def gap_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per N: the base model's meals per episode, the scripted policy that eats most
    (:data:`SCRIPTED_POLICIES`), and each kept adapter's meals with the share of that gap it closes,
    (adapter - base) / (scripted - base)."""
    rows = []
    for n, cell in summary.groupby("n"):
        base = float(cell.loc[cell["run"] == BASE, "meals"].iloc[0])
        scripted = cell.loc[cell.loc[cell["run"] == SCRIPTED, "meals"].idxmax()]
        for r in cell[~cell["run"].isin([BASE, SCRIPTED])].itertuples():
            gap = scripted["meals"] - base
            rows.append(
                {
                    "n": n,
                    "run": r.run,
                    "selection": r.selection,
                    "meals": r.meals,
                    "base meals": base,
                    "scripted": scripted["selection"],
                    "scripted meals": scripted["meals"],
                    "gap closed": (r.meals - base) / gap if gap > 0 else math.nan,
                }
            )
    return pd.DataFrame(rows)


def closest(gap: pd.DataFrame) -> pd.DataFrame:
    """Per N where there is a gap, the row of :func:`gap_table` whose adapter closes most of it (the
    first of equals)."""
    rows = gap.dropna(subset=["gap closed"])
    return rows.loc[rows.groupby("n")["gap closed"].idxmax()]


def gap_sentence(gap: pd.DataFrame) -> str:
    """The adapter that closes most of the gap at each N, in words; where no scripted policy eats
    more than the base model (too few rounds to eat), that there is no gap."""
    best = closest(gap).set_index("n")
    parts = []
    for n, cell in gap.groupby("n"):
        row = cell.iloc[0]
        said = (
            f"at N = {n} the base model eats {row['base meals']:.2f} meals per episode and {row['scripted']} "
            f"{row['scripted meals']:.2f}"
        )
        if n in best.index:
            b = best.loc[n]
            said += (
                f"; the adapter closest to it, {b['run']} ({b['selection']}), eats {b['meals']:.2f}, "
                f"{b['gap closed']:.0%} of the way"
            )
        else:
            said += ": no gap to close"
        parts.append(said)
    return "The gap to the best scripted policy that eats: " + "; ".join(parts) + "."


def frontier_table(coordination: pd.DataFrame, gap: pd.DataFrame, models) -> pd.DataFrame:
    """The gap's other far end on a profile with frontier models (``models``): each one's meals per
    episode and deadlock rate at each N in free decisions, the paper's protocol (notebook 02's
    summary, ``coordination``), beside the adapter that closes most of the gap to the scripted
    policy there (:func:`gap_table`)."""
    best = closest(gap).set_index("n")
    rows = coordination[coordination["model"].isin(models) & (coordination["decision"] == "free")]
    rows = rows[rows["n"].isin(best.index)][["model", "n", "meals", "deadlock_rate"]]
    return rows.assign(
        adapter=[f"{best.loc[n, 'run']} ({best.loc[n, 'selection']})" for n in rows["n"]],
        adapter_meals=[best.loc[n, "meals"] for n in rows["n"]],
    ).reset_index(drop=True)


# -- the claims and the verdicts ----------------------------------------------------------------
def _what(contrast: Contrast, n: int, metric: str) -> str:
    treatment, control = contrast.sides()
    return f"{contrast.name}, N = {n}: {METRICS[metric]}, {treatment} minus {control}"


def _gate(contrast: Contrast, episodes: pd.DataFrame, signal: pd.DataFrame) -> str:
    """The failed gates of a contrast: the treatment run's learning signal, and for checkpoint
    discipline whether the two rules kept different adapters at all."""
    runs = signal["run"].unique() if contrast.run == EVERY_RUN else [contrast.run]
    shares = signal[signal["run"].isin(runs)]["steps with a signal"]
    checks = [LEARNING_SIGNAL.check(float(shares.mean()), "steps with a signal") if len(shares) else ""]
    if contrast.selection != contrast.control_selection and contrast.control_run != BASE:
        sides = ((contrast.run, contrast.selection), (contrast.control_run, contrast.control_selection))
        steps = [_rows(episodes, r, s).groupby(["run", "train_seed"])["step"].first() for r, s in sides]
        if len(steps[0]) and steps[0].equals(steps[1].reindex(steps[0].index)):
            checks.append(
                f"the same adapter: {contrast.selection} kept the {contrast.control_selection} step in every run and seed"
            )
    return gated(*checks)


def claims_rows(episodes: pd.DataFrame, signal: pd.DataFrame, source, profile: str, model: str, ns) -> pd.DataFrame:
    """Every contrast at each N of ``ns`` on meals per episode (rule ``higher``) and the deadlock
    rate (rule ``no effect``), paired by evaluation seed, as our own claims on paper A
    (``claims.OURS``: the paper reports no number for a prescription it did not run), gated
    (:func:`_gate`); one family, Holm-adjusted by ``claims.claims_table``."""
    rows = []
    for contrast in CONTRASTS:
        gate = _gate(contrast, episodes, signal)
        for n in ns:
            for metric, rule, effect_if in (
                ("meals_total", "higher", "above 0: the prescription feeds the table (paired by evaluation seed)"),
                (
                    "deadlock",
                    "no effect",
                    "no effect: deadlocks equivalent within the margin (TOST, paired); the verdict per "
                    "prescription also reads a significant fall as no rise",
                ),
            ):
                frame, keys = _sides(episodes, contrast, n)
                treatment, control = paired_sides(frame, "side", metric, "treatment", "control", keys)
                tested = effect(treatment, control, paired=True, names=("treatment's values", "control's values"))
                differences = per_seed_differences(frame, "side", metric, "treatment", "control", keys)
                rows.append(
                    {
                        "reported": OURS,
                        "paper": "A",
                        "what": _what(contrast, n, metric),
                        "model": model,
                        "effect_if": effect_if,
                        "rule": rule,
                        "gate": gate if len(treatment) else "",
                        "note": (
                            f"{OWN_CLAIM}; {contrast.sides()[0]} {treatment.mean():.3f}, "
                            f"{contrast.sides()[1]} {control.mean():.3f}; {tested['size']}"
                            + (f"; {seeds_in_words(differences)}" if differences else "")
                            if len(treatment)
                            else NOT_RUN
                        ),
                        **{key: tested[key] for key in ("ours", "ours_low", "ours_high", "p", "p_tost", "test")},
                        **seed_range(differences),
                    }
                )
    table = pd.DataFrame(rows).assign(source=source_name(source))
    return claims_table(table, "05_interventions", profile)


def _shown(row) -> bool:
    """Whether a claims row's difference is shown: significant after Holm and, where it pools
    training seeds, of the same sign in every seed (``claims.seeds_agree``, as its own verdict reads)."""
    return row["p_holm"] < ALPHA and seeds_agree(row["ours"], row["seed_low"], row["seed_high"])


def prescription_verdict(meals, deadlock) -> tuple[str, str]:
    """A prescription's outcome at one N from its two claims rows (``meals``, ``deadlock``: rows of
    :func:`claims_rows` with ``ours``, ``p_holm``, ``p_tost_holm``, ``verdict``, ``note``, ``seed_low``
    and ``seed_high``, NaN where no training seeds are pooled) and why."""
    for row in (meals, deadlock):
        if row["verdict"] == "cannot test":  # the note's reason, before what every note of ours says
            return "cannot test", row["note"].removeprefix("cannot test: ").split(f"; {OWN_CLAIM}")[0]
    more_deadlocks = _shown(deadlock) and deadlock["ours"] > 0
    if more_deadlocks or (_shown(meals) and meals["ours"] < 0):
        return "worse", "more deadlocks" if more_deadlocks else "fewer meals"
    if _shown(meals) and meals["ours"] > 0:
        return "closes the gap", "more meals, deadlocks not up"
    if meals["p_holm"] < ALPHA:
        return "inconclusive", "the pooled difference in meals is not in every training seed"
    if meals["p_tost_holm"] < ALPHA:
        return "no change", "meals equivalent within the margin, deadlocks not up"
    return "inconclusive", "neither a difference nor an equivalence in meals is shown"


def verdict_table(claims: pd.DataFrame, ns) -> pd.DataFrame:
    """One row per prescription and N: its two sides, the meals and deadlock differences with their
    intervals and Holm-adjusted p, and :func:`prescription_verdict`."""
    by_what = claims.set_index("what")
    rows = []
    for contrast in CONTRASTS:
        for n in ns:
            meals, deadlock = (by_what.loc[_what(contrast, n, metric)] for metric in METRICS)
            outcome, why = prescription_verdict(meals, deadlock)
            treatment, control = contrast.sides()
            rows.append(
                {
                    "prescription": contrast.name,
                    "n": n,
                    "treatment": treatment,
                    "control": control,
                    "meals_difference": meals["ours"],
                    "meals_low": meals["ours_low"],
                    "meals_high": meals["ours_high"],
                    "meals_p_holm": meals["p_holm"],
                    "deadlock_difference": deadlock["ours"],
                    "deadlock_p_holm": deadlock["p_holm"],
                    "verdict": outcome,
                    "why": why,
                }
            )
    return pd.DataFrame(rows)


def verdict_sentences(verdicts: pd.DataFrame) -> str:
    """Per prescription, its verdict at each N with the meals difference, in words."""
    lines = []
    for name, rows in verdicts.groupby("prescription", sort=False):
        cells = "; ".join(
            f"N = {r.n}: {r.verdict}"
            + (
                f" ({r.meals_difference:+.2f} meals per episode [{r.meals_low:.2f}, {r.meals_high:.2f}], {r.why})"
                if r.verdict != "cannot test"
                else f" ({r.why})"
            )
            for r in rows.itertuples()
        )
        lines.append(f"- **{name}** ({rows['treatment'].iloc[0]} against {rows['control'].iloc[0]}): {cells}.")
    counts = verdicts["verdict"].value_counts()
    lines.append("Over every prescription and N: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES) + ".")
    return "\n".join(lines)


def curve_sentences(log: pd.DataFrame) -> str:
    """Per run, where its training reward (its own reward, the seeds' mean) peaked and whether it
    then declined to the last step, as paper A's did (notebook 03's ``curve``)."""
    from paperlib.reports.n03_grpo import curve, pooled_over_seeds

    lines = []
    for run, rows in log.groupby("run", sort=False):
        c = curve(pooled_over_seeds(rows))
        shape = (
            f"peaked at step {c['peak_step']} ({c['peak']:.3f}) and declined to {c['last']:.3f} at step "
            f"{c['last_step']}: paper A's peak-then-decline"
            if c["peak_step"] != c["last_step"] and c["earlier_better"]
            else f"was highest at its last step, {c['last_step']} ({c['last']:.3f})"
        )
        lines.append(f"- **{run}** (reward `{rows['reward'].iloc[0]}`): the training reward {shape}.")
    return "\n".join(lines)
