"""Fixtures several test modules share: a smoke run of each trainer on its game (SmolLM2, two
steps), trained once per session and read by the slow tests of that game, and the check that
a stopped run resumes to the same log."""

import pandas as pd
import pytest

from paperlib.training.checkpoints import RunDir


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
    """A check: ``train`` stopped after its first step in a fresh directory, then rerun, ends with
    ``uninterrupted``'s log (timings aside) and trains nothing more when run again."""

    def check(settings, train, uninterrupted):
        first = train(settings, tmp_path, stop_after=1, progress=False)
        assert list(first["step"]) == [1] and RunDir(tmp_path).steps_saved() == [1]
        resumed = train(settings, tmp_path, progress=False)
        timing = [c for c in uninterrupted.columns if c.endswith("seconds")] + ["peak_rss_gb"]  # measurements
        pd.testing.assert_frame_equal(resumed.drop(columns=timing), uninterrupted.drop(columns=timing))
        assert train(settings, tmp_path, progress=False).equals(resumed)  # finished: nothing to do

    return check
