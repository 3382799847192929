"""Paper A's reward on hand-computed episodes, and its degenerate maximum."""

import pytest

from paperlib.philosophers import reward
from paperlib.philosophers.bound import max_meals
from paperlib.philosophers.episode import run_episodes
from paperlib.philosophers.scripted import make_scripted


def play(name, n=5, rounds=5, mode="simultaneous"):
    episodes, steps = run_episodes(make_scripted(name), n=n, rounds=rounds, seeds=[0], mode=mode)
    return episodes.iloc[0], steps


def test_weights_are_the_paper_s():
    assert (reward.ALPHA, reward.BETA, reward.GAMMA, reward.DELTA) == (1.0, 0.5, 0.3, 0.1)


@pytest.mark.parametrize("n", [5, 10, 15])
def test_no_action_is_the_degenerate_maximum_and_shaping_removes_it(n):
    row, _ = play("no_action", n=n)
    assert (row.r_nd, row.r_thru, row.r_fair, row.r_idle) == (1.0, 0.0, 0.0, 0.0)
    assert row.reward == 1.0 and row.reward_unclipped == 1.0
    assert row.reward_shaped == 0.0


def test_always_think_pays_the_idle_penalty():
    row, _ = play("always_think")
    assert row.r_idle == 1.0 and row.reward == pytest.approx(0.9)
    # shaped: no meal, so no no-deadlock credit: 0 - 0.1 clips to 0
    assert row.reward_shaped == 0.0


def test_left_first_deadlock_scores_zero():
    row, _ = play("left_first")
    assert row.deadlock and row.r_nd == 0.0 and row.meals_total == 0
    assert row.reward == 0.0 and row.reward_unclipped == 0.0


def test_resource_hierarchy_at_n5_by_hand():
    # Round 1: P0-P3 take their left forks; P4 wants fork 0 too and loses it to P0 (invalid).
    # Round 2: only P3's right fork (4) is free: P3 takes it, the others think.
    # Round 3: P3 eats; the others think. Rounds 4-5: P3 puts forks 4 then 3 down; others think.
    # meals (0, 0, 0, 1, 0); 25 calls, 16 of them think, 1 invalid.
    row, steps = play("resource_hierarchy")
    assert list(row.meals) == [0, 0, 0, 1, 0]
    assert (row.actions_total, row.think_actions, row.invalid_actions, row.no_actions) == (25, 16, 1, 0)
    best = max_meals(5, 5, "simultaneous")
    # r_fair: variance of (0,0,0,1,0) is 0.2 - 0.2**2 = 0.16; the normaliser m^2/4 with m = 1 is 0.25
    assert row.r_fair == pytest.approx(0.64)
    assert row.r_idle == pytest.approx(16 / 25)
    assert row.r_thru == pytest.approx(1 / best)
    expected = 1.0 + 0.5 / best - 0.3 * 0.64 - 0.1 * 0.64
    assert row.reward_unclipped == pytest.approx(expected)
    assert row.reward == pytest.approx(min(1.0, expected))
    assert row.reward_shaped == pytest.approx(min(1.0, expected))  # it ate, so shaping changes nothing


def test_clipping_keeps_the_unclipped_value():
    # N = 2, R = 3: one philosopher can eat once (pick, pick, eat); that is also the table's maximum.
    outcome = reward.EpisodeOutcome(
        n=2, rounds=3, mode="simultaneous", meals=(1, 0), deadlock=False, think_actions=0, actions_total=6
    )
    row = reward.score(outcome)
    assert row["r_thru"] == 1.0
    assert row["r_fair"] == 1.0  # variance 0.25 of (1, 0) over the largest possible, 1/4
    assert row["reward_unclipped"] == pytest.approx(1.2)
    assert row["reward"] == 1.0


def test_per_philosopher_meal_bound():
    # a meal takes pick, pick, eat, then two put-downs before the next pick: meals at rounds 3, 8, 13, ...
    assert [reward.max_meals_per_philosopher(r) for r in range(0, 14)] == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3]


def test_variants_become_columns():
    row = reward.score(reward.EpisodeOutcome(5, 5, "simultaneous", (0,) * 5, False, 0, 0))
    assert set(row) == {"r_nd", "r_thru", "r_fair", "r_idle", "reward", "reward_unclipped", "reward_shaped"}
