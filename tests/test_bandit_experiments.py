"""The runs behind notebooks 11-13: which runs a profile makes, resuming, summaries and claims."""

import zlib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

from paperlib import profiles
from paperlib.bandits import experiments
from paperlib.bandits.experiments import Run
from paperlib.bandits.llm import frequency_bias_scores
from paperlib.bandits.metrics import frequency_bias
from paperlib.data import write_parquet
from paperlib.reports import common, n11_greediness, n12_frequency_bias, n13_knowing_doing, n15_exploration


@pytest.mark.parametrize("name", ["smoke", "cpu", "paper"])
def test_every_profile_makes_distinct_runs(name):
    settings = profiles.get_profile(name)
    runs = experiments.greediness_runs(settings)
    assert len({run.id for run in runs}) == len(runs)
    llm = [run for run in runs if run.agent == "llm"]
    assert {run.model for run in llm} == {
        *settings.bandit_models,
        *settings.bandit_compare_models,
        *settings.bandit_sweep_models,
    }
    assert {run.decision for run in llm} == set(settings.bandit_decisions)
    assert all(run.instances == settings.bandit_size(run.model, "bandit_llm_instances") for run in llm)
    assert all(run.decision == "free" for run in llm if run.model in settings.bandit_free_only)
    kd = experiments.knowing_doing_runs(settings)
    assert all(
        run.style == "knowing_doing" and run.max_new_tokens == settings.bandit_size(run.model, "kd_tokens")
        for run in kd
    )


def test_a_free_only_model_plays_the_papers_protocol_at_its_own_sizes():
    settings = replace(
        profiles.get_profile("cpu"),
        bandit_models=("tiny-lm", "big-lm"),
        bandit_compare_models=("tiny-lm", "big-lm"),
        bandit_sweep_models=("big-lm",),
        bandit_free_only=("big-lm",),
        bandit_model_sizes={"big-lm": {"bandit_llm_instances": 16, "bandit_cot_tokens": 0, "kd_tokens": 512}},
        kd_models=("tiny-lm", "big-lm"),
    )
    assert settings.bandit_size("big-lm", "kd_tokens") == 512 and settings.bandit_size("tiny-lm", "kd_tokens") == 16
    llm = [run for run in experiments.greediness_runs(settings) if run.agent == "llm"]
    big = [run for run in llm if run.model == "big-lm"]
    # no CoT run (0 tokens), free only: the compare run is its main run, once; the sweeps free too
    assert {(run.arms, run.noise, run.cot, run.decision, run.instances) for run in big} == {
        (10, "low", False, "free", 16),
        (20, "low", False, "free", 16),
        (10, "medium", False, "free", 16),
        (10, "high", False, "free", 16),
    }
    assert len(big) == 4
    tiny = {(run.cot, run.decision, run.instances) for run in llm if run.model == "tiny-lm"}
    assert tiny == {(False, "constrained", 8), (True, "constrained", 8), (False, "free", 8)}
    kd = {(run.model, run.decision, run.max_new_tokens) for run in experiments.knowing_doing_runs(settings)}
    assert kd == {("tiny-lm", "constrained", 16), ("big-lm", "free", 512)}


def test_the_effects_one_model_alone_shows():
    table = pd.DataFrame(
        {
            "reported": ["B03", "B05", "B03", "B05", "B04"],
            "model": ["small (constrained)", "small (constrained)", "big (free)", "big (free)", "big (free)"],
            "verdict": ["contradicts", "supports", "supports", "supports", "cannot test"],
        }
    )
    assert common.effects_one_model_shows(table) == (
        "- **big (free)** shows the paper's effect in B03, which no other model here shows "
        "(the others' verdicts: small (constrained): contradicts)."
    )
    assert common.effects_one_model_shows(table[table["reported"] == "B05"]).startswith("No model shows")


def test_the_paper_profile_is_the_papers_setting():
    paper = profiles.get_profile("paper")
    runs = experiments.greediness_runs(paper)
    assert {run.model for run in runs if run.agent == "llm"} == {"gemma2-2b", "gemma2-9b", "gemma2-27b"}
    assert {run.instances for run in runs} == {64} and {run.horizon for run in runs} == {50}
    assert {run.max_new_tokens for run in runs if run.cot} == {256} and paper.kd_tokens == 2048
    assert paper.bandit_figure_decision == "free"


def test_run_ids_name_what_changes_the_rollouts():
    run = Run("llm", 10, "low", 8, 50, "gemma3-270m", cot=True, decision="constrained", max_new_tokens=8)
    assert run.id == "llm/gemma3-270m/cot/constrained/tokens8/k10/low/T50/M8"
    assert (
        replace(run, cot=False, max_new_tokens=None).id == "llm/gemma3-270m/no_cot/constrained/tokens16/k10/low/T50/M8"
    )
    assert Run("ucb", 5, "high", 64, 50).id == "ucb/k5/high/T50/M64"


def test_run_all_saves_and_resumes(tmp_path):
    runs = [Run(agent, 5, "low", 3, 10) for agent in ("random", "ucb")]
    episodes, steps = experiments.run_all(runs, tmp_path, backend_of=None)
    assert set(episodes["run"]) == {r.id for r in runs} and len(steps) == 2 * 3 * 10
    parts = sorted((tmp_path / "episodes").iterdir())
    again, _ = experiments.run_all(runs[:1], tmp_path, backend_of=None)  # nothing left to play
    assert sorted((tmp_path / "episodes").iterdir()) == parts and set(again["run"]) == {runs[0].id}
    pd.testing.assert_frame_equal(again, episodes[episodes["run"] == runs[0].id].reset_index(drop=True))


def test_summary_and_claims_on_baselines(tmp_path):
    settings = profiles.get_profile("smoke")
    runs = [Run(agent, 10, "low", 8, 50) for agent in ("random", "ucb", "greedy")]
    episodes, steps = experiments.run_all(runs, tmp_path, backend_of=None)
    summary = experiments.summarise(episodes, "constrained")
    assert summary.set_index("label").loc["ucb", "coverage"] == 1.0  # UCB tries every arm first
    assert summary["in_figure"].all() and (summary["valid"] == 1.0).all()
    steps = experiments.with_runs(steps, summary)
    assert n11_greediness.stagnation_step(steps[steps["label"] == "ucb"].groupby("turn")["coverage"].mean()) == 9
    claims = n11_greediness.greediness_claims(summary, steps, settings, common.paper_numbers())
    assert claims["ours"].isna().all() and claims["shown"].isna().all()  # no LLM run: nothing to compare, and said so
    assert set(claims["id"]) == {"B01/B02", "B03", "B04", "B05"}


def test_the_papers_knowing_doing_matrix():
    matrix = n13_knowing_doing.paper_knowing_doing(common.paper_numbers())
    assert matrix.loc["correct"].tolist() == [21.6, 58.1, 10.6] and matrix.loc["wrong"].tolist() == [0.6, 7.2, 2.0]


def _llm_run(model, decision, cot, actions, invalid=(), arms=10, instances=2):
    """Hand-made episode and step rows of an LLM run that plays ``actions`` in every instance;
    the turns in ``invalid`` are steps without a valid ACTION= (the runner's random arm)."""
    run = Run("llm", arms, "low", instances, len(actions), model, cot, decision).id
    turns = range(1, len(actions) + 1)
    tried = [len(set(actions[:t])) / arms for t in turns]
    steps = pd.DataFrame(
        [
            {
                "run": run,
                "episode": e,
                "turn": t,
                "action": a,
                "valid": t not in invalid,
                "coverage": c,
                "regret": 0.1 * t,
            }
            for e in range(instances)
            for t, a, c in zip(turns, actions, tried)
        ]
    )
    episodes = pd.DataFrame(
        [
            {
                "run": run,
                "agent": "llm",
                "model": model,
                "cot": cot,
                "decision": decision,
                "arms": arms,
                "noise": "low",
                "horizon": len(actions),
                "episode": e,
                "coverage": tried[-1],
                "regret": 0.1 * len(actions),
                "invalid_steps": len(invalid),
            }
            for e in range(instances)
        ]
    )
    return episodes, steps


@pytest.fixture(scope="module")
def greedy_coder(tmp_path_factory):
    """Baselines on the 10-armed bandit beside two hand-made models: ``tiny-lm`` in both decision
    modes and ``coder-lm`` in free mode only, which tries arm 0, then arm 1, writes no valid
    ACTION= once (the random arm 5 is played) and stays on arm 1."""
    runs = [Run(agent, 10, "low", 8, 50) for agent in ("random", "ucb", "greedy")]
    episodes, steps = experiments.run_all(runs, tmp_path_factory.mktemp("runs"), backend_of=None)
    coder = [0, 1, 5] + [1] * 47
    frames = [
        (episodes, steps),
        _llm_run("tiny-lm", "constrained", True, [2] * 50),
        _llm_run("tiny-lm", "constrained", False, [2] * 50),
        _llm_run("tiny-lm", "free", False, list(range(10)) * 5),
        _llm_run("coder-lm", "free", False, coder, invalid=(3,)),
    ]
    episodes, steps = (pd.concat(parts, ignore_index=True) for parts in zip(*frames))
    summary = experiments.summarise(episodes, "constrained")
    settings = replace(profiles.get_profile("smoke"), bandit_models=("tiny-lm",), bandit_main_arms=10)
    return settings, summary, experiments.with_runs(steps, summary)


def test_a_model_without_a_run_in_the_figures_mode_is_shown_in_its_own(greedy_coder):
    _, summary, _ = greedy_coder
    shown = summary.set_index(["model", "cot", "decision"])
    assert shown.loc[("coder-lm", False, "free"), ["label", "in_figure"]].tolist() == ["coder-lm no CoT (free)", True]
    assert shown.loc[("tiny-lm", False, "free"), ["label", "in_figure"]].tolist() == ["tiny-lm no CoT", False]
    assert shown.loc[("tiny-lm", False, "constrained"), ["label", "in_figure"]].tolist() == ["tiny-lm no CoT", True]


def test_the_claims_cover_a_free_only_model(greedy_coder):
    settings, summary, steps = greedy_coder
    claims = n11_greediness.greediness_claims(summary, steps, settings, common.paper_numbers())
    assert claims["model"].unique().tolist() == ["tiny-lm", "coder-lm"]
    coder = claims[claims["model"] == "coder-lm"].set_index("id")
    assert (coder["decision"] == "free").all()
    assert coder.loc["B03", "ours"] == 0.3 and coder.loc["B03", "the effect, if"] == "below UCB's 1.00"
    assert bool(coder.loc["B03", "shown"])
    assert coder.loc["B05", "ours"] == 3 and "no CoT" in coder.loc["B05", "claim"]  # read on its no-CoT curve
    assert coder.loc[["B01/B02", "B04"], "shown"].isna().all()  # no CoT run, no 20-arm run: not run
    tiny = claims[claims["model"] == "tiny-lm"].set_index("id")
    assert (tiny["decision"] == "constrained").all() and tiny.loc["B03", "the effect, if"] == "below the CoT run"
    assert tiny.loc["B01/B02", "ours"] == 0.1 and not tiny.loc["B03", "shown"]
    assert n11_greediness.claims_sentences(claims).splitlines() == [
        "- **tiny-lm (constrained)**: the paper's effect shown in B01/B02, B05; not shown in B03; "
        "not run on this profile for B04.",
        "- **coder-lm (free)**: the paper's effect shown in B03, B05; not run on this profile for B01/B02, B04.",
    ]


def test_own_choices_leave_out_the_random_arm_of_an_invalid_step(greedy_coder):
    _, _, steps = greedy_coder
    choices = n11_greediness.own_choices(steps).set_index("run")
    coder = Run("llm", 10, "low", 2, 50, "coder-lm", False, "free").id
    assert choices.loc[coder, "arms_chosen"] == 2 and choices.loc[coder, "top_share"] == pytest.approx(48 / 49)
    assert not choices.index.str.startswith(("ucb", "random", "greedy")).any()


def test_the_sentences_of_notebook_11(greedy_coder):
    _, summary, steps = greedy_coder
    text = n11_greediness.llm_run_sentences(summary, n11_greediness.own_choices(steps), 10, 50)
    assert len(text.splitlines()) == 4
    assert (
        "- **coder-lm no CoT (free)**: a valid `ACTION=` in 98% of its steps (the others played a random "
        "arm); coverage after 50 steps 0.30 (UCB 1.00, random "
    ) in text
    assert (
        "the arms it chose itself: 2.0 of 10 per episode on average, 98% of its choices on the one it chose most."
        in text
    )
    assert "- **tiny-lm no CoT (free)**: a valid `ACTION=` in 100% of its steps; coverage after 50 steps 1.00" in text
    assert "- **tiny-lm CoT (constrained)**: coverage after 50 steps 0.10" in text  # no valid share: it is forced
    mute = summary.assign(valid=summary["valid"].where(summary["model"] != "coder-lm", 0.0))
    text = n11_greediness.llm_run_sentences(
        mute, n11_greediness.own_choices(steps[steps["model"] != "coder-lm"]), 10, 50
    )
    assert (
        "- **coder-lm no CoT (free)**: a valid `ACTION=` in 0% of its steps (every step played a random arm); "
        "coverage after 50 steps 0.30"
    ) in text and text.endswith("it never chose an arm itself.")
    baselines = n11_greediness.baseline_sentence(summary, steps, 10)
    assert baselines.startswith(
        "On the 10-armed bandit at low noise UCB had tried 100% of the arms by step 10; "
        "after 50 steps the baselines covered: ucb 100% (regret "
    )
    short = steps[steps["turn"] <= 6]  # a horizon shorter than the arm count: UCB's coverage at its last step
    assert n11_greediness.baseline_sentence(summary, short, 10).startswith(
        "On the 10-armed bandit at low noise UCB had tried 60% of the arms by step 6; after 6 steps"
    )


class _PromptScores(dict):
    """A scripted backend's scores: fixed per prompt, drawn from the prompt's text."""

    def __missing__(self, prompt):
        return np.random.default_rng(zlib.crc32(prompt.encode())).normal(size=3)


def _frequency_settings(**changes):
    tiny = dict(
        freq_models=("scripted",), freq_arms=3, freq_lengths=(2, 3), freq_repetitions=(0, 2, 4), freq_histories=2
    )
    return replace(profiles.get_profile("smoke"), **(tiny | changes))


def _score_calls(backend):
    return [prompts for kind, prompts, _ in backend.calls if kind == "score"]


class _KilledBackend(ScriptedBackend):
    """Interrupted (as by Ctrl-C) at its ``at``-th scoring call."""

    def __init__(self, at):
        super().__init__(scores=_PromptScores())
        self.at = at

    def score(self, prompts, candidates, streams=None):
        if len(_score_calls(self)) + 1 == self.at:
            raise KeyboardInterrupt
        return super().score(prompts, candidates, streams)


def test_frequency_bias_rows_equal_the_old_per_model_cache(tmp_path):
    settings = _frequency_settings()
    backend, old_backend = ScriptedBackend(scores=_PromptScores()), ScriptedBackend(scores=_PromptScores())
    spec, cases, _ = experiments.frequency_bias_setup(settings)
    old = frequency_bias(cases, frequency_bias_scores(old_backend, spec, cases), spec)  # what the old cache held
    write_parquet(old.assign(probs=old["probs"].map(list)), tmp_path / "12_frequency_bias_scripted.parquet")
    results = experiments.frequency_bias_results(settings, lambda model: backend, tmp_path / "store")
    assert list(results) == ["scripted"] and (results["scripted"]["model"] == "scripted").all()
    pd.testing.assert_frame_equal(
        results["scripted"].drop(columns=["model", "cases"]),
        pd.read_parquet(tmp_path / "12_frequency_bias_scripted.parquet"),
        check_exact=True,
    )
    assert _score_calls(backend) == _score_calls(old_backend)  # the same batches, in the same order
    assert len(list((tmp_path / "store" / "episodes").iterdir())) == 3  # a shard per number of repetitions


def test_a_killed_frequency_bias_run_resumes_where_it_stopped(tmp_path):
    settings = _frequency_settings(freq_models=("scripted", "other"))
    complete = experiments.frequency_bias_results(
        settings, lambda model: ScriptedBackend(scores=_PromptScores()), tmp_path / "complete"
    )
    killed = _KilledBackend(at=5)  # in the second model's second batch
    with pytest.raises(KeyboardInterrupt):
        experiments.frequency_bias_results(settings, lambda model: killed, tmp_path / "resumed")
    assert killed.calls[-1][0] == "forget"
    resumed = ScriptedBackend(scores=_PromptScores())
    results = experiments.frequency_bias_results(settings, lambda model: resumed, tmp_path / "resumed")
    assert [len(prompts) for prompts in _score_calls(resumed)] == [2 * 2] * 2  # only the two batches not stored
    for model in settings.freq_models:
        pd.testing.assert_frame_equal(results[model], complete[model])


def test_frequency_bias_rows_of_other_settings_are_kept_apart(tmp_path):
    fewer = _frequency_settings(freq_repetitions=(0, 2))
    first = experiments.frequency_bias_results(fewer, lambda model: ScriptedBackend(scores=_PromptScores()), tmp_path)
    backend = ScriptedBackend(scores=_PromptScores())
    results = experiments.frequency_bias_results(_frequency_settings(), lambda model: backend, tmp_path)
    assert len(_score_calls(backend)) == 3 and len(results["scripted"]) == 2 * 2 * 3  # none reused from the others
    pd.testing.assert_frame_equal(experiments.stored_frequency_bias(fewer, tmp_path)["scripted"], first["scripted"])
    assert first["scripted"]["cases"].iloc[0] != results["scripted"]["cases"].iloc[0]
    with pytest.raises(
        FileNotFoundError,
        match=r"^\S+ holds 0 of the 12 scored cases of unscored on these settings "
        r"\(cases [0-9a-f]{12}\): score them with generate = True$",
    ):
        experiments.stored_frequency_bias(_frequency_settings(freq_models=("unscored",)), tmp_path)


@pytest.mark.parametrize(
    "change, seed",
    [
        (dict(freq_arms=4), 0),
        (dict(freq_lengths=(2, 4)), 0),
        (dict(freq_repetitions=(0, 2, 5)), 0),
        (dict(freq_histories=3), 0),
        ({}, 1),
    ],
)
def test_the_frequency_bias_digest_names_every_setting_of_the_cases(change, seed):
    digest = experiments.frequency_bias_setup(_frequency_settings())[2]
    assert experiments.frequency_bias_setup(_frequency_settings())[2] == digest
    assert experiments.frequency_bias_setup(_frequency_settings(**change), seed)[2] != digest


def _frequency_result(entropy, strategy):
    repetitions = np.repeat([0, 5, 10, 15], 3)
    return pd.DataFrame(
        {
            "repetitions": repetitions,
            "entropy": entropy(repetitions) + np.tile([0.0, 0.1, 0.2], 4),
            "strategy": strategy,
        }
    )


def test_the_sentences_of_notebook_12():
    results = {
        "copier": _frequency_result(lambda r: 2.0 - r / 10, ["frequent"] * 11 + ["greedy"]),
        "explorer": _frequency_result(lambda r: r / 10, ["other"] * 12),
    }
    claims = common.frequency_bias_claims(results, common.paper_numbers())
    lines = n12_frequency_bias.frequency_bias_sentences(claims).splitlines()
    assert (
        lines[0].startswith("- **copier**: r = -0.9")
        and "92% of its predictions are the most frequent action" in lines[0]
    )
    assert lines[0].endswith("It shows the 2B's frequency bias.") and "(p = " in lines[0]
    assert "paper 2B / 27B: -0.67 / 0.61" in lines[0] and "paper frequent 2B / 27B: 0.96 / 0.14" in lines[0]
    assert lines[1].startswith("- **explorer**: r = +0.9") and lines[1].endswith(
        "It does not show the 2B's frequency bias."
    )


def test_the_sentences_of_notebook_13():
    runs = [
        "llm/tiny-lm/knowing_doing/constrained/tokens16/k10/low/T4/M2",
        "llm/tiny-lm/knowing_doing/free/tokens16/k10/low/T4/M2",
    ]
    table = pd.DataFrame(
        {
            "run": runs,
            "steps": [8, 8],
            "wrote any UCB value": [1.0, 0.0],
            "correct rationale": [0.75, 0.0],
            "valid action": [1.0, 0.5],
        }
    )
    knows = pd.DataFrame(
        [[25.0, 50.0, 0.0], [0.0, 25.0, 0.0]], index=["correct", "wrong"], columns=["optimal", "greedy", "other"]
    )
    blind = pd.DataFrame(
        [[0.0, 0.0, 0.0], [25.0, 25.0, 50.0]], index=["correct", "wrong"], columns=["optimal", "greedy", "other"]
    )
    lines = n13_knowing_doing.knowing_doing_sentences(
        table, dict(zip(runs, (knows, blind))), common.paper_numbers()
    ).splitlines()
    assert lines[0] == (
        "- **tiny-lm (constrained)** wrote any UCB value in 100% of its 8 steps and a correct rationale in 75% "
        "(paper, Gemma2 27B: 87%); with a correct rationale it acted greedily in 50.0% and optimally in "
        "25.0% of all steps (paper, Gemma2 27B: 58.1 and 21.6). It shows the paper's knowing-doing gap."
    )
    assert lines[1].startswith("- **tiny-lm (free)** wrote any UCB value in 0%")
    assert lines[1].endswith("It does not show the paper's knowing-doing gap.")


def test_notebook_15_plays_every_mechanism_and_tests_each_against_none():
    from paperlib.bandits.exploration import MECHANISMS
    from paperlib.profiles import get_profile

    runs = experiments.exploration_runs(get_profile("smoke"))
    assert [r.agent for r in runs[:2]] == ["ucb", "random"] and [r.exploration for r in runs[2:]] == list(MECHANISMS)
    assert len({r.id for r in runs}) == len(runs) and all(
        "/temp1/" in r.id or "/temp1/explore-" in r.id for r in runs[2:]
    )
    assert "explore-" not in runs[2].id and runs[3].id.endswith("/explore-try_all/k10/low/T4/M2")
    # a run without a mechanism at temperature 0 keeps the id notebooks 11-13 stored it under
    assert experiments.Run("llm", 10, "low", 8, 50, "m").id == "llm/m/no_cot/free/tokens16/k10/low/T50/M8"

    episodes = pd.DataFrame(
        {
            "agent": ["llm"] * 6 + ["ucb"] * 3,
            "model": ["m"] * 6 + ["baseline:ucb"] * 3,
            "exploration": ["none"] * 3 + ["try_all"] * 3 + [None] * 3,
            "run": ["a"] * 3 + ["b"] * 3 + ["u"] * 3,
            "regret": [5.0, 6, 7, 2, 3, 4, 1, 1, 1],
            "coverage": [0.2, 0.3, 0.4, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "invalid_steps": 0,
            "horizon": 10,
        }
    )
    steps = pd.DataFrame({"run": ["a"] * 4 + ["b"] * 4, "chosen_by": ["model"] * 4 + ["try_all"] * 3 + ["model"]})
    table = experiments.exploration_table(episodes, steps).set_index("exploration")
    assert list(table.index) == ["none", "try_all", "ucb"]
    assert table.loc["try_all", "chosen_by_model"] == 0.25 and table.loc["none", "chosen_by_model"] == 1.0
    assert table.loc["try_all", "regret"] == 3.0 and table.loc["try_all", "regret_p"] < 0.05
    assert pd.isna(table.loc["none", "regret_p"]) and pd.isna(table.loc["ucb", "regret_p"])
    sentence = n15_exploration.exploration_sentences(table.reset_index())
    assert sentence.startswith(
        "- **m** without a mechanism: coverage 0.30, regret 6.00, 0% of its steps invalid (each "
        "played as a random arm). try_all: coverage 1.00 (up"
    )
    assert "random fallback" not in sentence
    mostly_invalid = experiments.exploration_table(episodes.assign(invalid_steps=8), steps)
    assert (
        "Most of m's steps are invalid, so its coverage is mostly the random fallback's"
        in n15_exploration.exploration_sentences(mostly_invalid)
    )


def test_the_knowing_doing_table_says_how_often_a_rationale_ended_before_the_token_limit():
    from paperlib.bandits.env import BanditSpec
    from paperlib.bandits.runner import run_bandit
    from paperlib.bandits.scripted import ScriptedKnowingDoingAgent

    _, steps = run_bandit(ScriptedKnowingDoingAgent(), BanditSpec(10, 4), 2, 0)
    steps = steps.assign(run="llm/x", finish_reason=["length", "stop", "stop", "stop"] * 2)
    _, table = experiments.knowing_doing_summary(steps, 10)
    assert table.loc[0, "ended before the token limit"] == 0.75 and table.loc[0, "steps"] == 8
    _, table = experiments.knowing_doing_summary(steps.drop(columns="finish_reason"), 10)
    assert np.isnan(table.loc[0, "ended before the token limit"])
