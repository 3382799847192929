"""Paper B's exploration mechanisms for the LLM bandit agent (paper B §4.4, Fig. 8).

The paper compares seven ways of making its LLM agent explore. Six act when the agent
decides and are options of :class:`paperlib.bandits.llm.LLMAgent` (``exploration=``,
one :class:`Exploration` per agent); the seventh, +1 for an untried arm during RLFT, is
a reward term (``paperlib.training.rlft.objective.exploration_bonus``).

- ``try_all``: the first k steps play every arm once, in arm order, without asking the
  model; the model decides from step k + 1 on.
- ``epsilon_greedy``: at every step, with probability ``epsilon``, a uniformly random
  arm instead of the model's (the model is not asked at such a step).
- ``context_randomisation``: the prompt's history lines in a random order, each line
  keeping its ``Step=i``.
- ``context_summary``: per arm, the times played and the mean reward in place of the
  history lines (``prompts.summary_lines``).
- ``self_correction``: the model's answer is shown back to it as its own turn, followed
  by a request to check and correct it (``prompts.revision_request``); the second
  answer is played.
- ``self_consistency``: ``samples`` answers per step (16 in the paper), and the arm
  most of them chose is played (:func:`majority_vote`).

The paper names the mechanisms and self-consistency's 16 samples and majority vote;
every other choice is ours. Each has its value and source in :data:`SOURCES` (the
parameters) or :data:`RULES` (the rules), and :func:`settings_table` lists them all
(notebook 15's table).

Randomness (epsilon's coin and arm, the history's order) comes from one generator per
(agent seed, instance seed, step) (:func:`step_rng`) on a stream of its own, so an
instance draws the same whatever batch it runs in; the model's own sampling keeps the
decision core's seeding.

The step rows say who chose each arm (``chosen_by``): ``try_all`` or
``epsilon_greedy`` (the mechanism, without the model), ``model`` (the model's answer),
``revision`` (self-correction's second answer; the first is in ``first_action`` and
``first_completion``) or ``vote`` (self-consistency; every sample's arm, -1 for an
invalid one, is in ``sample_actions``). Where the chosen answer held no valid action
the runner plays a random arm and flags the step invalid, as without exploration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperlib.bandits.baselines import EPSILON
from paperlib.bandits.env import BanditSpec

MECHANISMS = (
    "none",
    "try_all",
    "epsilon_greedy",
    "context_randomisation",
    "context_summary",
    "self_correction",
    "self_consistency",
)
SAMPLES = 16
EXPLORATION_STREAM = 3  # the first word of every step generator's seed, after env.py's streams 0-2

SOURCES = {
    "mechanism": "paper B §4.4, Fig. 8 (the six decision-time mechanisms; the exploration bonus is RLFT's)",
    "epsilon": "ours: the epsilon_greedy baseline's default",
    "samples": "paper B §4.4 (self-consistency: 16 samples, majority vote)",
}

# The choices the paper leaves open that are rules, not parameters: (value, source).
RULES = {
    "try_all order": (
        "arm order (blue, green, ... or 0, 1, ...); the model is not asked in those steps",
        "ours: as the ucb baseline",
    ),
    "epsilon schedule": ("constant", "ours"),
    "epsilon arm": (
        "uniform over all k arms; the model is not asked at such a step",
        "ours: as the epsilon_greedy baseline",
    ),
    "randomised context": (
        "the history's lines, each keeping its Step=i, in a uniformly random order drawn afresh at every step",
        "ours",
    ),
    "summary": (
        "per arm, in arm order: times played, mean reward to two decimals; in place of the history lines",
        "ours: Krishnamurthy et al. 2024's summarised history",
    ),
    "self-correction": (
        "one round: the first answer as the model's turn, then prompts.revision_request; the second "
        "answer is played, valid or not",
        "ours",
    ),
    "invalid samples": ("do not vote; no valid sample: the step is invalid (a random arm)", "ours"),
    "ties": ("the tied arm sampled first (the samples are exchangeable, so a uniform tie-break)", "ours"),
    "sampling": ("self-consistency samples at the agent's temperature, which must be above 0", "ours"),
    "randomness": ("one generator per (agent seed, instance seed, step)", "ours: as the runner's per-instance seeds"),
}


@dataclass(frozen=True)
class Exploration:
    """One mechanism and its parameters (``epsilon`` for ``epsilon_greedy``, ``samples``
    for ``self_consistency``; the others ignore them)."""

    mechanism: str = "none"
    epsilon: float = EPSILON
    samples: int = SAMPLES

    def __post_init__(self):
        if self.mechanism not in MECHANISMS:
            raise ValueError(
                f"unknown exploration mechanism {self.mechanism!r}; expected one of {', '.join(MECHANISMS)}"
            )
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.samples < 1:
            raise ValueError(f"samples must be at least 1, got {self.samples}")

    def check(self, temperature: float) -> None:
        if self.mechanism == "self_consistency" and temperature == 0:
            raise ValueError(
                "self-consistency votes over sampled answers, which are all alike at temperature 0; "
                "set a temperature above 0"
            )

    @property
    def columns(self) -> dict:
        """Episode columns: the mechanism and the parameters in effect (no random arms and one
        answer per step where the mechanism takes no epsilon or samples)."""
        return {
            "exploration": self.mechanism,
            "epsilon": self.epsilon if self.mechanism == "epsilon_greedy" else 0.0,
            "samples": self.samples if self.mechanism == "self_consistency" else 1,
        }

    @property
    def chooser(self) -> str:
        """``chosen_by`` of an arm the model was asked for."""
        return {"self_correction": "revision", "self_consistency": "vote"}.get(self.mechanism, "model")

    def preset_arms(self, spec: BanditSpec, t: int, rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """The arm each instance plays at step ``t + 1`` without asking the model, -1 where the model decides."""
        if self.mechanism == "try_all" and t < spec.k:
            return np.full(len(rngs), t)
        if self.mechanism == "epsilon_greedy":
            return np.array([rng.integers(spec.k) if rng.random() < self.epsilon else -1 for rng in rngs])
        return np.full(len(rngs), -1)

    def history_order(self, t: int, rng: np.random.Generator) -> np.ndarray | None:
        """The order of the prompt's ``t`` history lines (context randomisation), else None."""
        return rng.permutation(t) if self.mechanism == "context_randomisation" else None


def step_rng(agent_seed: int, instance_seed: int, t: int) -> np.random.Generator:
    """The mechanisms' generator of one instance at one step."""
    return np.random.default_rng([EXPLORATION_STREAM, agent_seed, instance_seed, t])


def majority_vote(actions: Sequence[int | None]) -> int | None:
    """The arm most samples chose: invalid samples (None) do not vote, a tie goes to the
    tied arm sampled first, and None when no sample is valid."""
    valid = [a for a in actions if a is not None]
    if not valid:
        return None
    votes = Counter(valid)
    most = max(votes.values())
    return next(a for a in valid if votes[a] == most)


def settings_table(exploration: Exploration) -> pd.DataFrame:
    """Every setting of the mechanisms with its value and source: notebook 15's table."""
    rows = [
        {"setting": name, "value": str(getattr(exploration, name)), "source": source}
        for name, source in SOURCES.items()
    ]
    rows += [{"setting": name, "value": value, "source": source} for name, (value, source) in RULES.items()]
    return pd.DataFrame(rows)
