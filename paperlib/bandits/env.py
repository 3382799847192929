"""Multi-armed bandits: a numeric core (means, rewards, history) and its verbal layer (arm names).

- ``BanditSpec`` is everything an agent may know: arms k, horizon T, reward family
  (Gaussian N(mu_a, sigma) with sigma 0.1 / 1 / 3 for noise low / medium / high, or
  Bernoulli(p_a)), and the verbal variant ("button": colour names; "continuous":
  arms named 0..k-1).
- ``BanditEnv`` holds M instances that step at once. Instance i has its own seed; its
  generator draws the k means (mu_a or p_a ~ U(0, 1)) and then a (T, k) table of
  noise, so the reward of arm a at step t is fixed before anyone plays **[ours]**:
  every agent meets the same rewards on the same instance (common random numbers,
  which makes agent-vs-agent comparisons less noisy), and an instance rerun alone,
  or in another batch, gets the same means and rewards.
- ``History`` is what agents see (actions, rewards, counts, sums); the mean of each
  played arm is kept beside it, in ``BanditEnv.expected``, so regret is exact afterwards.

Steps are numbered 1..T in text and tables; ``History.t`` is the number played so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NOISE_SIGMA = {"low": 0.1, "medium": 1.0, "high": 3.0}
FAMILIES = ("gaussian", "bernoulli")
VARIANTS = ("button", "continuous")
COLOURS = (
    "blue", "green", "red", "yellow", "orange", "purple", "pink", "brown", "black", "white",
    "gray", "cyan", "magenta", "maroon", "olive", "lime", "teal", "navy", "indigo", "violet",
)  # fmt: skip
HORIZON = 50

# Random streams: the first word of every seed sequence, so no two purposes share draws.
ENV_STREAM, AGENT_STREAM, FALLBACK_STREAM = 0, 1, 2


def generator(stream: int, seeds: int | Sequence[int]) -> np.random.Generator:
    """A generator for one purpose (``*_STREAM``) and one seed or a batch of seeds."""
    return np.random.default_rng([stream, *np.atleast_1d(seeds).tolist()])


def instance_seeds(seed: int, instances: int) -> list[int]:
    """Instance i of a run with base seed S has seed S + i, so one instance reruns alone."""
    return [seed + i for i in range(instances)]


def arm_names(k: int, variant: str = "button") -> tuple[str, ...]:
    if variant == "button":
        return COLOURS[:k]
    return tuple(str(a) for a in range(k))


@dataclass(frozen=True)
class BanditSpec:
    """The public description of a bandit task: what prompts and agents may use."""

    k: int
    horizon: int = HORIZON
    family: str = "gaussian"
    noise: str = "low"  # ignored by Bernoulli bandits
    variant: str = "button"

    def __post_init__(self):
        if self.k < 2:
            raise ValueError(f"a bandit needs at least 2 arms, got {self.k}")
        if self.variant == "button" and self.k > len(COLOURS):
            raise ValueError(f"the button variant has {len(COLOURS)} colours, got k={self.k}")
        if self.horizon < 1:
            raise ValueError(f"horizon must be at least 1, got {self.horizon}")
        for value, allowed in ((self.family, FAMILIES), (self.noise, NOISE_SIGMA), (self.variant, VARIANTS)):
            if value not in allowed:
                raise ValueError(f"unknown value {value!r}; expected one of {', '.join(allowed)}")

    @property
    def sigma(self) -> float:
        """Reward noise of the Gaussian family (0 for Bernoulli, whose noise is its own)."""
        return NOISE_SIGMA[self.noise] if self.family == "gaussian" else 0.0

    @property
    def names(self) -> tuple[str, ...]:
        return arm_names(self.k, self.variant)


class History:
    """The past of M instances: what an agent acts on.

    ``actions`` and ``rewards`` are (M, T) arrays filled up to column ``t`` (-1 and NaN
    beyond); ``counts`` and ``sums`` are (M, k) running totals per arm.
    """

    def __init__(self, instances: int, k: int, horizon: int):
        self.k = k
        self.t = 0
        self.actions = np.full((instances, horizon), -1, dtype=np.int64)
        self.rewards = np.full((instances, horizon), np.nan)
        self.counts = np.zeros((instances, k), dtype=np.int64)
        self.sums = np.zeros((instances, k))

    @property
    def instances(self) -> int:
        return self.actions.shape[0]

    @property
    def means(self) -> np.ndarray:
        """Empirical mean reward per arm, 0 for an arm not tried yet."""
        return np.divide(self.sums, self.counts, out=np.zeros_like(self.sums), where=self.counts > 0)

    def record(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        rows = np.arange(self.instances)
        self.actions[:, self.t] = actions
        self.rewards[:, self.t] = rewards
        self.counts[rows, actions] += 1
        self.sums[rows, actions] += rewards
        self.t += 1


class BanditEnv:
    """M bandit instances of one spec, one seed each, stepped together."""

    def __init__(self, spec: BanditSpec, seeds: Sequence[int]):
        self.spec = spec
        self.seeds = list(seeds)
        means, draws = [], []
        for seed in self.seeds:
            rng = generator(ENV_STREAM, seed)
            means.append(rng.random(spec.k))
            shape = (spec.horizon, spec.k)
            draws.append(rng.standard_normal(shape) if spec.family == "gaussian" else rng.random(shape))
        self.means = np.array(means)  # (M, k)
        self._draws = np.array(draws)  # (M, T, k)
        self.history = History(len(self.seeds), spec.k, spec.horizon)
        self.expected = np.full((len(self.seeds), spec.horizon), np.nan)  # mean of the arm played

    @property
    def best(self) -> np.ndarray:
        """mu* per instance."""
        return self.means.max(axis=1)

    def step(self, actions) -> np.ndarray:
        """Play one arm in every instance; return the M rewards."""
        h = self.history
        if h.t >= self.spec.horizon:
            raise ValueError(f"the horizon of {self.spec.horizon} steps is over")
        actions = np.asarray(actions, dtype=np.int64)
        if actions.shape != (h.instances,) or actions.min() < 0 or actions.max() >= self.spec.k:
            raise ValueError(f"expected {h.instances} arms in 0..{self.spec.k - 1}, got {actions!r}")
        rows = np.arange(h.instances)
        mu = self.means[rows, actions]
        draw = self._draws[rows, h.t, actions]
        rewards = mu + self.spec.sigma * draw if self.spec.family == "gaussian" else (draw < mu).astype(float)
        self.expected[:, h.t] = mu
        h.record(actions, rewards)
        return rewards
