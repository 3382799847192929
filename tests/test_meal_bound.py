"""max_meals against an exhaustive search over every joint action sequence, with env.py's rules.

The search knows nothing of canonical meals: from each table state (who holds each
fork, who is ready) it tries every joint action and plays it with env.play_round
(simultaneous) or env.act seat by seat (sequential), memoising the most meals still
reachable with r rounds left. Agreement with max_meals is what verifies the
dominance arguments bound.py relies on.
"""

from __future__ import annotations

import itertools

import pytest

from paperlib.philosophers.bound import exact_by_ring, exact_by_sweep, max_meals, max_meals_upper_bound
from paperlib.philosophers.env import ACTIONS, NO_ACTION, act, initial_table, is_deadlock, play_round

MODES = ("simultaneous", "sequential")


def _may_succeed(table, i):
    """The actions of philosopher i that succeed for at least one choice of the others.

    Every other action fails whatever the others do, and a failed action changes
    nothing, like "none"; "think" changes nothing either. In a simultaneous round
    only i changes what i holds, and ``eat`` is judged on the start of the round,
    so: eat needs both forks and ready; put_down needs the fork; pick_up needs a
    fork i does not hold (a neighbour may put it down first). ``test_pruning_is_lossless``
    checks this against all seven actions per philosopher.
    """
    left, right = table.holds(i)
    out = [NO_ACTION]
    if left and right and table.ready[i]:
        out.append("eat")
    out += ["put_down_left"] * left + ["put_down_right"] * right
    out += ["pick_up_left"] * (not left) + ["pick_up_right"] * (not right)
    return out


def brute_force(n, rounds, mode, stop_on_deadlock=False, prune=True):
    """[most meals any joint action sequence reaches in r rounds for r = 0..rounds]."""
    memo, successors_of = {}, {}

    def successors(table):
        """{(holder, ready): (meals gained this round, next table)}, best per next state."""
        out = {}
        if mode == "simultaneous":
            choices = [_may_succeed(table, i) if prune else ACTIONS for i in range(n)]
            for actions in itertools.product(*choices):
                nxt = play_round(table, actions, mode)[0]
                gained = sum(nxt.meals) - sum(table.meals)
                key = (nxt.holder, nxt.ready)
                if key not in out or out[key][0] < gained:
                    out[key] = (gained, nxt)
            return out
        out = {(table.holder, table.ready): (0, table)}
        for i in range(n):  # seat by seat: each philosopher acts on the table left by the earlier ones
            layer = {}
            for gained, state in out.values():
                for action in ACTIONS:
                    nxt = act(state, i, action)[0]
                    total = gained + sum(nxt.meals) - sum(state.meals)
                    key = (nxt.holder, nxt.ready)
                    if key not in layer or layer[key][0] < total:
                        layer[key] = (total, nxt)
            out = layer
        return out

    def best(table, left):
        if left == 0:
            return 0
        key = (table.holder, table.ready, left)
        if key not in memo:
            state = (table.holder, table.ready)
            if state not in successors_of:
                successors_of[state] = successors(table)
            memo[key] = max(
                gained + (0 if stop_on_deadlock and is_deadlock(nxt) else best(nxt, left - 1))
                for gained, nxt in successors_of[state].values()
            )
        return memo[key]

    return [best(initial_table(n), r) for r in range(rounds + 1)]


# N -> largest R searched (every R up to it is checked); once every reachable state
# has been met, more rounds cost little.
SEARCH = {
    "simultaneous": {2: 20, 3: 20, 4: 15, 5: 10},
    "sequential": {2: 20, 3: 20, 4: 15, 5: 12},
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_max_meals_equals_exhaustive_search(n, mode):
    top = SEARCH[mode][n]
    assert [max_meals(n, r, mode) for r in range(top + 1)] == brute_force(n, top, mode)


@pytest.mark.parametrize("mode", MODES)
def test_pruning_is_lossless(mode):
    for n, top in ((2, 7), (3, 5)):
        assert brute_force(n, top, mode, prune=False) == brute_force(n, top, mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_two_exact_solvers_agree_with_max_meals(mode):
    ring = {r: exact_by_ring(r, mode, 50) for r in range(10)}
    assert all(max_meals(n, r, mode) == ring[r][n] for r in ring for n in range(2, 51))
    for n in range(2, 7):
        assert exact_by_sweep(n, 40, mode) == [max_meals(n, r, mode) for r in range(1, 41)]


def test_hand_checked_values():
    for mode in MODES:
        # The fastest meal is pick, pick, eat: nothing in fewer than 3 rounds.
        assert [max_meals(7, r, mode) for r in range(3)] == [0, 0, 0]
        # N = 2, R = 3: one philosopher takes a fork in round 1, the other in round 2,
        # eats in round 3; the other philosopher shares both forks, so 1 meal.
        assert max_meals(2, 3, mode) == 1
        # R = 3 or 4: every meal is eaten in round 3 or 4 with forks taken in rounds
        # 1-2 and still held, so eaters sit apart: floor(N/2).
        assert [max_meals(n, r, mode) for n in (2, 5, 10) for r in (3, 4)] == [1, 1, 2, 2, 5, 5]
        # R = 5: one meal each at most (a second needs round >= 3 + 5). Neighbours
        # eating in rounds 3 and 5 hand their fork over in round 4 (put down first,
        # taken second); a round-5 eater cannot take both forks from round-3 eaters,
        # so eaters come in pairs with a gap: floor(2N/3).
        assert [max_meals(n, 5, mode) for n in (5, 10, 15)] == [3, 6, 10]
    # N = 2, R = 6, simultaneous: meals in rounds 3 and 6 (the forks pass over in
    # rounds 4 and 5). Sequential: philosopher 1 eats first, hands its forks to
    # philosopher 0, who acts first, one round late: 3 and 7 - but 0 then 1 works.
    assert max_meals(2, 6, "simultaneous") == max_meals(2, 6, "sequential") == 2
    # Sequential, N = 2, R = 9: 0 eats at 3, 1 at 6 (same-round hand-over 0 -> 1),
    # 1 -> 0 costs a round, so 0's next meal is at 10: still 2; simultaneous gets 3.
    assert (max_meals(2, 9, "simultaneous"), max_meals(2, 9, "sequential")) == (3, 2)


@pytest.mark.parametrize("mode", MODES)
def test_monotone_in_rounds_and_below_the_bounds(mode):
    for n in (2, 3, 5, 10, 11, 15, 50):
        top = 50 if n <= 11 or mode == "simultaneous" else 18
        values = [max_meals(n, r, mode) for r in range(top + 1)]
        assert values == sorted(values)
        for r, v in enumerate(values):
            assert v <= n * ((r + 2) // 5)  # one philosopher: a meal per 5 rounds, first at 3
            assert v <= max_meals_upper_bound(n, r, "simultaneous")
            assert v <= max_meals(n, r, "simultaneous")


def test_simultaneous_formula_values():
    # R = 3k: N*k/2, one less for odd N when N*k is even (parity at the start).
    assert [max_meals(n, 6) for n in (4, 5)] == [4, 4]
    # R = 3k+1 gains nothing over 3k for even N; R = 3k+2: N*k*(k+1)/(2k+1).
    assert (max_meals(4, 7), max_meals(5, 8), max_meals(50, 50)) == (4, 6, 412)


def test_deadlock_stop_can_cost_meals():
    # Documented in bound.py: max_meals plays every round. With the episode's stop at
    # a deadlock (every philosopher holding one fork) N = 2 loses a meal at R = 6:
    # the second eater must take a fork the first has just put down, while the first
    # still holds the other.
    assert brute_force(2, 6, "simultaneous", stop_on_deadlock=True)[6] == 1 < max_meals(2, 6, "simultaneous")
    assert brute_force(4, 6, "simultaneous", stop_on_deadlock=True)[6] == 3 < max_meals(4, 6, "simultaneous")
    assert brute_force(3, 8, "simultaneous", stop_on_deadlock=True) == [max_meals(3, r) for r in range(9)]


def test_outside_the_known_region():
    with pytest.raises(NotImplementedError, match="no exact sequential maximum"):
        max_meals(20, 30, "sequential")
    assert max_meals_upper_bound(20, 30, "sequential") == max_meals(20, 30, "simultaneous")
    assert max_meals(60, 9, "sequential") >= max_meals(50, 9, "sequential")


@pytest.mark.parametrize(
    "args, message",
    [
        ((1, 5, "simultaneous"), "at least 2"),
        ((5, -1, "simultaneous"), "zero or more"),
        ((5, 5, "async"), "unknown mode"),
    ],
)
def test_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message) as error:
        max_meals(*args)
    assert "\n" not in str(error.value)


def test_zero_rounds():
    assert max_meals(5, 0, "simultaneous") == max_meals(5, 0, "sequential") == 0
