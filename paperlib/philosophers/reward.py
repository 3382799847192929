"""Paper A's episode reward, every component kept, and shaped variants.

    r = alpha * r_nd + beta * r_thru - gamma * r_fair - delta * r_idle
    alpha = 1.0, beta = 0.5, gamma = 0.3, delta = 0.1   (the paper's weights)

- r_nd: 1 if the episode had no deadlock, else 0.
- r_thru: meals eaten / the exact maximum the rules allow for (N, R, mode)
  [ours: computed by ``philosophers.bound.max_meals``, verified by exhaustive search].
- r_fair: population variance of the per-philosopher meal counts divided by the
  largest variance meal counts can have, m^2 / 4 with m = the most meals one
  philosopher can eat in R rounds [ours: the normaliser; it keeps r_fair in [0, 1]].
- r_idle: think actions / actions taken (0 when no action was taken).
- The total is clipped to [0, 1] [ours]; the unclipped value is kept too.

The flaw the paper found: zero actions and zero meals score r_nd = 1 and nothing
else, the maximum 1.0. ``reward_shaped`` is the paper's proposed fix: the
no-deadlock credit counts only when at least one meal was eaten. More variants go
in ``VARIANTS``; :func:`invalid_penalty` is paper B's fix on this table (notebook 05).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from paperlib.philosophers.bound import max_meals
from paperlib.training.rlft import INVALID_PENALTY

ALPHA, BETA, GAMMA, DELTA = 1.0, 0.5, 0.3, 0.1


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the reward needs to know about a finished episode."""

    n: int
    rounds: int
    mode: str
    meals: tuple[int, ...]
    deadlock: bool
    think_actions: int
    actions_total: int


def max_meals_per_philosopher(rounds: int) -> int:
    """One philosopher eats at most every 5 rounds (pick, pick, eat, put, put), first at round 3."""
    return max(0, (rounds + 2) // 5)


def components(outcome: EpisodeOutcome) -> dict[str, float]:
    meals = np.asarray(outcome.meals, dtype=float)
    best_total = max_meals(outcome.n, outcome.rounds, outcome.mode)
    best_one = max_meals_per_philosopher(outcome.rounds)
    return {
        "r_nd": 0.0 if outcome.deadlock else 1.0,
        "r_thru": float(meals.sum() / best_total) if best_total else 0.0,
        "r_fair": float(min(1.0, meals.var() / (best_one**2 / 4))) if best_one else 0.0,
        "r_idle": outcome.think_actions / outcome.actions_total if outcome.actions_total else 0.0,
    }


def combine(parts: dict[str, float]) -> float:
    """The paper's weighted sum, unclipped."""
    return ALPHA * parts["r_nd"] + BETA * parts["r_thru"] - GAMMA * parts["r_fair"] - DELTA * parts["r_idle"]


def clip(value: float) -> float:
    return float(min(1.0, max(0.0, value)))


def reward_paper(outcome: EpisodeOutcome, parts: dict[str, float]) -> float:
    return clip(combine(parts))


def reward_shaped(outcome: EpisodeOutcome, parts: dict[str, float]) -> float:
    """No-deadlock credit only when at least one meal was eaten (the paper's proposed fix)."""
    fed = sum(outcome.meals) > 0
    return clip(combine({**parts, "r_nd": parts["r_nd"] if fed else 0.0}))


# name -> reward function; each becomes a column "reward_<name>" ("reward" for the paper's).
VARIANTS: dict[str, Callable[[EpisodeOutcome, dict[str, float]], float]] = {
    "shaped": reward_shaped,
}


def score(outcome: EpisodeOutcome) -> dict[str, float]:
    """Every component, the paper's clipped reward, its unclipped value and each variant."""
    parts = components(outcome)
    row = {**parts, "reward": reward_paper(outcome, parts), "reward_unclipped": combine(parts)}
    for name, variant in VARIANTS.items():
        row[f"reward_{name}"] = variant(outcome, parts)
    return row


def invalid_penalty(failed_calls, n, rounds):
    """Paper B's fix on paper A's table (notebook 05): paper B's ``INVALID_PENALTY`` (-5, its Sec. 3)
    for each invalid or missing call of an episode, on paper A's scale **[ours: the scale]**.

    Paper B adds -5 to the reward of each step whose output held no valid action, a step reward
    on a unit scale (standardised); paper A's reward is one number per episode in [0, 1], shared
    by the episode's N x R decisions, so one decision's unit is 1 / (N R): each failed call (an
    action the rules refuse, or no parseable call) costs 5 / (N R). An episode of failed calls
    only loses 5, five times the reward's range, as a bandit run of invalid steps loses 5 per step
    against step rewards of about 1. Vectorised: ``failed_calls``, ``n``, ``rounds`` may be
    columns."""
    return INVALID_PENALTY * failed_calls / (n * rounds)
