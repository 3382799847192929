"""The order the test files run in (the longest first), and fixtures several test modules share:
a smoke run of each trainer on its game (SmolLM2, two steps), trained once per session and read by
the slow tests of that game, the check that a stopped run resumes to the same log, and the check
that a run's record replays to the same adapters."""

import shutil

import pandas as pd
import pytest

from paperlib.training.checkpoints import RunDir, file_hash

# [ours: CI time] the files that take longest, handed out first to the two test processes of
# ./reproduce.sh test (-n 2 --dist loadfile --no-loadscope-reorder), so that neither is left with a
# long one at the end. Their seconds in the full suite on 2 cores, one thread a process: 973, 716,
# 487, 280, 223, 213, 197 and 183 of 3,776 in all; the suite took 1,935 s, 2.5% over half of that
# sum (the two processes about evenly loaded)
LONGEST_FIRST = (
    "test_notebooks.py",
    "test_grpo.py",
    "test_precision.py",
    "test_rlft_tictactoe.py",
    "test_hf_backend.py",
    "test_models.py",
    "test_rlft_bandits.py",
    "test_rlft_distributed.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def _measured(log: pd.DataFrame) -> list[str]:
    """A training log's columns that are measurements (timings, memory): they differ between runs."""
    return [c for c in log.columns if c.endswith(("seconds", "_gb"))]


def _smoke_run(tmp_path_factory, name, settings, train):
    out = tmp_path_factory.mktemp(name)
    return settings, RunDir(out), train(settings, out, progress=False)


@pytest.fixture(scope="session")
def grpo_smoke_run(tmp_path_factory):
    """GRPO on the table's smoke recipe with the positive control's reward (the paper's is 1.0 for
    every smoke episode: no call, no deadlock, no signal): (settings, its RunDir, its log)."""
    from paperlib.philosophers.training import recipe
    from paperlib.training.grpo import train

    return _smoke_run(tmp_path_factory, "grpo", recipe("smoke", reward="valid"), train)


@pytest.fixture(scope="session")
def bandit_smoke_run(tmp_path_factory):
    """RLFT on the bandits' smoke recipe: (settings, its RunDir, its log)."""
    from paperlib.bandits.training import recipe
    from paperlib.training.rlft.loop import train

    return _smoke_run(tmp_path_factory, "rlft_bandits", recipe("smoke"), train)


@pytest.fixture(scope="session")
def tictactoe_smoke_run(tmp_path_factory):
    """RLFT on tic-tac-toe's smoke recipe, with its value head: (settings, its RunDir, its log)."""
    from paperlib.tictactoe.training import recipe
    from paperlib.training.rlft.loop import train

    return _smoke_run(tmp_path_factory, "rlft_tictactoe", recipe("smoke"), train)


@pytest.fixture
def resumes_to_the_same_log(tmp_path):
    """A check: ``train`` stopped after its first step in a fresh directory, then rerun in what a new
    checkout holds (its kept resume point, not the trainer's checkpoint), ends with
    ``uninterrupted``'s log (timings aside) and trains nothing more when run again."""

    def check(settings, train, uninterrupted):
        first = train(settings, tmp_path, stop_after=1, progress=False)
        assert list(first["step"]) == [1] and RunDir(tmp_path).steps_saved() == [1]
        shutil.rmtree(RunDir(tmp_path).checkpoint(1))  # a new checkout: the kept resume point is what is left
        assert RunDir(tmp_path).last_step() == 1
        resumed = train(settings, tmp_path, progress=False)
        timing = _measured(uninterrupted)
        pd.testing.assert_frame_equal(resumed.drop(columns=timing), uninterrupted.drop(columns=timing))
        assert train(settings, tmp_path, progress=False).equals(resumed)  # finished: nothing to do

    return check


@pytest.fixture
def replays_to_the_same_adapters(tmp_path):
    """A check: a finished smoke run's record and kept/ without its checkpoints (what a checkout
    keeps: the last adapter) is returned as it is by ``train``, which makes no checkpoint;
    ``train(..., replay=True)`` brings every checkpoint back, each holding the adapter its log row
    names, and ends with the same log."""

    def check(smoke_run, train):
        settings, run, log = smoke_run
        record = tmp_path / "record"
        top = str(run.path)  # what git holds: all but the trainer's checkpoints (kept/ holds copies)
        shutil.copytree(run.path, record, ignore=lambda d, names: [n for n in names if d == top and "checkpoint-" in n])
        last = int(log["step"].max())
        assert train(settings, record, progress=False).equals(log) and RunDir(record).steps_saved() == [last]
        replayed = train(settings, record, progress=False, replay=True)
        timing = _measured(log)
        pd.testing.assert_frame_equal(replayed.drop(columns=timing), log.drop(columns=timing))
        saved = RunDir(record).steps_saved()
        assert saved == list(log["step"])
        assert [file_hash(RunDir(record).checkpoint(k)) for k in saved] == list(log["adapter_hash"])

    return check
