"""The runs behind notebooks 11-13, sized by a profile, saved as they finish and resumed.

A run is one agent on one bandit configuration for a number of instances; its id
(``Run.id``) names everything that changes its rollouts, so a notebook rerun with the
same settings skips the runs already stored and a changed setting makes a new run.
Notebook 12's scored cases are stored and resumed the same way, keyed by the model and a
digest of the settings that make the cases (``frequency_bias_setup``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from paperlib.bandits.agents import make_agent
from paperlib.bandits.baselines import BASELINES
from paperlib.bandits import llm
from paperlib.bandits.env import BanditSpec
from paperlib.bandits.exploration import MECHANISMS, Exploration
from paperlib.bandits.prompts import MAX_NEW_TOKENS
from paperlib.bandits.runner import run_bandit
from paperlib.claims import claims_table, source_name
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
        return (f"llm/{self.model}/{style}/{self.decision}/tokens{self.max_new_tokens or MAX_NEW_TOKENS[style]}"
                f"{sampled}{explored}/{size}")


def greediness_runs(settings) -> list[Run]:
    """Notebook 11: every baseline on every (arms, noise); on the main bandit
    (``bandit_main_arms``, low noise) each model of ``bandit_models`` in the figure's
    decision mode (CoT as ``bandit_main_cot``) and each of ``bandit_compare_models`` in the
    other decision modes too (CoT as ``bandit_compare_cot``); each of ``bandit_sweep_models``
    in the figure's mode on the other arm counts (``bandit_llm_arms``, low noise) and noise
    levels (CoT as ``bandit_sweep_cot``)."""
    s = settings
    runs = [Run(b, k, noise, s.bandit_instances, s.bandit_horizon)
            for b, k, noise in itertools.product(BASELINES, s.bandit_arms, s.bandit_noises)]
    main = [(s.bandit_main_arms, "low", cot, s.bandit_figure_decision) for cot in (False, True) if cot in s.bandit_main_cot]
    compare = [(s.bandit_main_arms, "low", cot, decision) for cot in s.bandit_compare_cot for decision in s.bandit_decisions
               if decision != s.bandit_figure_decision]
    sweeps = [(k, noise, cot, s.bandit_figure_decision)
              for k, noise in [(k, "low") for k in s.bandit_llm_arms if k != s.bandit_main_arms]
              + [(s.bandit_main_arms, n) for n in s.bandit_noises if n != "low"]
              for cot in (False, True) if cot in s.bandit_sweep_cot]
    configs = [(model, c) for model in s.bandit_models for c in main]
    configs += [(model, c) for model in s.bandit_compare_models for c in compare]
    configs += [(model, c) for model in s.bandit_sweep_models for c in sweeps]
    for model, (k, noise, cot, decision) in configs:
        runs.append(Run("llm", k, noise, s.bandit_llm_instances, s.bandit_horizon, model, cot, decision,
                        max_new_tokens=s.bandit_cot_tokens if cot else None))
    return runs


def run_all(runs: list[Run], directory: Path, backend_of, seed: int = 0, labels: dict | None = None,
            log=print) -> tuple[pd.DataFrame, pd.DataFrame]:
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
        agent = make_agent("llm", backend=backend_of(run.model), cot=run.cot, style=run.style,
                           decision=run.decision, max_new_tokens=run.max_new_tokens, temperature=run.temperature,
                           exploration=Exploration(run.exploration))
        episodes, steps = play(run, agent, seed, labels)
        store.append(episodes, steps)
        log(f"{run.id}: coverage {episodes['coverage'].mean():.2f}, regret {episodes['regret'].mean():.1f}, "
            f"invalid steps {episodes['invalid_steps'].mean() / run.horizon:.0%}")
    ids = {run.id for run in runs}
    episodes, steps = store.episodes(), store.steps()
    return episodes[episodes["run"].isin(ids)].reset_index(drop=True), steps[steps["run"].isin(ids)].reset_index(drop=True)


def play(run: Run, agent, seed: int = 0, labels: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's episode and step rows, both labelled with the run id."""
    spec = BanditSpec(run.arms, run.horizon, noise=run.noise)
    episodes, steps = run_bandit(agent, spec, run.instances, seed, labels={**(labels or {}), "run": run.id})
    return episodes, steps.assign(run=run.id)


def paper_numbers() -> pd.DataFrame:
    """Paper B's reported numbers (``data/paper_reported.csv``), indexed by id."""
    from paperlib import paths

    table = pd.read_csv(paths.PAPER_REPORTED)
    return table[table["paper"] == "B"].set_index("id")


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
    out["label"] = [label(a, m, c, d if other else None)
                    for a, m, c, d, other in zip(out["agent"], out["model"], out["cot"], out["decision"], other_mode)]
    out["in_figure"] = ~llm | in_mode | other_mode
    return out


def with_runs(steps: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Step rows with their run's settings, label and ``in_figure``."""
    return steps.merge(summary[["run", "label", "agent", "model", "cot", "decision", "arms", "noise", "in_figure"]],
                       on="run")


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
        curve = steps[(steps["model"] == model) & (steps["arms"] == k) & (steps["noise"] == "low")
                      & (steps["cot"] == curve_cot) & steps["in_figure"]].groupby("turn")["coverage"].mean()
        stagnation = stagnation_step(curve) if len(curve) else float("nan")
        below, reference = ((no_cot < cot, "below the CoT run") if has_cot
                            else (no_cot < ucb_k, f"below UCB's {ucb_k:.2f}"))
        decision = decisions.get(model, settings.bandit_figure_decision)
        rows += [
            (model, decision, "B01/B02", f"coverage after 50 steps, {k} arms, CoT", "0.40 (2B), 0.65 (9B, 27B)", cot,
             f"below UCB's {ucb_k:.2f}", cot < ucb_k),
            (model, decision, "B03", f"coverage without CoT, {k} arms", str(paper.loc["B03", "value"]), no_cot,
             reference, below),
            (model, decision, "B04", "coverage, 20 arms", str(paper.loc["B04", "value"]), wide,
             f"below UCB's {ucb_wide:.2f}", wide < ucb_wide),
            (model, decision, "B05",
             f"step by which coverage reaches 90% of its final value, {'CoT' if curve_cot else 'no CoT'} [ours]",
             str(paper.loc["B05", "value"]), stagnation, "at most 20 of 50 steps", stagnation <= 20),
        ]
    claims = pd.DataFrame(rows, columns=["model", "decision", "id", "claim", "paper", "ours", "the effect, if", "shown"])
    claims["shown"] = claims["shown"].astype("boolean").mask(claims["ours"].isna())  # <NA>: not run on this profile
    return claims


def claims_sentences(claims: pd.DataFrame) -> str:
    """A Markdown bullet per model of ``greediness_claims``: the claims whose effect ours
    shows, those whose effect it does not show, and those with no run on this profile."""
    lines = []
    for (model, decision), rows in claims.groupby(["model", "decision"], sort=False):
        shown = rows["shown"]
        groups = (("shown in", shown.fillna(False).astype(bool)), ("not shown in", (~shown).fillna(False).astype(bool)),
                  ("not run on this profile for", shown.isna()))
        parts = [f"{what} {', '.join(rows.loc[mask, 'id'])}" for what, mask in groups if mask.any()]
        lines.append(f"- **{model} ({decision})**: the paper's effect " + "; ".join(parts) + ".")
    return "\n".join(lines)


def own_choices(steps: pd.DataFrame) -> pd.DataFrame:
    """Per LLM run (step rows from ``with_runs``), means over its episodes of the arms the
    model chose itself, its valid actions (an invalid step plays the runner's random arm):
    ``arms_chosen``, how many distinct arms, and ``top_share``, the share of them that went
    to the arm it chose most. A run with no valid action has no row."""
    valid = steps[(steps["agent"] == "llm") & steps["valid"]]
    per_episode = valid.groupby(["run", "episode"])["action"].agg(
        arms_chosen="nunique", top_share=lambda actions: actions.value_counts().iloc[0] / len(actions))
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

    return (f"On the {arms}-armed bandit at low noise UCB had tried {early:.0%} of the arms by step {min(arms, horizon)}; "
            f"after {horizon} steps the baselines covered: {', '.join(described(a) for a in ('ucb', 'random', 'greedy'))}.")


def llm_run_sentences(summary: pd.DataFrame, choices: pd.DataFrame, arms: int, horizon: int) -> str:
    """A Markdown bullet per LLM run on the ``arms``-armed bandit at low noise: how often a
    free run wrote a valid ACTION=, its coverage after ``horizon`` steps beside UCB's and
    random's, and the arms it chose itself (``own_choices``): how many, and how much of its
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
                f" ({fallback} played a random arm); " if fallback else "; ")
        chosen = ("it never chose an arm itself." if row.arms_chosen != row.arms_chosen else
                  f"the arms it chose itself: {row.arms_chosen:.1f} of {arms} per episode on average, "
                  f"{row.top_share:.0%} of its choices on the one it chose most.")
        lines.append(f"- **{row.model} {'CoT' if row.cot else 'no CoT'} ({row.decision})**: {valid}coverage after "
                     f"{horizon} steps {row.coverage:.2f} (UCB {reference['ucb']:.2f}, random {reference['random']:.2f}); "
                     f"{chosen}")
    return "\n".join(lines)


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
    defining = {"arms": spec.k, "family": spec.family, "noise": spec.noise, "prompt": prompt_name(spec.variant, "no_cot"),
                "lengths": list(settings.freq_lengths), "histories": settings.freq_histories,
                "repetitions": list(settings.freq_repetitions), "seed": seed}
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
            raise FileNotFoundError(f"{paths.relative(directory)} holds {len(mine)} of the {len(cases)} scored cases of "
                                    f"{model} on these settings (cases {digest}): score them with generate = True")
        results[model] = cases[FREQUENCY_BIAS_CASE].merge(mine, on=FREQUENCY_BIAS_CASE)[mine.columns]
    return results


def frequency_bias_claims(results: dict[str, pd.DataFrame], paper: pd.DataFrame) -> pd.DataFrame:
    """Per model: the entropy-repetitions correlation and the strategy shares beside the
    paper's Gemma2 2B and 27B (B06-B09, B18), and whether ours shows the small model's
    frequency bias (the paper's 2B: r < 0 and most predictions the most frequent action)."""
    from paperlib.bandits.metrics import entropy_correlation, strategy_shares

    rows = []
    for model, result in results.items():
        r, p = entropy_correlation(result)
        shares = strategy_shares(result)
        first = shares.iloc[0]  # the 0-10 repetitions window
        rows.append({"model": model, "r": r, "p": p, "paper r (2B / 27B)": f"{paper.loc['B06', 'value']} / {paper.loc['B08', 'value']}",
                     "frequent": shares.loc["all", "frequent"], "greedy": shares.loc["all", "greedy"],
                     "other": shares.loc["all", "other"],
                     "paper frequent (2B / 27B)": f"{paper.loc['B07', 'value']} / {paper.loc['B09', 'value']}",
                     "frequent, 0-10 repetitions": first["frequent"],
                     "paper frequent 0-10 (2B)": str(paper.loc["B18", "value"]),
                     "shown: r < 0 and frequent > 0.5": bool(r < 0 and shares.loc["all", "frequent"] > 0.5)})
    return pd.DataFrame(rows)


def frequency_bias_sentences(claims: pd.DataFrame) -> str:
    """A Markdown bullet per model of ``frequency_bias_claims``: its correlation and the share
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
            f"It {verdict} the 2B's frequency bias.")
    return "\n".join(lines)


def knowing_doing_runs(settings) -> list[Run]:
    """Notebook 13: each model of ``kd_models`` with the knowing-doing prompt, per decision mode."""
    s = settings
    return [Run("llm", s.kd_arms, "low", s.kd_instances, s.kd_horizon, model, True, decision, "knowing_doing",
                s.kd_tokens) for model in s.kd_models for decision in s.kd_decisions]


def scripted_knowing_doing(settings, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validation of notebook 13: the scripted agent (``bandits.scripted``) on the
    knowing-doing bandit; returns (the matrix computed from its texts, the matrix of its
    intentions). The two must be equal."""
    from paperlib.bandits.metrics import knowing_doing, knowing_doing_matrix
    from paperlib.bandits.scripted import ScriptedKnowingDoingAgent

    spec = BanditSpec(settings.kd_arms, settings.kd_horizon)
    _, steps = run_bandit(ScriptedKnowingDoingAgent(), spec, settings.kd_instances, seed)
    computed = knowing_doing_matrix(knowing_doing(steps, spec.names))
    intended = knowing_doing_matrix(steps.assign(rationale_correct=steps["intended_rationale"] == "correct",
                                                 action_class=steps["intended_class"]))
    return computed, intended


def knowing_doing_summary(steps: pd.DataFrame, arms: int) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Per run of LLM step rows: its knowing-doing matrix, and a table of how often the model
    wrote any UCB value, how often its rationale was correct, and its valid actions."""
    from paperlib.bandits.metrics import knowing_doing, knowing_doing_matrix

    names = BanditSpec(arms).names
    matrices, rows = {}, []
    for run, run_steps in steps.groupby("run", sort=False):
        judged = knowing_doing(run_steps, names)
        matrices[run] = knowing_doing_matrix(judged)
        rows.append({"run": run, "steps": len(judged),
                     "wrote any UCB value": judged["ucb_values"].map(lambda v: not pd.isna(v).all()).mean(),
                     "correct rationale": judged["rationale_correct"].mean(), "valid action": judged["valid"].mean()})
    return matrices, pd.DataFrame(rows)


def paper_knowing_doing(paper: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5's matrix as the paper prints it (B10-B15, % of all steps, Gemma2 27B)."""
    ids = {("correct", "greedy"): "B10", ("correct", "optimal"): "B11", ("correct", "other"): "B12",
           ("wrong", "greedy"): "B13", ("wrong", "optimal"): "B14", ("wrong", "other"): "B15"}
    matrix = pd.DataFrame(0.0, index=pd.Index(["correct", "wrong"], name="rationale"), columns=["optimal", "greedy", "other"])
    for (rationale, action), number in ids.items():
        matrix.loc[rationale, action] = float(paper.loc[number, "value"])
    return matrix


def knowing_doing_sentences(table: pd.DataFrame, matrices: dict[str, pd.DataFrame], paper: pd.DataFrame) -> str:
    """A Markdown bullet per knowing-doing run (``knowing_doing_summary``): how often the model
    wrote any UCB value and a correct rationale, the correct-rationale row of its matrix beside
    the paper's 27B (B10, B11), and whether it shows the paper's gap: most rationales correct
    and, with a correct one, a greedy action more often than an optimal one."""
    lines = []
    for row in table.to_dict("records"):
        correct = matrices[row["run"]].loc["correct"]
        shown = row["correct rationale"] > 0.5 and correct["greedy"] > correct["optimal"]
        model, decision = row["run"].split("/")[1], row["run"].split("/")[3]
        lines.append(
            f"- **{model} ({decision})** wrote any UCB value in {row['wrote any UCB value']:.0%} of its "
            f"{row['steps']} steps and a correct rationale in {row['correct rationale']:.0%} (paper, Gemma2 27B: "
            f"{paper.loc['B16', 'value']}%); with a correct rationale it "
            f"acted greedily in {correct['greedy']:.1f}% and optimally in {correct['optimal']:.1f}% of all steps "
            f"(paper, Gemma2 27B: {paper.loc['B10', 'value']} and {paper.loc['B11', 'value']}). "
            f"It {'shows' if shown else 'does not show'} the paper's knowing-doing gap.")
    return "\n".join(lines)


# -- claims in the shared schema (paperlib.claims) ----------------------------------------------
def greediness_claims_table(greediness: pd.DataFrame, source: str | os.PathLike, profile: str) -> pd.DataFrame:
    """Notebook 11's table (``experiments.greediness_claims``) in the schema: one claim per
    row, the model with its decision mode; ``shown`` is its test of the paper's effect.
    ``source``: the store its runs are in."""
    rows = pd.DataFrame({
        "reported": greediness["id"], "what": greediness["claim"],
        "model": greediness["model"] + " (" + greediness["decision"] + ")",
        "paper_value": greediness["paper"], "ours": greediness["ours"],
        "effect_if": greediness["the effect, if"], "shown": greediness["shown"], "source": source_name(source)})
    return claims_table(rows, "11_bandit_greediness", profile)


def frequency_bias_claims_table(frequency_bias: pd.DataFrame, source: str | os.PathLike, profile: str) -> pd.DataFrame:
    """Notebook 12's table (``experiments.frequency_bias_claims``, one row per model) in the
    schema: per model the entropy-repetitions correlation (B06), the share of predictions
    that are the most frequent action (B07) and that share at 0-10 repetitions (B18), each
    tested against the paper's Gemma2 2B, whose frequency bias the table's own verdict asks
    about (r < 0 and most predictions the frequent action); "most" at 0-10 repetitions is
    our reading of B18 **[ours]**. ``source``: the store its scores are in."""
    rows = []
    for row in frequency_bias.to_dict("records"):
        model = row["model"]
        rows += [
            {"reported": "B06", "what": "correlation of the action entropy with the repetitions of the last action "
             "(Pearson r)", "model": model, "ours": row["r"], "effect_if": "r < 0, as the paper's 2B",
             "shown": row["r"] < 0, "note": f"p = {row['p']:.2g}; paper 2B / 27B: {row['paper r (2B / 27B)']}"},
            {"reported": "B07", "what": "share of predictions that are the most frequent action", "model": model,
             "ours": row["frequent"], "effect_if": "above 0.5, as the paper's 2B", "shown": row["frequent"] > 0.5,
             "note": f"greedy {row['greedy']:.2f}, other {row['other']:.2f}; "
                     f"paper 2B / 27B: {row['paper frequent (2B / 27B)']}"},
            {"reported": "B18", "what": "share of predictions that are the most frequent action, 0-10 repetitions",
             "model": model, "ours": row["frequent, 0-10 repetitions"], "effect_if": "above 0.5 [ours]",
             "shown": row["frequent, 0-10 repetitions"] > 0.5},
        ]
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "12_frequency_bias", profile)


def exploration_runs(settings) -> list[Run]:
    """Notebook 15 (paper B's Fig. 8): every mechanism of ``exploration.MECHANISMS`` for each model
    of ``explore_models`` on one bandit, at one sampling temperature (self-consistency needs one
    above 0), and UCB and random on the same instances."""
    s = settings
    runs = [Run(b, s.explore_arms, "low", s.explore_instances, s.explore_horizon) for b in ("ucb", "random")]
    runs += [Run("llm", s.explore_arms, "low", s.explore_instances, s.explore_horizon, model, s.explore_cot,
                 s.explore_decision, max_new_tokens=s.explore_tokens, exploration=mechanism,
                 temperature=s.explore_temperature)
             for model in s.explore_models for mechanism in MECHANISMS]
    return runs


def exploration_table(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per model x mechanism (and per reference agent): final regret and coverage with
    95% intervals, the share of invalid steps, the share of arms the model chose (``chosen_by``
    other than the mechanism's own arms), and against the same model without a mechanism:
    Welch's p and Hedges' g for regret and coverage."""
    from paperlib.stats import hedges_g_ci, mean_ci, welch

    mechanism = episodes["exploration"] if "exploration" in episodes else pd.Series("none", index=episodes.index)
    frame = episodes.assign(exploration=mechanism.fillna("none").where(episodes["agent"] == "llm", episodes["agent"]),
                            invalid=episodes["invalid_steps"] / episodes["horizon"])
    chosen = steps.assign(by_model=steps["chosen_by"].isin(["model", "revision", "vote"])
                          ).groupby("run")["by_model"].mean() if "chosen_by" in steps else pd.Series(dtype=float)
    rows = []
    for (model, mechanism, run), group in frame.groupby(["model", "exploration", "run"], sort=False):
        row = {"model": model, "exploration": mechanism, "run": run, "instances": len(group),
               "invalid": group["invalid"].mean(), "chosen_by_model": chosen.get(run, float("nan"))}
        plain = frame[(frame["model"] == model) & (frame["exploration"] == "none")]
        for metric in ("regret", "coverage"):
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = mean_ci(group[metric])
            if mechanism != "none" and len(plain) and not model.startswith("baseline:"):
                _, row[f"{metric}_p"] = welch(group[metric], plain[metric])
                row[f"{metric}_g"] = hedges_g_ci(group[metric], plain[metric])[0]
        rows.append(row)
    return pd.DataFrame(rows)


def exploration_sentences(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """A Markdown bullet per model: its plain coverage, regret and invalid share, each mechanism
    that changes coverage or regret significantly (Welch, ``alpha``), and, where most plain
    steps are invalid (played as random arms), that the comparison shows little, from
    :func:`exploration_table`."""
    lines = []
    for model, rows in table[~table["model"].str.startswith("baseline:")].groupby("model", sort=False):
        plain = rows[rows["exploration"] == "none"].iloc[0]
        changes = []
        for r in rows[rows["exploration"] != "none"].itertuples():
            moved = [f"{metric} {getattr(r, metric):.2f} ({'up' if getattr(r, metric) > plain[metric] else 'down'}, "
                     f"p = {getattr(r, metric + '_p'):.2g})" for metric in ("coverage", "regret")
                     if getattr(r, metric + "_p") < alpha]
            changes.append(f"{r.exploration}: {'; '.join(moved) if moved else 'no significant change'}")
        lines.append(f"- **{model}** without a mechanism: coverage {plain['coverage']:.2f}, regret "
                     f"{plain['regret']:.2f}, {plain['invalid']:.0%} of its steps invalid (each played as a random "
                     f"arm). " + ". ".join(changes) + ".")
        if plain["invalid"] > 0.5:
            lines.append(f"  Most of {model}'s steps are invalid, so its coverage is mostly the random fallback's, not "
                         "its own exploration: a mechanism can show little beyond that here.")
    return "\n".join(lines)


def knowing_doing_claims_table(table: pd.DataFrame, matrices: dict[str, pd.DataFrame], source: str | os.PathLike,
                               profile: str) -> pd.DataFrame:
    """Notebook 13's runs (``knowing_doing_summary``) in the claims schema: per run, the share of
    correct rationales (B16; the paper's effect: most of them) and the correct-and-greedy cell
    of the matrix (B10; the paper's gap: with a correct rationale, greedy more often than
    optimal), as :func:`knowing_doing_sentences` reads them. ``source``: the runs' store."""
    rows = []
    for row in table.to_dict("records"):
        correct = matrices[row["run"]].loc["correct"]
        model = f"{row['run'].split('/')[1]} ({row['run'].split('/')[3]})"
        rows += [
            {"reported": "B16", "what": "share of steps with a correct rationale (%)", "model": model,
             "ours": 100 * row["correct rationale"], "effect_if": "above 50%",
             "shown": row["correct rationale"] > 0.5,
             "note": f"wrote any UCB value in {row['wrote any UCB value']:.0%} of {row['steps']} steps"},
            {"reported": "B10", "what": "correct rationale and greedy action (% of steps)", "model": model,
             "ours": correct["greedy"], "effect_if": "above the correct-and-optimal cell (the knowing-doing gap)",
             "shown": correct["greedy"] > correct["optimal"],
             "note": f"correct and optimal {correct['optimal']:.1f}%, correct and other {correct['other']:.1f}%"},
        ]
    return claims_table(pd.DataFrame(rows).assign(source=source_name(source)), "13_knowing_doing_gap", profile)
