"""Paper B's multi-armed bandit behind Gymnasium's Env API: one instance, a thin adapter.

The instance is ``BanditEnv(spec, [seed])`` itself (the batched env of ``bandits.env``
with one seed), so for the same seed the means and the reward of every (step, arm)
are the same here as in a batch, and the same actions give the same rewards.

- Action: ``Discrete(k)``, the arm.
- Observation: a ``Dict`` with the numeric history summary, ``counts`` (pulls per arm,
  ``Box(0, T)`` int64), ``means`` (empirical mean reward per arm, 0 for an arm not
  tried, float64) and ``t`` (steps played, ``Discrete(T + 1)``); and, unless
  ``prompt_style`` is None, ``text``: the prompt an LLM agent would get,
  ``prompts.build_prompt`` of the history (no-CoT style by default), a ``Text`` space
  over printable ASCII whose ``max_length`` is the prompt after T steps of the
  longest arm name and the longest reward.
- Bounds **[ours]**: Bernoulli means lie in [0, 1]; Gaussian rewards are taken to lie
  within +-``REWARD_BOUND`` = 1000 (so a reward prints in at most 7 characters),
  which is over 300 standard deviations even at high noise, far beyond any draw of a
  standard-normal generator.
- Reward: the sampled reward of the arm played. ``terminated`` is always False;
  ``truncated`` is True at the horizon T (paper B's episodes are T = 50 steps).
- ``info`` after a step: ``expected_reward`` (the true mean of the arm played) and
  ``best_mean`` (mu*), so regret, sum(best_mean - expected_reward), follows after
  the fact, as in ``bandits.metrics``. ``info`` after a reset: ``seed``, the instance
  seed, to rerun the instance in ``BanditEnv``.
- ``reset(seed=s)`` plays instance s. ``reset()`` without a seed draws the instance
  seed from the env's own generator (``self.np_random``), so successive unseeded
  episodes differ and a seeded reset followed by unseeded ones is reproducible **[ours]**.
"""

from __future__ import annotations

import string

import gymnasium
import numpy as np
from gymnasium import spaces

from paperlib.bandits.env import HORIZON, BanditEnv, BanditSpec
from paperlib.bandits.prompts import build_prompt

REWARD_BOUND = 1000.0
CHARSET = frozenset(string.printable)


class BanditGymEnv(gymnasium.Env):
    """One bandit instance of a ``BanditSpec``; its arguments mirror the spec's."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        k: int,
        horizon: int = HORIZON,
        family: str = "gaussian",
        noise: str = "low",
        variant: str = "button",
        prompt_style: str | None = "no_cot",
    ):
        self.bandit_spec = BanditSpec(k=k, horizon=horizon, family=family, noise=noise, variant=variant)
        self.prompt_style = prompt_style
        self.action_space = spaces.Discrete(k)
        low, high = (0.0, 1.0) if family == "bernoulli" else (-REWARD_BOUND, REWARD_BOUND)
        observation = {
            "counts": spaces.Box(0, horizon, shape=(k,), dtype=np.int64),
            "means": spaces.Box(low, high, shape=(k,), dtype=np.float64),
            "t": spaces.Discrete(horizon + 1),
        }
        if prompt_style is not None:
            observation["text"] = spaces.Text(self._longest_prompt(), charset=CHARSET)
        self.observation_space = spaces.Dict(observation)
        self.bandit: BanditEnv | None = None

    def _longest_prompt(self) -> int:
        spec = self.bandit_spec
        longest_arm = max(range(spec.k), key=lambda a: len(spec.names[a]))
        reward = 1.0 if spec.family == "bernoulli" else -REWARD_BOUND + 0.01
        return len(build_prompt(spec, [longest_arm] * spec.horizon, [reward] * spec.horizon, self.prompt_style))

    def _observation(self) -> dict:
        h = self.bandit.history
        observation = {"counts": h.counts[0].copy(), "means": h.means[0], "t": h.t}
        if self.prompt_style is not None:
            played = slice(0, h.t)
            observation["text"] = build_prompt(
                self.bandit_spec, h.actions[0, played], h.rewards[0, played], self.prompt_style
            )
        return observation

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        instance = seed if seed is not None else int(self.np_random.integers(2**31))
        self.bandit = BanditEnv(self.bandit_spec, [instance])
        return self._observation(), {"seed": instance}

    def step(self, action):
        if self.bandit is None:
            raise ValueError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not an arm in 0..{self.bandit_spec.k - 1}")
        reward = float(self.bandit.step([int(action)])[0])
        info = {
            "expected_reward": float(self.bandit.means[0, int(action)]),
            "best_mean": float(self.bandit.best[0]),
        }
        truncated = self.bandit.history.t >= self.bandit_spec.horizon
        return self._observation(), reward, False, truncated, info
