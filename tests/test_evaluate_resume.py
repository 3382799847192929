"""The evaluation harness resumes an interrupted run: nothing lost, nothing duplicated, and
the result equals an uninterrupted run's."""

import pandas as pd
import pytest

from paperlib.data import RolloutStore
from paperlib.philosophers.evaluate import KEY, evaluate
from paperlib.philosophers.scripted import make_scripted


class Crash(RuntimeError):
    pass


class CrashingPolicy:
    """The random policy, until its ``calls``-th turn, where the process 'dies'."""

    def __init__(self, calls):
        self.inner, self.calls = make_scripted("random"), calls

    def reset(self, seeds):
        self.inner.reset(seeds)

    def act(self, turns):
        self.calls -= 1
        if self.calls == 0:
            raise Crash("interrupted")
        return self.inner.act(turns)


GRID = dict(ns=[3, 4], episodes=5, rounds=4, seed=11, batch_episodes=2, progress=False)


def test_an_interrupted_run_resumes_without_loss_or_duplicates(tmp_path):
    reference_episodes, reference_steps = evaluate("policy:random", **GRID)
    store = RolloutStore(tmp_path / "run")
    # 3 batches at N=3 (2+2+1 episodes) of 4 turns each; die in N=4's second batch
    with pytest.raises(Crash):
        evaluate("policy:random", store=store, policy=CrashingPolicy(calls=3 * 4 + 4 + 2), **GRID)
    saved = store.episodes()
    assert sorted(saved[["n", "episode"]].itertuples(index=False, name=None)) == [(3, e) for e in range(5)] + [
        (4, 0),
        (4, 1),
    ]
    episodes, steps = evaluate("policy:random", store=store, **GRID)
    assert len(episodes) == 10 and not episodes.duplicated(KEY).any()
    assert not steps.duplicated(["model", "n", "episode", "turn", "seat"]).any()
    assert len(store.episodes()) == 10  # on disk too
    order = ["n", "episode"]
    ours, theirs = (
        episodes.sort_values(order).reset_index(drop=True),
        reference_episodes.sort_values(order).reset_index(drop=True),
    )
    pd.testing.assert_frame_equal(ours[theirs.columns], theirs, check_dtype=False)
    step_order = ["n", "episode", "turn", "seat"]
    pd.testing.assert_frame_equal(
        steps.sort_values(step_order).reset_index(drop=True)[reference_steps.columns],
        reference_steps.sort_values(step_order).reset_index(drop=True),
        check_dtype=False,
    )


def test_a_finished_run_is_not_replayed(tmp_path):
    store = RolloutStore(tmp_path / "run")
    evaluate("policy:waiter", store=store, **GRID)
    parts = sorted(p.name for p in (tmp_path / "run" / "episodes").iterdir())
    episodes, _ = evaluate("policy:waiter", store=store, policy=CrashingPolicy(calls=1), **GRID)  # would crash if asked
    assert sorted(p.name for p in (tmp_path / "run" / "episodes").iterdir()) == parts and len(episodes) == 10


@pytest.mark.parametrize(
    "change, message",
    [
        ({"rounds": 5}, "rounds=4, not 5"),
        ({"seed": 12}, "first_seed=11, not 12"),
        ({"labels": {"profile": "cpu"}}, "profile=unset, not cpu"),
    ],
)
def test_resuming_with_other_settings_is_refused(tmp_path, change, message):
    store = RolloutStore(tmp_path / "run")
    evaluate("policy:random", store=store, **GRID)
    with pytest.raises(ValueError, match=message):
        evaluate("policy:random", store=store, **{**GRID, **change})
