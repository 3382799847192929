"""Paper B's exploration mechanisms (Fig. 8) on a scripted model: each changes the arms
played as it should, against numbers worked out by hand, and the command line exposes them."""

import re

import numpy as np
import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

from paperlib.bandits.env import BanditSpec
from paperlib.bandits.exploration import Exploration, majority_vote, settings_table
from paperlib.bandits.llm import LLMAgent, make_llm_agent
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import build_prompt, history_lines, revision_request, summary_lines
from paperlib.bandits.runner import run_bandit
from paperlib.cli import main

SPEC = BanditSpec(4, horizon=6)  # blue, green, red, yellow


def scripted_agent(texts, mechanism="none", **options):
    """The no-CoT agent on a backend that writes ``texts`` in order, and that backend."""
    exploration = Exploration(mechanism, **{k: options.pop(k) for k in ("epsilon", "samples") if k in options})
    backend = ScriptedBackend(texts)
    return LLMAgent(backend, style="no_cot", exploration=exploration, **options), backend


@pytest.fixture
def no_model(monkeypatch):
    def load(kind, model):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("paperlib.bandits.llm.make_backend", load)


def generated(backend):
    """The prompts of each generate call."""
    return [prompts for kind, prompts, _ in backend.calls if kind == "generate"]


# -- try-all ------------------------------------------------------------------------------


def test_try_all_plays_every_arm_once_first_whatever_the_model_says():
    agent, backend = scripted_agent(["ACTION=red"] * 6, "try_all")
    episodes, steps = run_bandit(agent, SPEC, 3, seed=1)
    first = steps[steps["turn"] <= 4]
    assert (first["action"] == first["turn"] - 1).all()  # blue, green, red, yellow in every instance
    assert (first["chosen_by"] == "try_all").all() and (first["raw_completion"] == "").all()
    assert first["prompt"].isna().all()
    later = steps[steps["turn"] > 4]
    assert (later["arm"] == "red").all() and (later["chosen_by"] == "model").all()
    calls = generated(backend)
    assert len(calls) == 2 and all(len(prompts) == 3 for prompts in calls)  # the model is asked at steps 5 and 6 only
    assert calls[0][0].count("Step=") == 4
    assert (episodes["coverage"] == 1.0).all() and (episodes["exploration"] == "try_all").all()


def test_try_all_with_fewer_steps_than_arms_plays_the_first_arms():
    agent, backend = scripted_agent([], "try_all")
    _, steps = run_bandit(agent, BanditSpec(5, horizon=3), 2, seed=0)
    assert steps["action"].tolist() == [0, 1, 2, 0, 1, 2] and not generated(backend)


# -- epsilon-greedy -----------------------------------------------------------------------

ANSWERS = ["ACTION=green", "ACTION=red", "no answer", "ACTION=blue"]


def test_epsilon_zero_is_the_plain_agent_step_for_step():
    runs = []
    for mechanism in ("none", "epsilon_greedy"):
        agent, backend = scripted_agent(ANSWERS * 6, mechanism, epsilon=0.0, temperature=1.0, seed=5, reuse_kv=False)
        runs.append((run_bandit(agent, SPEC, 4, seed=2)[1], backend.calls))
    (plain, plain_calls), (greedy, greedy_calls) = runs
    for column in ("action", "valid", "reward", "raw_completion", "prompt", "chosen_by"):
        assert plain[column].tolist() == greedy[column].tolist(), column
    assert plain_calls == greedy_calls  # the same prompts and sampling seeds, call for call
    assert (~plain["valid"]).sum() == 6  # "no answer": the runner's random arm in both


def test_epsilon_one_plays_uniform_arms_without_asking_the_model():
    agent, backend = scripted_agent([], "epsilon_greedy", epsilon=1.0)
    _, steps = run_bandit(agent, BanditSpec(5, horizon=50), 40, seed=0)
    assert not generated(backend) and steps["valid"].all() and (steps["chosen_by"] == "epsilon_greedy").all()
    counts = np.bincount(steps["action"], minlength=5)
    chi_square = ((counts - 400) ** 2 / 400).sum()  # 2000 draws, 400 expected per arm
    assert chi_square < 18.47, counts  # the 0.1% point of chi-square with 4 degrees of freedom


def test_epsilon_replaces_that_share_of_the_models_arms_per_seed_instance_and_step():
    agent, backend = scripted_agent(["ACTION=red"] * 400, "epsilon_greedy", epsilon=0.3)
    episodes, steps = run_bandit(agent, BanditSpec(4, horizon=20), 20, seed=10)
    explored = steps["chosen_by"] == "epsilon_greedy"
    assert abs(explored.sum() - 120) < 4 * np.sqrt(400 * 0.3 * 0.7)  # 400 steps; 4 standard deviations
    assert (steps.loc[~explored, "arm"] == "red").all()
    assert set(steps.loc[explored, "action"]) == {0, 1, 2, 3}
    assert sum(len(prompts) for prompts in generated(backend)) == (~explored).sum()
    assert (episodes["epsilon"] == 0.3).all() and (episodes["samples"] == 1).all()
    # instance 2 of seed 10 is instance 0 of seed 12: the same coins and arms
    alone, _ = scripted_agent(["ACTION=red"] * 20, "epsilon_greedy", epsilon=0.3)
    _, single = run_bandit(alone, BanditSpec(4, horizon=20), 1, seed=12)
    third = steps[steps["episode"] == 2]
    assert single["chosen_by"].tolist() == third["chosen_by"].tolist()
    assert single["action"].tolist() == third["action"].tolist()


# -- context randomisation ----------------------------------------------------------------


def test_context_randomisation_shuffles_the_history_lines_per_seed():
    spec = BanditSpec(4, horizon=8)

    def prompts_and_steps(agent_seed):
        agent, _ = scripted_agent(
            ["ACTION=red", "ACTION=blue", "ACTION=green"] * 6, "context_randomisation", seed=agent_seed
        )
        return run_bandit(agent, spec, 2, seed=3)[1]

    steps = prompts_and_steps(0)
    out_of_order = 0
    for _, rows in steps.groupby("episode"):
        played = history_lines(spec, rows["action"], rows["reward"])
        for t, prompt in enumerate(rows["prompt"]):
            shown = [line for line in prompt.split("\n") if line.startswith("Step=")]
            assert sorted(shown) == sorted(played[:t])  # the same lines, each with its own step number
            out_of_order += shown != played[:t]
    # 12 prompts hold two lines or more; a uniform order keeps step order with chance 1/t!
    assert out_of_order >= 9
    assert prompts_and_steps(0)["prompt"].tolist() == steps["prompt"].tolist()
    assert prompts_and_steps(1)["prompt"].tolist() != steps["prompt"].tolist()


# -- context summary ----------------------------------------------------------------------


def test_summary_lines_count_and_average_by_hand():
    spec = BanditSpec(3)
    lines = summary_lines(spec, [0, 2, 0, 0], [0.5, 0.2, 0.1, 0.3])
    assert lines == [
        "blue: pressed 3 times, mean reward 0.30",
        "green: pressed 0 times",
        "red: pressed 1 time, mean reward 0.20",
    ]
    assert summary_lines(BanditSpec(2, variant="continuous"), [1, 1], [1.0, 0.0]) == [
        "0: chosen 0 times",
        "1: chosen 2 times, mean reward 0.50",
    ]
    prompt = build_prompt(spec, [0, 2, 0, 0], [0.5, 0.2, 0.1, 0.3], "cot", summary=True)
    assert "\n".join(lines) in prompt and "Step=" not in prompt
    assert build_prompt(spec, [], [], summary=True) == build_prompt(spec, [], [])  # nothing played yet


def test_context_summary_prompts_hold_the_counts_and_means_of_the_history():
    agent, _ = scripted_agent(["ACTION=red", "ACTION=red", "ACTION=yellow"] * 4, "context_summary")
    _, steps = run_bandit(agent, SPEC, 2, seed=4)
    line = re.compile(r"^(\w+): pressed (\d+) times?(?:, mean reward (-?\d+\.\d\d))?$", re.MULTILINE)
    for _, rows in steps.groupby("episode"):
        for t in range(1, SPEC.horizon):
            past = rows.iloc[:t]
            summary = line.findall(rows["prompt"].iloc[t])
            assert [name for name, _, _ in summary] == list(SPEC.names) and "Step=" not in rows["prompt"].iloc[t]
            for name, n, mean in summary:
                mine = past[past["arm"] == name]
                assert int(n) == len(mine)
                if mine.empty:
                    assert mean == ""
                else:
                    assert float(mean) == pytest.approx(mine["reward"].mean(), abs=0.005)


# -- self-correction ----------------------------------------------------------------------


def test_self_correction_asks_again_with_the_first_answer_and_plays_the_second():
    # per step: the two instances' first answers, then their revisions
    texts = ["ACTION=red", "ACTION=blue", "On reflection, ACTION=green", "no answer"] * 3
    agent, backend = scripted_agent(texts, "self_correction", reuse_kv=False)
    _, steps = run_bandit(agent, BanditSpec(4, horizon=3), 2, seed=0)
    calls = generated(backend)
    assert len(calls) == 6  # two per step
    first, second = calls[0], calls[1]
    # the scripted chat template joins the turns with "|": user, the first answer, the revision request
    assert second == [
        prompt[:-1] + f"|{answer}|{revision_request(SPEC, 'no_cot')}>"
        for prompt, answer in zip(first, ["ACTION=red", "ACTION=blue"])
    ]
    revised, unanswered = steps[steps["episode"] == 0], steps[steps["episode"] == 1]
    assert (revised["arm"] == "green").all() and revised["valid"].all() and (revised["first_action"] == 2).all()
    assert revised["prompt"].iloc[0] == second[0] and (revised["chosen_by"] == "revision").all()
    # the second answer is played even when it names no arm: the step is invalid
    assert not unanswered["valid"].any() and (unanswered["first_action"] == 0).all()
    assert (unanswered["first_completion"] == "ACTION=blue").all()


def test_revision_request_asks_for_the_prompts_answer_format():
    assert revision_request(SPEC, "no_cot").endswith(
        "Output only ACTION=X, where X is one of: blue, green, red, yellow. Do not write anything else."
    )
    assert "Think briefly" in revision_request(SPEC, "knowing_doing") and "UCB" not in revision_request(SPEC, "cot")


# -- self-consistency ---------------------------------------------------------------------

SAMPLES = {
    "ten red of 16": "BRGRRBRRGRRRYRRB",
    "8 green, 8 blue, green first": "GBGBGBGBGBGBGBGB",
    "8 blue, 8 green, blue first": "BGGBBGGBBGGBBGGB",
    "invalid samples do not vote": "xxxxxxxxxYYYYRRR",
    "no valid sample": "xxxxxxxxxxxxxxxx",
}
ANSWER = {"B": "ACTION=blue", "G": "ACTION=green", "R": "ACTION=red", "Y": "ACTION=yellow", "x": "ACTION=grey"}


def test_majority_vote_by_hand():
    assert majority_vote([2, 0, 2, None, None, None]) == 2
    assert majority_vote([3, 1, 1, 3]) == 3 and majority_vote([1, 3, 3, 1]) == 1
    assert majority_vote([None, None]) is None and majority_vote([]) is None


def test_self_consistency_plays_the_majority_of_its_samples():
    assert SAMPLES["ten red of 16"].count("R") == 10
    texts = [ANSWER[letter] for samples in SAMPLES.values() for letter in samples]
    agent, backend = scripted_agent(texts, "self_consistency", temperature=1.0)
    episodes, steps = run_bandit(agent, BanditSpec(4, horizon=1), len(SAMPLES), seed=0)
    assert steps["arm"].tolist()[:4] == ["red", "green", "blue", "yellow"]
    assert steps["valid"].tolist() == [True, True, True, True, False]
    assert (steps["chosen_by"] == "vote").all() and (episodes["samples"] == 16).all()
    arm_of = {"B": 0, "G": 1, "R": 2, "Y": 3, "x": -1}
    assert steps["sample_actions"].tolist() == [[arm_of[letter] for letter in s] for s in SAMPLES.values()]
    assert all(parse_action(text, SPEC.names) == arm for text, arm in zip(steps["raw_completion"][:4], steps["action"]))
    ((kind, prompts, options),) = [call for call in backend.calls if call[0] == "generate"]
    assert len(prompts) == 16 * len(SAMPLES) and len(set(prompts)) == 1  # one call, 16 copies per instance
    keys = options["streams"]  # one kept KV per instance: the first copy's
    assert all((key is None) == (j % 16 != 0) for j, key in enumerate(keys))


def test_self_correction_and_self_consistency_on_constrained_decisions():
    spec = BanditSpec(4, horizon=1)
    user = build_prompt(spec, [], [], "no_cot")
    first, second = f"{user}>ACTION=", f"{user}|ACTION=red|{revision_request(spec, 'no_cot')}>ACTION="
    backend = ScriptedBackend(scores={first: [-5.0, -5.0, -0.1, -5.0], second: [-5.0, -0.1, -5.0, -5.0]})
    agent = LLMAgent(backend, style="no_cot", decision="constrained", exploration=Exploration("self_correction"))
    _, steps = run_bandit(agent, spec, 2, seed=0)
    assert steps["arm"].tolist() == ["green", "green"] and (steps["first_action"] == 2).all()
    # at temperature 1 each sample is a draw with p(blue) = 0.98: blue wins the vote
    backend = ScriptedBackend(scores={first: [-0.05, -5.0, -5.0, -5.0]})
    agent = LLMAgent(
        backend, style="no_cot", decision="constrained", temperature=1.0, exploration=Exploration("self_consistency")
    )
    _, steps = run_bandit(agent, spec, 2, seed=0)
    assert steps["arm"].tolist() == ["blue", "blue"] and [len(votes) for votes in steps["sample_actions"]] == [16, 16]


def test_self_consistency_needs_sampling(no_model):
    with pytest.raises(ValueError, match="all alike at temperature 0"):
        scripted_agent([], "self_consistency")
    with pytest.raises(ValueError, match="all alike at temperature 0"):
        make_llm_agent("gemma3-270m", exploration=Exploration("self_consistency"))  # before loading the model


# -- settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"mechanism": "boldness"}, "unknown exploration mechanism 'boldness'"),
        ({"epsilon": 1.5}, r"epsilon must be in \[0, 1\], got 1.5"),
        ({"epsilon": -0.1}, r"epsilon must be in \[0, 1\]"),
        ({"samples": 0}, "samples must be at least 1, got 0"),
    ],
)
def test_bad_settings_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        Exploration(**options)


def test_every_setting_has_a_value_and_a_source():
    table = settings_table(Exploration("self_consistency"))
    assert table["source"].str.match(r"^(paper B §|ours)").all() and table["value"].str.len().gt(0).all()
    assert table.set_index("setting").loc["samples", "value"] == "16"


# -- the command line ---------------------------------------------------------------------


def run_cli(tmp_path, *args):
    try:
        return main(
            ["bandit", "run", *args, "--out", str(tmp_path / "ep.parquet"), "--steps-out", str(tmp_path / "st.parquet")]
        )
    except SystemExit as exc:  # argparse's own errors
        return exc.code


LLM = ["--agent", "llm", "--model", "gemma3-270m"]


@pytest.mark.parametrize(
    "args, message",
    [
        ([*LLM, "--exploration", "epsilon_greedy", "--epsilon", "1.5"], "--epsilon: must be in [0, 1], got 1.5"),
        ([*LLM, "--exploration", "epsilon_greedy", "--epsilon", "-0.5"], "--epsilon: must be in [0, 1], got -0.5"),
        (["--agent", "epsilon_greedy", "--epsilon", "2"], "--epsilon: must be in [0, 1], got 2"),
        ([*LLM, "--exploration", "self_consistency", "--samples", "0"], "--samples: must be a positive integer"),
        ([*LLM, "--exploration", "self_consistency"], "all alike at temperature 0"),
        ([*LLM, "--exploration", "try_all", "--samples", "4"], "--samples is for --exploration self_consistency"),
        ([*LLM, "--epsilon", "0.2"], "--epsilon is for --agent epsilon_greedy or --exploration epsilon_greedy"),
        ([*LLM, "--exploration", "boldness"], "invalid choice: 'boldness'"),
        (["--agent", "ucb", "--exploration", "try_all"], "exploration is for the LLM agent"),
    ],
)
def test_the_cli_refuses_bad_exploration_options_in_one_line_before_a_model_loads(
    tmp_path, capsys, no_model, args, message
):
    assert run_cli(tmp_path, *args) == 2
    stderr = capsys.readouterr().err
    assert message in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ep.parquet").exists()


@pytest.mark.parametrize(
    "args, chosen, columns",
    [
        (
            ["--exploration", "try_all"],
            {"try_all": 6, "model": 4},
            {"exploration": "try_all", "epsilon": 0.0, "samples": 1},
        ),
        (
            ["--exploration", "epsilon_greedy", "--epsilon", "1"],
            {"epsilon_greedy": 10},
            {"exploration": "epsilon_greedy", "epsilon": 1.0, "samples": 1},
        ),
        (
            ["--exploration", "self_consistency", "--samples", "3", "--temperature", "1"],
            {"vote": 10},
            {"exploration": "self_consistency", "epsilon": 0.0, "samples": 3},
        ),
        ([], {"model": 10}, {"exploration": "none", "epsilon": 0.0, "samples": 1}),
    ],
)
def test_the_cli_runs_a_mechanism_and_records_who_chose_each_arm(tmp_path, monkeypatch, args, chosen, columns):
    monkeypatch.setattr("paperlib.bandits.llm.make_backend", lambda kind, model: ScriptedBackend(["ACTION=red"] * 40))
    assert run_cli(tmp_path, *LLM, "--no-cot", "--arms", "3", "--horizon", "5", "--instances", "2", *args) == 0
    episodes, steps = pd.read_parquet(tmp_path / "ep.parquet"), pd.read_parquet(tmp_path / "st.parquet")
    assert steps["chosen_by"].value_counts().to_dict() == chosen
    assert episodes[list(columns)].drop_duplicates().to_dict("records") == [columns]
