"""The scripted baselines as the environment's test bench: deadlock and its cures."""

import random

import numpy as np
import pandas as pd
import pytest

from paperlib.philosophers.env import TOOLS
from paperlib.philosophers.episode import episode_seeds, run_episodes
from paperlib.philosophers.scripted import SCRIPTED, make_scripted

MODES = ["simultaneous", "sequential"]


def play(name, n, rounds=5, episodes=3, seed=0, mode="simultaneous"):
    return run_episodes(make_scripted(name), n=n, rounds=rounds, seeds=episode_seeds(seed, episodes), mode=mode)


def test_names_are_exactly_the_issue_s():
    assert set(SCRIPTED) == {"no_action", "always_think", "random", "left_first", "resource_hierarchy", "waiter"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", range(2, 21))
def test_left_first_deadlocks_in_round_one(n, mode):
    episodes, steps = play("left_first", n, mode=mode)
    assert episodes["deadlock"].all()
    assert (episodes["deadlock_round"] == 1).all()
    assert (episodes["rounds_played"] == 1).all()  # deadlock is terminal
    assert (steps["action"] == "pick_up_left").all() and steps["valid"].all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["resource_hierarchy", "waiter"])
def test_deadlock_free_policies_never_deadlock_and_do_eat(name, mode):
    for n in range(2, 21):
        for rounds in (5, 12):
            episodes, _ = play(name, n, rounds=rounds, episodes=2, seed=n, mode=mode)
            assert not episodes["deadlock"].any(), (n, rounds)
            assert (episodes["meals_total"] > 0).all(), (n, rounds)
            assert (episodes["rounds_played"] == rounds).all()


def test_resource_hierarchy_philosopher_n_minus_1_starts_with_fork_zero():
    _, steps = play("resource_hierarchy", 5, rounds=1, episodes=1)
    first = steps.set_index("seat")["action"]
    assert list(first) == ["pick_up_left"] * 4 + ["pick_up_right"]


def test_waiter_never_lets_everyone_hold_a_fork():
    for mode in MODES:
        _, steps = play("waiter", 6, rounds=16, episodes=1, mode=mode)
        holding = steps.assign(any_fork=steps["holds_left"] | steps["holds_right"])
        assert holding.groupby("turn")["any_fork"].sum().max() <= 5


def test_no_action_and_always_think():
    episodes, steps = play("no_action", 5)
    assert (steps["action"] == "none").all() and (episodes["no_actions"] == 25).all()
    assert (episodes["actions_total"] == 0).all() and (episodes["meals_total"] == 0).all()
    episodes, steps = play("always_think", 5)
    assert (steps["action"] == "think").all() and (episodes["think_actions"] == 25).all()
    assert (episodes["invalid_actions"] == 0).all()


def test_random_is_uniform_over_the_six_tools_and_seeded():
    episodes, steps = play("random", 5, rounds=20, episodes=60, seed=3)
    shares = steps["action"].value_counts(normalize=True)
    assert set(shares.index) == set(TOOLS)
    assert shares.between(1 / 6 - 0.04, 1 / 6 + 0.04).all(), shares
    again_episodes, again_steps = play("random", 5, rounds=20, episodes=60, seed=3)
    pd.testing.assert_frame_equal(steps, again_steps)
    pd.testing.assert_frame_equal(episodes, again_episodes)
    other, _ = play("random", 5, rounds=20, episodes=60, seed=4)
    assert not other["meals"].equals(episodes["meals"])


def test_random_episode_is_the_same_alone_or_in_a_batch_and_ignores_global_rngs():
    _, batch = play("random", 5, rounds=10, episodes=8, seed=100)
    np.random.seed(1)
    random.seed(1)
    _, alone = play("random", 5, rounds=10, episodes=1, seed=105)
    from_batch = batch[batch["seed"] == 105].drop(columns="episode").reset_index(drop=True)
    pd.testing.assert_frame_equal(from_batch, alone.drop(columns="episode"))


def test_random_sometimes_deadlocks_and_sometimes_eats():
    episodes, _ = play("random", 3, rounds=20, episodes=200, seed=0)
    assert 0 < episodes["deadlock"].mean() < 1
    assert episodes["meals_total"].max() > 0


def test_unknown_policy():
    with pytest.raises(ValueError, match="unknown policy 'dijkstra'"):
        make_scripted("dijkstra")
