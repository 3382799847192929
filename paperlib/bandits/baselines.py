"""Classic bandit agents, vectorised over instances, and the interface every agent shares.

An agent has ``name``, ``model`` and ``cot`` (recorded in each episode row), and

- ``reset(spec, seeds)``: called once before the first step with the public
  ``BanditSpec`` (arms, horizon, family, noise, variant and arm names) and the
  instance seeds;
- ``act(history) -> actions``: one arm index per instance, or a ``Decisions`` when
  the agent has more to say per instance (what an LLM wrote, extra step columns).
  An LLM agent builds each instance's prompt from ``history.actions[i, :history.t]``
  and ``history.rewards[i, :history.t]`` with ``prompts.build_prompt`` (the lines
  ``Step=i Action=X Reward=r``), generates one batch, parses each completion with
  ``parsing.parse_action`` and returns -1 where no valid action was found: the runner
  then plays a uniformly random arm and marks the step invalid.

Baselines (randomness from one generator per batch, seeded by the instance seeds, so
an instance rerun alone meets the same bandit and rewards but not the same coin flips):

- ``random``: uniform over the arms.
- ``greedy``: the arm with the highest empirical mean; an untried arm counts 0, and
  ties break uniformly at random **[ours]**. So it starts on a random arm and stays
  on it while that arm's mean is above 0 (every untried arm counts 0); it moves on
  only when every tried arm's mean is 0 or below (a Bernoulli arm that failed, a
  Gaussian arm that paid a negative reward). Genuinely greedy, unlike BanditBench's
  ``GreedyAgent``, which behaves exactly like its UCB (read in BanditBench's source).
- ``epsilon_greedy``: with probability epsilon (default 0.1 **[ours]**) a uniformly
  random arm, otherwise ``greedy``.
- ``ucb``: every arm once, in index order, then argmax of mean + sqrt(alpha ln t / n)
  with t the steps played so far and alpha = 0.5, as BanditBench's classic UCB (a
  smaller bonus than UCB1's alpha = 2, so it exploits sooner: our reference is the
  benchmark the paper evaluates against, not the textbook).
- ``thompson``: Bernoulli bandits sample Beta(1 + successes, 1 + failures); Gaussian
  bandits sample the normal posterior of each mean under a N(0.5, 1) prior with the
  spec's known noise sigma **[ours: the prior]**.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from paperlib.bandits.env import AGENT_STREAM, BanditSpec, History, generator
from paperlib.decisions import Decisions

UCB_ALPHA = 0.5
EPSILON = 0.1
PRIOR_MEAN, PRIOR_SD = 0.5, 1.0  # Gaussian Thompson sampling prior [ours]
LLM_AGENT = "llm"


class Agent(Protocol):
    name: str
    model: str
    cot: bool

    def reset(self, spec: BanditSpec, seeds: Sequence[int]) -> None: ...

    def act(self, history: History) -> np.ndarray | Decisions: ...


def argmax_random_ties(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax of an (M, k) array, ties broken uniformly at random."""
    top = values == values.max(axis=1, keepdims=True)
    return np.argmax(rng.random(values.shape) * top, axis=1)


class Baseline:
    name = ""
    cot = False

    @property
    def model(self) -> str:
        return f"baseline:{self.name}"

    def reset(self, spec: BanditSpec, seeds: Sequence[int]) -> None:
        self.spec = spec
        self.rng = generator(AGENT_STREAM, seeds)

    def act(self, history: History) -> np.ndarray:
        raise NotImplementedError


class RandomAgent(Baseline):
    name = "random"

    def act(self, history):
        return self.rng.integers(self.spec.k, size=history.instances)


class EpsilonGreedyAgent(Baseline):
    name = "epsilon_greedy"

    def __init__(self, epsilon: float = EPSILON):
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = epsilon

    def act(self, history):
        actions = argmax_random_ties(history.means, self.rng)
        if self.epsilon:
            explore = self.rng.random(history.instances) < self.epsilon
            actions = np.where(explore, self.rng.integers(self.spec.k, size=history.instances), actions)
        return actions


class GreedyAgent(EpsilonGreedyAgent):
    name = "greedy"

    def __init__(self):
        super().__init__(epsilon=0.0)


class UCBAgent(Baseline):
    name = "ucb"

    def __init__(self, alpha: float = UCB_ALPHA):
        self.alpha = alpha

    def act(self, history):
        untried = history.counts == 0
        with np.errstate(divide="ignore", invalid="ignore"):  # untried arms, chosen apart
            bonus = np.sqrt(self.alpha * np.log(max(history.t, 1)) / history.counts)
        exploit = np.argmax(history.means + bonus, axis=1)
        return np.where(untried.any(axis=1), np.argmax(untried, axis=1), exploit)


class ThompsonAgent(Baseline):
    name = "thompson"

    def act(self, history):
        n, s = history.counts, history.sums
        if self.spec.family == "bernoulli":
            return np.argmax(self.rng.beta(1 + s, 1 + n - s), axis=1)
        precision = 1 / PRIOR_SD**2 + n / self.spec.sigma**2
        mean = (PRIOR_MEAN / PRIOR_SD**2 + s / self.spec.sigma**2) / precision
        return np.argmax(mean + self.rng.standard_normal(n.shape) / np.sqrt(precision), axis=1)


BASELINES = {cls.name: cls for cls in (RandomAgent, GreedyAgent, EpsilonGreedyAgent, UCBAgent, ThompsonAgent)}
