"""The runner's frames, invalid-step fallback, storage, and ``paperlib bandit run``."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from paperlib.bandits.agents import make_agent
from paperlib.bandits.env import BanditEnv, BanditSpec
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import build_prompt
from paperlib.bandits.runner import run_bandit
from paperlib.data import RolloutStore, read_parquet, write_parquet
from paperlib.decisions import Decisions

EPISODE_COLUMNS = {
    "agent",
    "model",
    "arms",
    "noise",
    "horizon",
    "episode",
    "seed",
    "variant",
    "cot",
    "family",
    "regret",
    "coverage",
    "invalid_steps",
}
STEP_COLUMNS = {
    "episode",
    "seed",
    "seat",
    "turn",
    "action",
    "arm",
    "reward",
    "expected",
    "best",
    "regret",
    "coverage",
    "valid",
    "raw_completion",
}


class ScriptedTextAgent:
    """Stands in for the LLM agent: writes text from the history, parses it, returns -1 when invalid."""

    name, model, cot = "scripted_text", "test:scripted", True

    def reset(self, spec, seeds):
        self.spec = spec

    def act(self, history):
        texts, prompts = [], []
        for i in range(history.instances):
            prompts.append(build_prompt(self.spec, history.actions[i, : history.t], history.rewards[i, : history.t]))
            # instance 0 always answers blue; instance 1 answers a colour the game lacks
            texts.append("I think ACTION=blue" if i == 0 else "ACTION=violet")
        actions = [parse_action(t, self.spec.names) for t in texts]
        return Decisions(
            np.array([-1 if a is None else a for a in actions]), texts, {"prompt_chars": [len(p) for p in prompts]}
        )


def test_frames_hold_exact_regret_and_coverage():
    spec = BanditSpec(5, horizon=20)
    episodes, steps = run_bandit(make_agent("ucb"), spec, 3, seed=4, labels={"profile": "smoke"})
    assert EPISODE_COLUMNS <= set(episodes.columns) and STEP_COLUMNS <= set(steps.columns)
    assert len(episodes) == 3 and len(steps) == 60 and (episodes["profile"] == "smoke").all()
    assert episodes["seed"].tolist() == [4, 5, 6] and steps["turn"].min() == 1
    means = BanditEnv(spec, [4, 5, 6]).means
    for i, rows in steps.groupby("episode"):
        expected = means[i, rows["action"]]
        np.testing.assert_allclose(rows["expected"], expected)
        np.testing.assert_allclose(rows["regret"], np.cumsum(means[i].max() - expected))
        assert episodes.loc[i, "regret"] == rows["regret"].iloc[-1]
        assert episodes.loc[i, "coverage"] == rows["coverage"].iloc[-1] == len(set(rows["action"])) / 5
    assert (steps["arm"] == np.array(spec.names)[steps["action"]]).all()
    assert (episodes["invalid_steps"] == 0).all() and steps["valid"].all()


def test_invalid_outputs_play_a_random_arm_and_are_flagged():
    episodes, steps = run_bandit(ScriptedTextAgent(), BanditSpec(5, horizon=30), 2, seed=0)
    first, second = steps[steps["episode"] == 0], steps[steps["episode"] == 1]
    assert first["valid"].all() and (first["arm"] == "blue").all()
    assert not second["valid"].any() and second["action"].nunique() > 1  # random fallback arms
    assert episodes["invalid_steps"].tolist() == [0, 30]
    assert (second["raw_completion"] == "ACTION=violet").all()
    assert steps["prompt_chars"].iloc[1] > steps["prompt_chars"].iloc[0]  # the history grows
    assert episodes["model"].iloc[0] == "test:scripted" and episodes["cot"].all()


def test_an_agent_returning_bad_arms_is_refused():
    class Bad:
        name, model, cot = "bad", "bad", False

        def reset(self, spec, seeds):
            pass

        def act(self, history):
            return np.full(history.instances, 7)

    with pytest.raises(ValueError, match="bad returned"):
        run_bandit(Bad(), BanditSpec(5), 2)


def test_frames_round_trip_through_parquet_and_the_store(tmp_path):
    episodes, steps = run_bandit(ScriptedTextAgent(), BanditSpec(3, horizon=5), 2)
    write_parquet(steps, tmp_path / "steps.parquet")
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "steps.parquet"), steps, check_dtype=False)
    store = RolloutStore(tmp_path / "store")
    store.append(episodes, steps)
    assert store.finished(["agent", "seed"]) == {("scripted_text", 0), ("scripted_text", 1)}
    assert len(store.steps()) == 10


# -- the command line -------------------------------------------------------------------


def paperlib(*args):
    return subprocess.run([sys.executable, "-m", "paperlib.cli", *args], capture_output=True, text=True)


def test_run_writes_episode_and_step_rows(tmp_path):
    out, steps_out = tmp_path / "ep.parquet", tmp_path / "st.parquet"
    result = paperlib(
        "bandit",
        "run",
        "--agent",
        "ucb",
        "--arms",
        "5",
        "--noise",
        "medium",
        "--horizon",
        "20",
        "--instances",
        "4",
        "--seed",
        "7",
        "--family",
        "bernoulli",
        "--variant",
        "continuous",
        "--out",
        str(out),
        "--steps-out",
        str(steps_out),
    )
    assert result.returncode == 0, result.stderr
    episodes, steps = pd.read_parquet(out), pd.read_parquet(steps_out)
    assert episodes["seed"].tolist() == [7, 8, 9, 10] and len(steps) == 80
    row = episodes.iloc[0]
    assert (row["agent"], row["arms"], row["noise"], row["family"], row["variant"]) == (
        "ucb",
        5,
        "medium",
        "bernoulli",
        "continuous",
    )
    assert set(steps["arm"]) <= {"0", "1", "2", "3", "4"}
    assert "regret" in result.stdout
    # instance 2 (seed 9) reruns alone: same bandit, same rewards, and UCB draws nothing
    alone = tmp_path / "alone.parquet"
    assert (
        paperlib(
            "bandit",
            "run",
            "--agent",
            "ucb",
            "--arms",
            "5",
            "--horizon",
            "20",
            "--instances",
            "1",
            "--seed",
            "9",
            "--family",
            "bernoulli",
            "--variant",
            "continuous",
            "--out",
            str(alone),
        ).returncode
        == 0
    )
    assert pd.read_parquet(alone)["regret"].iloc[0] == episodes["regret"].iloc[2]


BAD_ARGUMENTS = [
    (["--agent", "ucb", "--arms", "1"], "at least 2 arms"),
    (["--agent", "ucb", "--arms", "21"], "20 colours"),
    (["--agent", "ucb", "--horizon", "-5"], "must be a positive integer"),
    (["--agent", "ucb", "--instances", "0"], "must be a positive integer"),
    (["--agent", "oracle"], "invalid choice: 'oracle'"),
    (["--agent", "ucb", "--noise", "extreme"], "invalid choice: 'extreme'"),
    (["--agent", "ucb", "--model", "gemma"], "model is for the LLM agent"),
    (["--agent", "llm"], "--agent llm needs --model"),
    (["--agent", "ucb", "--decision", "constrained"], "decision is for the LLM agent"),
    (["--agent", "llm", "--model", "gemma3-270m", "--temperature", "-1"], "--temperature: must be zero or more"),
    (["--agent", "llm", "--model", "gemma3-270m", "--no-cot", "--knowing-doing"], "cannot run without CoT"),
    (
        ["--agent", "llm", "--model", "gemma3-270m", "--backend", "openai", "--decision", "constrained"],
        "score text, which the openai backend cannot",
    ),
    (["--agent", "llm", "--model", "gemma-2-2b-it", "--no-cot"], "unknown model 'gemma-2-2b-it'"),
]


@pytest.mark.parametrize("args, message", BAD_ARGUMENTS)
def test_bad_arguments_fail_with_one_line(tmp_path, capsys, args, message):
    from paperlib.cli import main

    try:
        code = main(["bandit", "run", *args, "--out", str(tmp_path / "x.parquet")])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    stderr = capsys.readouterr().err
    assert code == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("args, message", [BAD_ARGUMENTS[0], BAD_ARGUMENTS[-1]])
def test_the_command_exits_2_with_one_line(tmp_path, args, message):
    # one error from the parser and one from the run, through the real entry point
    result = paperlib("bandit", "run", *args, "--out", str(tmp_path / "x.parquet"))
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_unwritable_path_fails_with_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a path under a file cannot be created, even by root
    result = paperlib("bandit", "run", "--agent", "random", "--out", str(blocker / "ep.parquet"))
    assert result.returncode == 2
    assert "directory" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bandit_run_loads_no_model_library(tmp_path):
    code = (
        "import sys; from paperlib.cli import main;"
        f"main(['bandit', 'run', '--agent', 'ucb', '--instances', '2', '--out', r'{tmp_path / 'e.parquet'}']);"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False"


@pytest.mark.slow
def test_run_with_an_embedded_llm(tmp_path):
    out, steps_out = tmp_path / "ep.parquet", tmp_path / "st.parquet"
    result = paperlib(
        "bandit",
        "run",
        "--agent",
        "llm",
        "--model",
        "smollm2-135m",
        "--decision",
        "constrained",
        "--no-cot",
        "--arms",
        "3",
        "--horizon",
        "3",
        "--instances",
        "2",
        "--seed",
        "4",
        "--out",
        str(out),
        "--steps-out",
        str(steps_out),
    )
    assert result.returncode == 0, result.stderr
    episodes, steps = pd.read_parquet(out), pd.read_parquet(steps_out)
    assert episodes["model"].tolist() == ["smollm2-135m"] * 2 and (episodes["decision"] == "constrained").all()
    assert episodes["prompt"].tolist() == ["bandit-v2/button/no_cot"] * 2 and (episodes["invalid_steps"] == 0).all()
    assert (steps["raw_completion"] == "ACTION=" + steps["arm"]).all() and len(steps["candidate_logprobs"].iloc[0]) == 3
