"""The rules of the table, one tool and one invalid case at a time, and a hand-worked example."""

import pytest

from paperlib.philosophers.env import (
    FREE,
    Table,
    act,
    initial_table,
    is_deadlock,
    observe,
    play_round,
)


def table(holder, ready=None, meals=None):
    n = len(holder)
    return Table(n=n, holder=tuple(holder), ready=tuple(ready or [True] * n), meals=tuple(meals or [0] * n))


def solo(t, i, action, mode):
    """Philosopher i acts, everyone else takes no action."""
    actions = ["none"] * t.n
    actions[i] = action
    nxt, valid = play_round(t, actions, mode)
    return nxt, valid[i]


MODES = ["simultaneous", "sequential"]


@pytest.mark.parametrize("mode", MODES)
class TestTools:
    def test_pick_up_left_takes_fork_i(self, mode):
        nxt, ok = solo(initial_table(5), 2, "pick_up_left", mode)
        assert ok and nxt.holder == (FREE, FREE, 2, FREE, FREE)

    def test_pick_up_right_takes_fork_i_plus_one_wrapping(self, mode):
        nxt, ok = solo(initial_table(5), 4, "pick_up_right", mode)
        assert ok and nxt.holder == (4, FREE, FREE, FREE, FREE)

    def test_pick_up_a_fork_the_neighbour_holds_is_invalid(self, mode):
        start = table([FREE, FREE, 1, FREE, FREE])  # philosopher 1 holds its right fork, fork 2
        nxt, ok = solo(start, 2, "pick_up_left", mode)
        assert not ok and nxt.holder == start.holder

    def test_pick_up_a_fork_one_already_holds_is_invalid(self, mode):
        start = table([FREE, FREE, 2, FREE, FREE])
        nxt, ok = solo(start, 2, "pick_up_left", mode)
        assert not ok and nxt.holder == start.holder

    def test_put_down_left_frees_it(self, mode):
        nxt, ok = solo(table([FREE, FREE, 2, 2, FREE]), 2, "put_down_left", mode)
        assert ok and nxt.holder == (FREE, FREE, FREE, 2, FREE)

    def test_put_down_right_frees_it(self, mode):
        nxt, ok = solo(table([FREE, FREE, 2, 2, FREE]), 2, "put_down_right", mode)
        assert ok and nxt.holder == (FREE, FREE, 2, FREE, FREE)

    def test_put_down_a_free_fork_is_invalid(self, mode):
        start = initial_table(5)
        nxt, ok = solo(start, 0, "put_down_right", mode)
        assert not ok and nxt.holder == start.holder

    def test_put_down_the_neighbours_fork_is_invalid(self, mode):
        start = table([FREE, 0, FREE, FREE, FREE])  # fork 1 is philosopher 0's right, philosopher 1's left
        nxt, ok = solo(start, 1, "put_down_left", mode)
        assert not ok and nxt.holder == start.holder

    def test_eat_with_both_forks_counts_a_meal_and_keeps_the_forks(self, mode):
        nxt, ok = solo(table([FREE, 1, 1, FREE, FREE]), 1, "eat", mode)
        assert ok and nxt.meals == (0, 1, 0, 0, 0) and nxt.holder == (FREE, 1, 1, FREE, FREE)
        assert nxt.ready[1] is False

    @pytest.mark.parametrize("holder", [[FREE] * 5, [FREE, 1, FREE, FREE, FREE], [FREE, FREE, 1, FREE, FREE]])
    def test_eat_without_both_forks_is_invalid(self, mode, holder):
        nxt, ok = solo(table(holder), 1, "eat", mode)
        assert not ok and nxt.meals == (0,) * 5

    def test_eat_again_on_hoarded_forks_is_invalid(self, mode):
        fed, _ = solo(table([FREE, 1, 1, FREE, FREE]), 1, "eat", mode)
        again, ok = solo(fed, 1, "eat", mode)
        assert not ok and again.meals == fed.meals

    def test_empty_handed_again_makes_a_philosopher_ready(self, mode):
        t, _ = solo(table([FREE, 1, 1, FREE, FREE]), 1, "eat", mode)
        t, _ = solo(t, 1, "put_down_left", mode)
        assert t.ready[1] is False  # still holds the right fork
        t, _ = solo(t, 1, "put_down_right", mode)
        assert t.ready[1] is True
        t, _ = solo(t, 1, "pick_up_left", mode)
        t, _ = solo(t, 1, "pick_up_right", mode)
        t, ok = solo(t, 1, "eat", mode)
        assert ok and t.meals[1] == 2

    def test_think_is_valid_and_changes_nothing(self, mode):
        start = table([FREE, 1, 1, FREE, FREE])
        nxt, ok = solo(start, 3, "think", mode)
        assert ok and nxt.holder == start.holder and nxt.meals == start.meals

    def test_no_action_changes_nothing_and_is_not_a_valid_call(self, mode):
        start = table([FREE, 1, 1, FREE, FREE])
        nxt, ok = solo(start, 1, "none", mode)
        assert not ok and nxt.holder == start.holder and nxt.meals == start.meals

    def test_round_counter(self, mode):
        nxt, _ = play_round(initial_table(3), ["think"] * 3, mode)
        assert nxt.round == 1 and observe(nxt, 0).round == 2


def test_contested_fork_goes_to_the_lower_id_in_both_modes():
    # philosophers 0 and 4 both want fork 0
    for mode in MODES:
        nxt, valid = play_round(initial_table(5), ["pick_up_left", "none", "none", "none", "pick_up_right"], mode)
        assert nxt.holder[0] == 0 and valid[0] and not valid[4]


# A hand-worked 3-round example at N = 4 (forks 0..3; philosopher i: left i, right i+1 mod 4).
# Round 1: P0, P1, P3 take their left forks; P2 thinks.         holder [0, 1, -, 3]
# Round 2: P0 wants fork 1 (P1 holds it): invalid. P1 and P2 both want fork 2: P1 (lower id)
#          gets it, P2 is invalid. P3 thinks.                      holder [0, 1, 1, 3]
# Round 3: P0 and P3 put their left forks down; P1 eats (forks 1 and 2, ready); P2 takes
#          its right fork, fork 3, which P3 puts down in the same round.
#   simultaneous: put-downs go first, so P2 gets fork 3.        holder [-, 1, 1, 2]
#   sequential:   P2 acts before P3, fork 3 is still held: P2 is invalid.  holder [-, 1, 1, -]
ROUNDS = [
    ["pick_up_left", "pick_up_left", "think", "pick_up_left"],
    ["pick_up_right", "pick_up_right", "pick_up_left", "think"],
    ["put_down_left", "eat", "pick_up_right", "put_down_left"],
]


@pytest.mark.parametrize(
    "mode, holders, valids",
    [
        (
            "simultaneous",
            [(0, 1, FREE, 3), (0, 1, 1, 3), (FREE, 1, 1, 2)],
            [(True,) * 4, (False, True, False, True), (True,) * 4],
        ),
        (
            "sequential",
            [(0, 1, FREE, 3), (0, 1, 1, 3), (FREE, 1, 1, FREE)],
            [(True,) * 4, (False, True, False, True), (True, True, False, True)],
        ),
    ],
)
def test_hand_worked_three_rounds(mode, holders, valids):
    t = initial_table(4)
    for actions, holder, valid in zip(ROUNDS, holders, valids):
        t, got = play_round(t, actions, mode)
        assert t.holder == holder
        assert got == valid
    assert t.meals == (0, 1, 0, 0)
    assert t.ready == (True, False, True, True)
    assert t.round == 3


def test_sequential_later_philosophers_see_earlier_actions():
    # P0 puts fork 1 down, then P1 (acting after it) takes it: valid in both modes
    start = table([FREE, 0, FREE])
    for mode in MODES:
        nxt, valid = play_round(start, ["put_down_right", "pick_up_left", "none"], mode)
        assert nxt.holder == (FREE, 1, FREE) and valid[:2] == (True, True)
    # seat by seat, as the runner drives sequential rounds
    t, ok0 = act(start, 0, "put_down_right")
    t, ok1 = act(t, 1, "pick_up_left")
    assert ok0 and ok1 and t.holder == (FREE, 1, FREE)


def test_observation():
    t = table([0, 1, FREE, FREE], meals=[2, 0, 0, 0])
    obs = observe(t, 0)
    assert (obs.holds_left, obs.holds_right, obs.left_free, obs.right_free) == (True, False, False, False)
    assert obs.meals == 2 and obs.round == 1 and obs.ready
    assert observe(t, 2).left_free and observe(t, 3).right_free is False  # fork 0 is held by P0


def test_deadlock_is_everyone_holding_exactly_one_fork():
    assert is_deadlock(table([0, 1, 2]))  # everyone holds the left fork
    assert is_deadlock(table([2, 0, 1]))  # everyone holds the right fork (fork i+1 held by i)
    assert is_deadlock(table([0, 2, 2, 0])) is False  # 2 and 0 hold two, 1 and 3 none
    assert is_deadlock(table([0, FREE, 2])) is False
    assert is_deadlock(initial_table(2)) is False


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: initial_table(1), "at least 2"),
        (lambda: play_round(initial_table(3), ["think"] * 2), "expected 3 actions"),
        (lambda: play_round(initial_table(2), ["think", "dance"]), "unknown action 'dance'"),
        (lambda: play_round(initial_table(2), ["think", "think"], "turns"), "unknown mode"),
        (lambda: act(initial_table(3), 0, "dance"), "unknown action 'dance'"),
        (lambda: act(initial_table(3), 3, "think"), "no philosopher 3 at a table of 3"),
    ],
)
def test_bad_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
