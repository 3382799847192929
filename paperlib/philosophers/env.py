"""The dining-philosophers table: rules as pure functions over frozen dataclasses.

N philosophers sit at a round table with N forks; philosopher i's left fork is i and
its right fork is (i + 1) mod N. Each round every philosopher takes one of six tools
or takes no action (paper A, its environment). Nothing here knows about models, prompts or
files: state in, state out.

Rules that are our reconstructions [ours] (README, Reconstructions), as implemented here:
- ``eat`` needs both forks and the philosopher must have been empty-handed since its
  last meal (``ready``): no eating every round on hoarded forks.
- An action that cannot succeed has no effect and is invalid.
- ``simultaneous`` rounds: everyone decides on the state at the start of the round;
  put-downs take effect first, then pick-ups are granted against the forks free after
  the put-downs, the lower id winning a contested fork; ``eat`` is judged on the forks
  held at the start of the round. ``sequential`` rounds: philosophers act in id order
  and each action takes effect at once.
- Deadlock: every philosopher holds exactly one fork (so no fork is free).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

TOOLS = ("pick_up_left", "pick_up_right", "put_down_left", "put_down_right", "eat", "think")
NO_ACTION = "none"
ACTIONS = TOOLS + (NO_ACTION,)
MODES = ("simultaneous", "sequential")
FREE = -1


def left_fork(i: int, n: int) -> int:
    return i


def right_fork(i: int, n: int) -> int:
    return (i + 1) % n


@dataclass(frozen=True)
class Table:
    """The whole state: who holds each fork, who may eat, meals so far, rounds played."""

    n: int
    holder: tuple[int, ...]  # fork -> philosopher holding it, or FREE
    ready: tuple[bool, ...]  # philosopher -> empty-handed since its last meal
    meals: tuple[int, ...]
    round: int = 0

    def holds(self, i: int) -> tuple[bool, bool]:
        return self.holder[left_fork(i, self.n)] == i, self.holder[right_fork(i, self.n)] == i


@dataclass(frozen=True)
class Observation:
    """What philosopher ``philosopher`` is told before it acts (all an LLM prompt may use)."""

    philosopher: int
    n: int
    round: int  # 1-based round about to be played
    holds_left: bool
    holds_right: bool
    left_free: bool
    right_free: bool
    meals: int
    ready: bool


def initial_table(n: int) -> Table:
    if n < 2:
        raise ValueError(f"a table needs at least 2 philosophers, got {n}")
    return Table(n=n, holder=(FREE,) * n, ready=(True,) * n, meals=(0,) * n)


def observe(table: Table, i: int) -> Observation:
    left, right = left_fork(i, table.n), right_fork(i, table.n)
    holds_left, holds_right = table.holds(i)
    return Observation(
        philosopher=i,
        n=table.n,
        round=table.round + 1,
        holds_left=holds_left,
        holds_right=holds_right,
        left_free=table.holder[left] == FREE,
        right_free=table.holder[right] == FREE,
        meals=table.meals[i],
        ready=table.ready[i],
    )


def is_deadlock(table: Table) -> bool:
    """Circular wait: every philosopher holds exactly one fork, so nobody can ever eat."""
    return all(sum(table.holds(i)) == 1 for i in range(table.n))


def _fork(action: str, i: int, n: int) -> int:
    return left_fork(i, n) if action.endswith("left") else right_fork(i, n)


def _check(actions: Sequence[str], n: int) -> None:
    if len(actions) != n:
        raise ValueError(f"expected {n} actions, got {len(actions)}")
    unknown = sorted(set(actions) - set(ACTIONS))
    if unknown:
        raise ValueError(f"unknown action {unknown[0]!r}; expected one of {', '.join(ACTIONS)}")


def act(table: Table, i: int, action: str) -> tuple[Table, bool]:
    """Philosopher ``i`` acts alone and at once (one step of a sequential round)."""
    if not 0 <= i < table.n:
        raise ValueError(f"no philosopher {i} at a table of {table.n}")
    _check([action], 1)
    holder, ready, meals = list(table.holder), list(table.ready), list(table.meals)
    valid = _apply_one(i, action, table.n, holder, ready, meals, can_eat=None)
    _refresh_ready(table.n, holder, ready)
    return replace(table, holder=tuple(holder), ready=tuple(ready), meals=tuple(meals)), valid


def _apply_one(i, action, n, holder, ready, meals, can_eat) -> bool:
    """Apply one action to mutable copies of the state; return whether it succeeded."""
    if action == NO_ACTION:
        return False
    if action == "think":
        return True
    if action == "eat":
        ok = (
            can_eat
            if can_eat is not None
            else (holder[left_fork(i, n)] == i and holder[right_fork(i, n)] == i and ready[i])
        )
        if ok:
            meals[i] += 1
            ready[i] = False
        return ok
    fork = _fork(action, i, n)
    if action.startswith("pick_up"):
        if holder[fork] != FREE:
            return False
        holder[fork] = i
        return True
    if holder[fork] != i:  # put_down a fork not held
        return False
    holder[fork] = FREE
    return True


def _refresh_ready(n, holder, ready) -> None:
    for i in range(n):
        if holder[left_fork(i, n)] != i and holder[right_fork(i, n)] != i:
            ready[i] = True


def play_round(table: Table, actions: Sequence[str], mode: str = "simultaneous") -> tuple[Table, tuple[bool, ...]]:
    """Apply one round of decisions (one per philosopher, in id order).

    Returns the next table and, per philosopher, whether its action succeeded. In
    ``sequential`` mode the caller usually wants ``act`` seat by seat, so that later
    philosophers decide on the changed table; passing all actions here applies them in
    id order, which is the same result when the decisions are fixed in advance.
    """
    _check(actions, table.n)
    if mode == "sequential":
        valid = []
        for i, action in enumerate(actions):
            table, ok = act(table, i, action)
            valid.append(ok)
        return replace(table, round=table.round + 1), tuple(valid)
    if mode != "simultaneous":
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    n = table.n
    holder, ready, meals = list(table.holder), list(table.ready), list(table.meals)
    valid = [False] * n
    order = sorted(range(n), key=lambda i: (not actions[i].startswith("put_down"), i))
    for i in order:  # put-downs first, then everything else in id order (lowest id wins a fork)
        can_eat = table.holds(i) == (True, True) and table.ready[i]
        valid[i] = _apply_one(i, actions[i], n, holder, ready, meals, can_eat=can_eat)
    _refresh_ready(n, holder, ready)
    next_table = Table(n=n, holder=tuple(holder), ready=tuple(ready), meals=tuple(meals), round=table.round + 1)
    return next_table, tuple(valid)
