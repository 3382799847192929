"""Scripted philosophers: real baselines, and the environment's own test bench.

- ``no_action``: never calls a tool (the paper's degenerate maximum).
- ``always_think``: calls ``think`` every round.
- ``random``: uniform over the six tools, from a per-episode generator seeded by the
  episode seed (no global RNG).
- ``left_first``: take left, then right, eat, put both down. Everyone takes the left
  fork in round 1: the classic deadlock.
- ``resource_hierarchy``: take the lower-numbered fork first (Dijkstra's solution);
  philosopher N-1 therefore starts with its right fork, fork 0.
- ``waiter``: left_first behind an arbiter that lets at most N-1 philosophers hold forks.

Each script waits (``think``) when the fork it wants is not free, and after a meal
puts the second fork down, then the first.
"""

from __future__ import annotations

import numpy as np

from paperlib.philosophers.env import TOOLS, Observation, left_fork, right_fork
from paperlib.philosophers.episode import Turn

OTHER = {"left": "right", "right": "left"}


def two_fork_step(obs: Observation, first: str) -> str:
    """Acquire ``first`` then the other fork, eat, release in reverse order."""
    second = OTHER[first]
    holds = {"left": obs.holds_left, "right": obs.holds_right}
    free = {"left": obs.left_free, "right": obs.right_free}
    if holds[first] and holds[second]:
        return "eat" if obs.ready else f"put_down_{second}"
    if holds[first] or holds[second]:
        held = first if holds[first] else second
        if obs.ready and held == first:
            return f"pick_up_{second}" if free[second] else "think"
        return f"put_down_{held}"
    return f"pick_up_{first}" if free[first] else "think"


def lower_fork_side(philosopher: int, n: int) -> str:
    return "left" if left_fork(philosopher, n) < right_fork(philosopher, n) else "right"


class ScriptedPolicy:
    name = ""

    def reset(self, seeds: list[int]) -> None:
        """Called with the batch's episode seeds before its first turn."""

    def act(self, turns: list[Turn]) -> list[str]:
        return [self.choose(turn) for turn in turns]

    def choose(self, turn: Turn) -> str:
        raise NotImplementedError


class NoAction(ScriptedPolicy):
    name = "no_action"

    def choose(self, turn):
        return "none"


class AlwaysThink(ScriptedPolicy):
    name = "always_think"

    def choose(self, turn):
        return "think"


class RandomPolicy(ScriptedPolicy):
    name = "random"

    def reset(self, seeds):
        self.generators = [np.random.default_rng(seed) for seed in seeds]

    def choose(self, turn):
        return TOOLS[int(self.generators[turn.episode].integers(len(TOOLS)))]


class LeftFirst(ScriptedPolicy):
    name = "left_first"

    def choose(self, turn):
        return two_fork_step(turn.observation, "left")


class ResourceHierarchy(ScriptedPolicy):
    name = "resource_hierarchy"

    def choose(self, turn):
        obs = turn.observation
        return two_fork_step(obs, lower_fork_side(obs.philosopher, obs.n))


class Waiter(ScriptedPolicy):
    """An arbiter grants a first fork only while fewer than N-1 philosophers hold forks.

    Requests of one table are granted in id order within a turn; a refused
    philosopher thinks. At most N-1 holders means nobody can be left in circular wait.
    """

    name = "waiter"

    def act(self, turns):
        holders: dict[int, int] = {}
        actions = []
        for turn in turns:
            table, obs = turn.table, turn.observation
            if turn.episode not in holders:
                holders[turn.episode] = sum(any(table.holds(i)) for i in range(table.n))
            action = two_fork_step(obs, "left")
            empty_handed = not (obs.holds_left or obs.holds_right)
            if action.startswith("pick_up") and empty_handed:
                if holders[turn.episode] >= table.n - 1:
                    action = "think"
                else:
                    holders[turn.episode] += 1
            actions.append(action)
        return actions


SCRIPTED = {cls.name: cls for cls in (NoAction, AlwaysThink, RandomPolicy, LeftFirst, ResourceHierarchy, Waiter)}


def make_scripted(name: str) -> ScriptedPolicy:
    try:
        return SCRIPTED[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(SCRIPTED)}") from None
