"""``paperlib philosophers run``: the output files, and one-line errors for bad input."""

import os
import subprocess
import sys

import pandas as pd
import pytest

EPISODE_COLUMNS = {
    "episode", "seed", "policy", "n", "rounds", "mode", "deadlock", "deadlock_round", "meals", "meals_total",
    "actions_total", "think_actions", "invalid_actions", "no_actions", "r_nd", "r_thru", "r_fair", "r_idle",
    "reward", "reward_unclipped", "reward_shaped",
}
STEP_COLUMNS = {"episode", "seed", "round", "philosopher", "action", "valid", "holds_left", "holds_right", "meals"}


def paperlib(*args):
    return subprocess.run([sys.executable, "-m", "paperlib.cli", *args], capture_output=True, text=True)


def test_run_writes_episode_and_step_rows(tmp_path):
    out, steps_out = tmp_path / "ep.parquet", tmp_path / "st.parquet"
    result = paperlib("philosophers", "run", "--policy", "random", "--n", "5", "--episodes", "4", "--rounds", "6",
                      "--seed", "7", "--out", str(out), "--steps-out", str(steps_out))
    assert result.returncode == 0, result.stderr
    episodes, steps = pd.read_parquet(out), pd.read_parquet(steps_out)
    assert EPISODE_COLUMNS <= set(episodes.columns) and STEP_COLUMNS <= set(steps.columns)
    assert list(episodes["seed"]) == [7, 8, 9, 10] and (episodes["policy"] == "random").all()
    assert len(steps) == 5 * episodes["rounds_played"].sum()
    assert set(steps["action"]) <= {"pick_up_left", "pick_up_right", "put_down_left", "put_down_right", "eat",
                                    "think", "none"}
    # one episode reruns alone from its own seed
    alone = tmp_path / "alone.parquet"
    paperlib("philosophers", "run", "--policy", "random", "--episodes", "1", "--rounds", "6", "--seed", "9",
             "--out", str(alone))
    assert pd.read_parquet(alone)["meals"].iloc[0].tolist() == episodes["meals"].iloc[2].tolist()


def test_sequential_mode_is_recorded(tmp_path):
    out = tmp_path / "ep.parquet"
    assert paperlib("philosophers", "run", "--policy", "left_first", "--mode", "sequential", "--episodes", "2",
                    "--out", str(out)).returncode == 0
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
    # its speed is measured by `paperlib bench philosophers-scripted`, not asserted here
    code = (
        "import sys; from paperlib.cli import main;"
        f"main(['philosophers', 'run', '--policy', 'random', '--episodes', '1', '--out', r'{tmp_path / 'e.parquet'}']);"
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False"
