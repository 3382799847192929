"""The runs behind notebooks 11-13 and 15, sized by a profile, saved as they finish and resumed,
and the tables computed from them (``summarise``, ``knowing_doing_summary``, ``exploration_table``).

A run is one agent on one bandit configuration for a number of instances; its id
(``Run.id``) names everything that changes its rollouts, so a notebook rerun with the
same settings skips the runs already stored and a changed setting makes a new run.
Notebook 12's scored cases are stored and resumed the same way, keyed by the model and a
digest of the settings that make the cases (``frequency_bias_setup``).

What the notebooks say about these runs (their sentences, claims and the tables they only
show) is in their report modules, ``paperlib.reports.n11_greediness`` to ``n15_exploration``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from paperlib.bandits import llm
from paperlib.bandits.agents import make_agent
from paperlib.bandits.baselines import BASELINES
from paperlib.bandits.env import BanditSpec
from paperlib.bandits.exploration import MECHANISMS, Exploration
from paperlib.bandits.prompts import MAX_NEW_TOKENS
from paperlib.bandits.runner import run_bandit
from paperlib.data import RolloutStore


@dataclass(frozen=True)
class Run:
    agent: str  # a baseline name or "llm"
    arms: int
    noise: str
    instances: int
    horizon: int
    model: str | None = None  # LLM runs only, and below
    cot: bool = False
    decision: str = "free"
    style: str | None = None  # None: cot or no_cot after ``cot``
    max_new_tokens: int | None = None
    exploration: str = "none"  # paper B's mechanisms (paperlib.bandits.exploration)
    temperature: float = 0.0

    @property
    def id(self) -> str:
        size = f"k{self.arms}/{self.noise}/T{self.horizon}/M{self.instances}"
        if self.agent != "llm":
            return f"{self.agent}/{size}"
        style = self.style or ("cot" if self.cot else "no_cot")
        sampled = f"/temp{self.temperature:g}" if self.temperature else ""
        explored = f"/explore-{self.exploration}" if self.exploration != "none" else ""
        return (
            f"llm/{self.model}/{style}/{self.decision}/tokens{self.max_new_tokens or MAX_NEW_TOKENS[style]}"
            f"{sampled}{explored}/{size}"
        )


def greediness_runs(settings) -> list[Run]:
    """Notebook 11: every baseline on every (arms, noise); on the main bandit
    (``bandit_main_arms``, low noise) each model of ``bandit_models`` in the figure's
    decision mode (CoT as ``bandit_main_cot``) and each of ``bandit_compare_models`` in the
    other decision modes too (CoT as ``bandit_compare_cot``); each of ``bandit_sweep_models``
    in the figure's mode on the other arm counts (``bandit_llm_arms``, low noise) and noise
    levels (CoT as ``bandit_sweep_cot``). A model of ``bandit_free_only`` plays the paper's
    protocol only: its runs are free, the figure's mode or not; each model's instances and CoT
    budget are ``Profile.bandit_size``'s (a CoT budget of 0: the model plays no CoT run)."""
    s = settings
    runs = [
        Run(b, k, noise, s.bandit_instances, s.bandit_horizon)
        for b, k, noise in itertools.product(BASELINES, s.bandit_arms, s.bandit_noises)
    ]
    main = [
        (s.bandit_main_arms, "low", cot, s.bandit_figure_decision) for cot in (False, True) if cot in s.bandit_main_cot
    ]
    compare = [
        (s.bandit_main_arms, "low", cot, decision)
        for cot in s.bandit_compare_cot
        for decision in s.bandit_decisions
        if decision != s.bandit_figure_decision
    ]
    sweeps = [
        (k, noise, cot, s.bandit_figure_decision)
        for k, noise in [(k, "low") for k in s.bandit_llm_arms if k != s.bandit_main_arms]
        + [(s.bandit_main_arms, n) for n in s.bandit_noises if n != "low"]
        for cot in (False, True)
        if cot in s.bandit_sweep_cot
    ]
    configs = [(model, c) for model in s.bandit_models for c in main]
    configs += [(model, c) for model in s.bandit_compare_models for c in compare]
    configs += [(model, c) for model in s.bandit_sweep_models for c in sweeps]
    for model, (k, noise, cot, decision) in configs:
        if cot and not s.bandit_size(model, "bandit_cot_tokens"):
            continue  # a CoT budget of 0 tokens: no CoT run for this model
        if model in s.bandit_free_only:
            decision = "free"
        run = Run(
            "llm",
            k,
            noise,
            s.bandit_size(model, "bandit_llm_instances"),
            s.bandit_horizon,
            model,
            cot,
            decision,
            max_new_tokens=s.bandit_size(model, "bandit_cot_tokens") if cot else None,
        )
        if run not in runs:  # a free-only model's compare run is its main run
            runs.append(run)
    return runs


def run_all(
    runs: list[Run], directory: Path, backend_of, seed: int = 0, labels: dict | None = None, log=print
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play every run not yet in the store at ``directory``; return the episode and step rows
    of exactly ``runs`` (a store may hold runs of other settings too). ``backend_of(model)``
    gives the loaded backend of an LLM run (so one model is loaded once)."""
    store = RolloutStore(directory)
    done = {key[0] for key in store.finished(["run"])}
    todo = [run for run in runs if run.id not in done]
    baselines = [play(run, make_agent(run.agent), seed, labels) for run in todo if run.agent != "llm"]
    if baselines:  # seconds in all: one shard
        store.append(*(pd.concat(frames, ignore_index=True) for frames in zip(*baselines)))
    for run in (run for run in todo if run.agent == "llm"):
        agent = make_agent(
            "llm",
            backend=backend_of(run.model),
            cot=run.cot,
            style=run.style,
            decision=run.decision,
            max_new_tokens=run.max_new_tokens,
            temperature=run.temperature,
            exploration=Exploration(run.exploration),
        )
        episodes, steps = play(run, agent, seed, labels)
        store.append(episodes, steps)
        log(
            f"{run.id}: coverage {episodes['coverage'].mean():.2f}, regret {episodes['regret'].mean():.1f}, "
            f"invalid steps {episodes['invalid_steps'].mean() / run.horizon:.0%}"
        )
    ids = {run.id for run in runs}
    episodes, steps = store.episodes(), store.steps()
    return episodes[episodes["run"].isin(ids)].reset_index(drop=True), steps[steps["run"].isin(ids)].reset_index(
        drop=True
    )


def play(run: Run, agent, seed: int = 0, labels: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's episode and step rows, both labelled with the run id."""
    spec = BanditSpec(run.arms, run.horizon, noise=run.noise)
    episodes, steps = run_bandit(agent, spec, run.instances, seed, labels={**(labels or {}), "run": run.id})
    return episodes, steps.assign(run=run.id)


def label(agent: str, model: str, cot: bool, decision: str | None = None) -> str:
    """How a run is named in legends: the baseline, or the model and CoT on or off, and
    the decision mode in brackets when it is given."""
    if agent != "llm":
        return agent
    return f"{model} {'CoT' if cot else 'no CoT'}" + (f" ({decision})" if decision else "")


def summarise(episodes: pd.DataFrame, figure_decision: str) -> pd.DataFrame:
    """One row per run: its settings and the means over instances of the final coverage and
    regret, and of the share of steps with a valid action; ``in_figure`` marks the runs the
    figures show: baselines, LLM runs in ``figure_decision`` mode, and the runs of a model
    that plays no run in that mode (shown in the mode it played, which its label names)."""
    frame = episodes.assign(valid=1 - episodes["invalid_steps"] / episodes["horizon"])
    if "decision" not in frame:
        frame["decision"] = None
    frame["decision"] = frame["decision"].where(frame["agent"] == "llm")
    keys = ["run", "agent", "model", "cot", "decision", "arms", "noise"]
    out = frame.groupby(keys, dropna=False, sort=False)[["coverage", "regret", "valid"]].mean().reset_index()
    out["instances"] = frame.groupby("run", sort=False).size().loc[out["run"]].to_numpy()
    llm, in_mode = out["agent"] == "llm", out["decision"] == figure_decision
    other_mode = llm & ~out["model"].isin(out.loc[llm & in_mode, "model"])
    out["label"] = [
        label(a, m, c, d if other else None)
        for a, m, c, d, other in zip(out["agent"], out["model"], out["cot"], out["decision"], other_mode)
    ]
    out["in_figure"] = ~llm | in_mode | other_mode
    return out


def with_runs(steps: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Step rows with their run's settings, label and ``in_figure``."""
    return steps.merge(
        summary[["run", "label", "agent", "model", "cot", "decision", "arms", "noise", "in_figure"]], on="run"
    )


FREQUENCY_BIAS_CASE = ["length", "history", "seed", "repetitions"]  # what names a case among its set


def frequency_bias_setup(settings, seed: int = 0) -> tuple[BanditSpec, pd.DataFrame, str]:
    """Notebook 12's bandit, its cases (``metrics.frequency_bias_cases``) and their digest: 12 hex
    digits of the sha256 of every setting that makes the cases and their prompts (arms, reward
    family and noise, prompt version, history lengths, histories per length, repetitions, seed).
    Stored rows carry the digest as ``cases``: a store keeps the rows of other settings apart by
    it, as the bandit store keeps runs apart by their id."""
    from paperlib.bandits.metrics import frequency_bias_cases
    from paperlib.bandits.prompts import prompt_name

    spec = BanditSpec(settings.freq_arms)
    defining = {
        "arms": spec.k,
        "family": spec.family,
        "noise": spec.noise,
        "prompt": prompt_name(spec.variant, "no_cot"),
        "lengths": list(settings.freq_lengths),
        "histories": settings.freq_histories,
        "repetitions": list(settings.freq_repetitions),
        "seed": seed,
    }
    digest = hashlib.sha256(json.dumps(defining, sort_keys=True).encode()).hexdigest()[:12]
    cases = frequency_bias_cases(spec, seed, settings.freq_lengths, settings.freq_repetitions, settings.freq_histories)
    return spec, cases, digest


def frequency_bias_results(settings, backend_of, directory: Path, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Notebook 12: ``metrics.frequency_bias`` of every model in ``freq_models`` on the same cases
    (``frequency_bias_setup``), as ``stored_frequency_bias`` returns them.

    The rows go to the RolloutStore at ``directory`` as they are scored, one shard per model and
    batch (``llm.frequency_bias_batches``: one number of repetitions, every history), each row keyed
    by its model and ``cases`` digest; a rerun scores only the batches not yet stored, so a
    killed run loses at most the batch in flight. ``backend_of(model)`` gives the loaded backend
    of a model with cases left to score."""
    from paperlib.bandits.metrics import frequency_bias

    spec, cases, digest = frequency_bias_setup(settings, seed)
    store = RolloutStore(directory)
    done = store.finished(["model", "cases", "repetitions"])
    for model in settings.freq_models:
        todo = cases[[(model, digest, r) not in done for r in cases["repetitions"]]]
        if todo.empty:
            continue
        for index, scores in llm.frequency_bias_batches(backend_of(model), spec, todo):
            scored = frequency_bias(todo.iloc[index], scores, spec)
            store.append(scored.assign(model=model, cases=digest)[["model", "cases", *scored.columns]])
    return stored_frequency_bias(settings, directory, seed)


def stored_frequency_bias(settings, directory: Path, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The scored cases of every model in ``freq_models`` from the RolloutStore at ``directory``,
    by model, in the order of ``metrics.frequency_bias_cases``; the store's rows of other settings
    (another ``cases`` digest) are left out. A model without all its rows is one line."""
    from paperlib import paths

    _, cases, digest = frequency_bias_setup(settings, seed)
    rows = RolloutStore(directory).episodes()
    results = {}
    for model in settings.freq_models:
        mine = rows[(rows["model"] == model) & (rows["cases"] == digest)] if len(rows) else rows
        if len(mine) != len(cases):
            raise FileNotFoundError(
                f"{paths.relative(directory)} holds {len(mine)} of the {len(cases)} scored cases of "
                f"{model} on these settings (cases {digest}): score them with generate = True"
            )
        results[model] = cases[FREQUENCY_BIAS_CASE].merge(mine, on=FREQUENCY_BIAS_CASE)[mine.columns]
    return results


def knowing_doing_runs(settings) -> list[Run]:
    """Notebook 13: each model of ``kd_models`` with the knowing-doing prompt, per decision mode
    (free only for a model of ``bandit_free_only``), at its sizes (``Profile.bandit_size``)."""
    s = settings
    return [
        Run(
            "llm",
            s.kd_arms,
            "low",
            s.bandit_size(model, "kd_instances"),
            s.bandit_size(model, "kd_horizon"),
            model,
            True,
            decision,
            "knowing_doing",
            s.bandit_size(model, "kd_tokens"),
        )
        for model in s.kd_models
        for decision in (("free",) if model in s.bandit_free_only else s.kd_decisions)
    ]


def scripted_knowing_doing(settings, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validation of notebook 13: the scripted agent (``bandits.scripted``) on the
    knowing-doing bandit; returns (the matrix computed from its texts, the matrix of its
    intentions). The two must be equal."""
    from paperlib.bandits.metrics import knowing_doing, knowing_doing_matrix
    from paperlib.bandits.scripted import ScriptedKnowingDoingAgent

    spec = BanditSpec(settings.kd_arms, settings.kd_horizon)
    _, steps = run_bandit(ScriptedKnowingDoingAgent(), spec, settings.kd_instances, seed)
    computed = knowing_doing_matrix(knowing_doing(steps, spec.names))
    intended = knowing_doing_matrix(
        steps.assign(rationale_correct=steps["intended_rationale"] == "correct", action_class=steps["intended_class"])
    )
    return computed, intended


def knowing_doing_summary(steps: pd.DataFrame, arms: int) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Per run of LLM step rows: its knowing-doing matrix, and a table of how often the model
    wrote any UCB value, how often its rationale was correct, its valid actions, and how often
    its completion ended before the token limit (``finish_reason`` other than ``length``: a
    rationale cut off by the budget cannot reach its ACTION=)."""
    from paperlib.bandits.metrics import knowing_doing, knowing_doing_matrix

    names = BanditSpec(arms).names
    matrices, rows = {}, []
    for run, run_steps in steps.groupby("run", sort=False):
        judged = knowing_doing(run_steps, names)
        matrices[run] = knowing_doing_matrix(judged)
        rows.append(
            {
                "run": run,
                "steps": len(judged),
                "wrote any UCB value": judged["ucb_values"].map(lambda v: not pd.isna(v).all()).mean(),
                "correct rationale": judged["rationale_correct"].mean(),
                "valid action": judged["valid"].mean(),
                "ended before the token limit": (run_steps["finish_reason"] != "length").mean()
                if "finish_reason" in run_steps
                else float("nan"),
            }
        )
    return matrices, pd.DataFrame(rows)


def exploration_runs(settings) -> list[Run]:
    """Notebook 15 (paper B's Fig. 8): every mechanism of ``exploration.MECHANISMS`` for each model
    of ``explore_models`` on one bandit, at one sampling temperature (self-consistency needs one
    above 0), and UCB and random on the same instances."""
    s = settings
    runs = [Run(b, s.explore_arms, "low", s.explore_instances, s.explore_horizon) for b in ("ucb", "random")]
    runs += [
        Run(
            "llm",
            s.explore_arms,
            "low",
            s.explore_instances,
            s.explore_horizon,
            model,
            s.explore_cot,
            s.explore_decision,
            max_new_tokens=s.explore_tokens,
            exploration=mechanism,
            temperature=s.explore_temperature,
        )
        for model in s.explore_models
        for mechanism in MECHANISMS
    ]
    return runs


def exploration_table(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per model x mechanism (and per reference agent): final regret and coverage with
    95% intervals, the share of invalid steps, the share of arms the model chose (``chosen_by``
    other than the mechanism's own arms), and against the same model without a mechanism:
    Welch's p and Hedges' g for regret and coverage."""
    from paperlib.stats import bootstrap_mean_ci, hedges_g_ci, welch

    mechanism = episodes["exploration"] if "exploration" in episodes else pd.Series("none", index=episodes.index)
    frame = episodes.assign(
        exploration=mechanism.fillna("none").where(episodes["agent"] == "llm", episodes["agent"]),
        invalid=episodes["invalid_steps"] / episodes["horizon"],
    )
    chosen = (
        steps.assign(by_model=steps["chosen_by"].isin(["model", "revision", "vote"])).groupby("run")["by_model"].mean()
        if "chosen_by" in steps
        else pd.Series(dtype=float)
    )
    rows = []
    for (model, mechanism, run), group in frame.groupby(["model", "exploration", "run"], sort=False):
        row = {
            "model": model,
            "exploration": mechanism,
            "run": run,
            "instances": len(group),
            "invalid": group["invalid"].mean(),
            "chosen_by_model": chosen.get(run, float("nan")),
        }
        plain = frame[(frame["model"] == model) & (frame["exploration"] == "none")]
        for metric in ("regret", "coverage"):
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = bootstrap_mean_ci(group[metric])
            if mechanism != "none" and len(plain) and not model.startswith("baseline:"):
                _, row[f"{metric}_p"] = welch(group[metric], plain[metric])
                row[f"{metric}_g"] = hedges_g_ci(group[metric], plain[metric])[0]
        rows.append(row)
    return pd.DataFrame(rows)
