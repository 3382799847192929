"""``paperlib philosophers run``: the output files, and one-line errors for bad input."""

import os
import subprocess
import sys

import pandas as pd
import pytest

EPISODE_COLUMNS = {
    "episode",
    "seed",
    "policy",
    "n",
    "rounds",
    "mode",
    "deadlock",
    "deadlock_round",
    "meals",
    "meals_total",
    "actions_total",
    "think_actions",
    "invalid_actions",
    "no_actions",
    "r_nd",
    "r_thru",
    "r_fair",
    "r_idle",
    "reward",
    "reward_unclipped",
    "reward_shaped",
}
STEP_COLUMNS = {"episode", "seed", "seat", "turn", "action", "valid", "holds_left", "holds_right", "meals"}


def paperlib(*args):
    return subprocess.run([sys.executable, "-m", "paperlib.cli", *args], capture_output=True, text=True)


def test_run_writes_episode_and_step_rows(tmp_path):
    out, steps_out = tmp_path / "ep.parquet", tmp_path / "st.parquet"
    result = paperlib(
        "philosophers",
        "run",
        "--policy",
        "random",
        "--n",
        "5",
        "--episodes",
        "4",
        "--rounds",
        "6",
        "--seed",
        "7",
        "--out",
        str(out),
        "--steps-out",
        str(steps_out),
    )
    assert result.returncode == 0, result.stderr
    episodes, steps = pd.read_parquet(out), pd.read_parquet(steps_out)
    assert EPISODE_COLUMNS <= set(episodes.columns) and STEP_COLUMNS <= set(steps.columns)
    assert list(episodes["seed"]) == [7, 8, 9, 10] and (episodes["policy"] == "random").all()
    assert len(steps) == 5 * episodes["rounds_played"].sum()
    assert set(steps["action"]) <= {
        "pick_up_left",
        "pick_up_right",
        "put_down_left",
        "put_down_right",
        "eat",
        "think",
        "none",
    }
    # one episode reruns alone from its own seed
    alone = tmp_path / "alone.parquet"
    paperlib(
        "philosophers",
        "run",
        "--policy",
        "random",
        "--episodes",
        "1",
        "--rounds",
        "6",
        "--seed",
        "9",
        "--out",
        str(alone),
    )
    assert pd.read_parquet(alone)["meals"].iloc[0].tolist() == episodes["meals"].iloc[2].tolist()


def test_sequential_mode_is_recorded(tmp_path):
    out = tmp_path / "ep.parquet"
    assert (
        paperlib(
            "philosophers",
            "run",
            "--policy",
            "left_first",
            "--mode",
            "sequential",
            "--episodes",
            "2",
            "--out",
            str(out),
        ).returncode
        == 0
    )
    episodes = pd.read_parquet(out)
    assert (episodes["mode"] == "sequential").all() and episodes["deadlock"].all()
    assert (episodes["deadlock_round"] == 1).all()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "random", "--n", "1"], "at least 2 philosophers"),
        (["--policy", "dijkstra"], "invalid choice: 'dijkstra'"),
        (["--policy", "random", "--episodes", "-3"], "must be a positive integer"),
        (["--policy", "random", "--rounds", "0"], "must be a positive integer"),
        (["--policy", "random", "--seed", "-1"], "must be zero or more"),
        (["--policy", "random", "--mode", "async"], "invalid choice: 'async'"),
    ],
)
def test_bad_arguments_fail_with_one_line(tmp_path, args, message):
    result = paperlib("philosophers", "run", *args, "--out", str(tmp_path / "x.parquet"))
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.parquet").exists()


def test_unwritable_path_fails_with_one_line(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        target = locked / "sub" / "ep.parquet"
        result = paperlib("philosophers", "run", "--policy", "random", "--out", str(target))
        if os.geteuid() == 0:  # root writes anywhere; use a path under a file instead
            blocker = tmp_path / "file"
            blocker.write_text("x")
            result = paperlib("philosophers", "run", "--policy", "random", "--out", str(blocker / "ep.parquet"))
        assert result.returncode == 2
        assert "cannot" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    finally:
        locked.chmod(0o700)


def test_existing_output_is_kept_when_a_run_fails(tmp_path):
    out = tmp_path / "ep.parquet"
    assert paperlib("philosophers", "run", "--policy", "waiter", "--out", str(out)).returncode == 0
    before = out.read_bytes()
    result = paperlib("philosophers", "run", "--policy", "waiter", "--n", "0", "--out", str(out))
    assert result.returncode == 2 and out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ep.parquet"]  # no temp file left behind


def test_scripted_run_loads_no_model_library(tmp_path):
    # a scripted run must not pay for importing torch or transformers
    code = (
        "import sys; from paperlib.cli import main;"
        f"main(['philosophers', 'run', '--policy', 'random', '--episodes', '1', '--out', r'{tmp_path / 'e.parquet'}']);"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False"


# -- paperlib philosophers eval ------------------------------------------------------------


def test_eval_writes_a_store_and_resumes_without_redoing(tmp_path):
    out = tmp_path / "run"
    args = [
        "philosophers",
        "eval",
        "--model",
        "policy:random",
        "--n",
        "3",
        "5",
        "--episodes",
        "3",
        "--rounds",
        "4",
        "--out",
        str(out),
    ]
    first = paperlib(*args)
    assert first.returncode == 0, first.stderr
    assert "policy:random N=3: 3 episodes" in first.stdout and "N=5" in first.stdout
    parts = sorted(p.name for p in (out / "episodes").iterdir())
    assert len(parts) == 2 and [p.name for p in (out / "steps").iterdir()]
    again = paperlib(*args)
    assert again.returncode == 0 and sorted(p.name for p in (out / "episodes").iterdir()) == parts
    more = paperlib(*args[:-6], "--episodes", "5", "--rounds", "4", "--out", str(out))
    episodes = pd.concat(pd.read_parquet(p) for p in sorted((out / "episodes").iterdir()))
    assert more.returncode == 0 and len(episodes) == 10 and not episodes.duplicated(["n", "episode"]).any()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "policy:random", "--decision", "free"], "--decision: scripted policies take no agent options"),
        (["--model", "policy:dijkstra"], "unknown policy 'dijkstra'"),
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--model", "smollm2-135m", "--n", "5", "1"], "at least 2 philosophers"),
        (["--model", "smollm2-135m", "--temperature", "-0.5"], "must be zero or more"),
        (["--model", "smollm2-135m", "--decision", "greedy"], "invalid choice: 'greedy'"),
        (["--model", "smollm2-135m", "--prompt", "v9"], "invalid choice: 'v9'"),
        (["--model", "gpt-5.4", "--backend", "openai", "--decision", "constrained"], "the openai backend cannot"),
        (["--model", "gpt-5.4", "--backend", "openai"], "set PAPERLIB_OPENAI_BASE_URL"),
        (["--model", "policy:random", "--episodes", "0"], "must be a positive integer"),
    ],
)
def test_eval_bad_arguments_fail_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    from paperlib.cli import main

    for name in ("PAPERLIB_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    try:  # in process, through the same main() as the console script
        code = main(["philosophers", "eval", *args, "--out", str(tmp_path / "run")])
    except SystemExit as exit:
        code = exit.code
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1


def test_eval_refuses_to_mix_settings_in_one_directory(tmp_path):
    out = str(tmp_path / "run")
    assert (
        paperlib(
            "philosophers", "eval", "--model", "policy:waiter", "--n", "3", "--episodes", "2", "--out", out
        ).returncode
        == 0
    )
    result = paperlib(
        "philosophers",
        "eval",
        "--model",
        "policy:waiter",
        "--n",
        "3",
        "--episodes",
        "2",
        "--mode",
        "sequential",
        "--out",
        out,
    )
    assert result.returncode == 2 and "mode=simultaneous, not sequential" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "1"], "at least 2 philosophers"),
        (["--naive", "1"], "--naive must be at least 2"),
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
    ],
)
def test_bench_bad_arguments_fail_with_one_line(capsys, args, message):
    from paperlib.cli import main

    try:
        code = main(["bench", "philosophers", *args])
    except SystemExit as exit:
        code = exit.code
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1
