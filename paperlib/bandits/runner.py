"""The bandit runner: M instances for T steps, one batched agent call per step.

Any agent with ``reset(spec, seeds)`` and ``act(history)`` plays (``baselines.Agent``;
an agent's optional ``columns`` dict, read after ``reset``, goes into its episode rows);
where it returns -1 for an instance (its output held no valid action) the runner
plays a uniformly random arm there, from its own seeded stream, and marks the step
invalid. The result is a pair of pandas frames, episode rows and step rows, ready
for ``paperlib.data.write_parquet`` or ``RolloutStore.append``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from paperlib.bandits.baselines import Agent
from paperlib.bandits.env import FALLBACK_STREAM, BanditEnv, BanditSpec, generator, instance_seeds
from paperlib.bandits.metrics import coverage, cumulative_regret
from paperlib.decisions import Decisions


def run_bandit(
    agent: Agent,
    spec: BanditSpec,
    instances: int,
    seed: int = 0,
    labels: dict | None = None,
    progress: bool = False,
    seeds: Sequence[int] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play ``instances`` bandits (seeds S, S+1, ...) for ``spec.horizon`` steps, or the
    instances of ``seeds`` (a draw from a pool, say) in their place.

    Returns (episode rows, step rows); ``labels`` (profile, ...) go into every episode row.
    """
    if instances < 1:
        raise ValueError(f"instances must be at least 1, got {instances}")
    if seeds is None:
        seeds = instance_seeds(seed, instances)
    elif len(seeds) != instances or len(set(seeds)) != instances:
        raise ValueError(f"seeds must be {instances} distinct instance seeds, got {list(seeds)}")
    seeds = [int(x) for x in seeds]
    env = BanditEnv(spec, seeds)
    agent.reset(spec, seeds)
    fallback = generator(FALLBACK_STREAM, seeds)
    shape = (instances, spec.horizon)
    valid = np.ones(shape, dtype=bool)
    texts = np.full(shape, "", dtype=object)
    extra: dict[str, np.ndarray] = {}
    for t in tqdm(range(spec.horizon), desc=f"k={spec.k} steps", disable=not progress, leave=False):
        decisions = agent.act(env.history)
        if not isinstance(decisions, Decisions):
            decisions = Decisions(actions=decisions)
        actions = np.asarray(decisions.actions, dtype=np.int64)
        if actions.shape != (instances,) or actions.min() < -1 or actions.max() >= spec.k:
            raise ValueError(f"{agent.name} returned {actions!r}; expected {instances} arms in 0..{spec.k - 1} or -1")
        valid[:, t] = actions >= 0
        env.step(np.where(valid[:, t], actions, fallback.integers(spec.k, size=instances)))
        if decisions.texts is not None:
            texts[:, t] = list(decisions.texts)
        for key, values in decisions.extra.items():
            if key not in extra:
                extra[key] = np.full(shape, None, dtype=object)
            extra[key][:, t] = list(values)
    return _frames(agent, spec, env, valid, texts, extra, labels or {})


def _frames(agent, spec, env, valid, texts, extra, labels) -> tuple[pd.DataFrame, pd.DataFrame]:
    actions = env.history.actions
    regret = cumulative_regret(env.means, actions)
    covered = coverage(actions, spec.k)
    m, horizon = actions.shape
    instance = np.repeat(np.arange(m), horizon)
    steps = pd.DataFrame(
        {
            "episode": instance,
            "seed": np.repeat(env.seeds, horizon),
            "seat": 0,
            "turn": np.tile(np.arange(1, horizon + 1), m),
            "action": actions.ravel(),
            "arm": np.asarray(spec.names, dtype=object)[actions.ravel()],
            "reward": env.history.rewards.ravel(),
            "expected": env.expected.ravel(),
            "best": np.repeat(env.best, horizon),
            "regret": regret.ravel(),
            "coverage": covered.ravel(),
            "valid": valid.ravel(),
            "raw_completion": texts.ravel(),
            **{key: values.ravel() for key, values in extra.items()},
        }
    )
    episodes = pd.DataFrame(
        {
            **labels,
            "agent": agent.name,
            "model": agent.model,
            "family": spec.family,
            "arms": spec.k,
            "noise": spec.noise,
            "horizon": spec.horizon,
            "variant": spec.variant,
            "cot": agent.cot,
            **getattr(agent, "columns", {}),
            "episode": np.arange(m),
            "seed": env.seeds,
            "regret": regret[:, -1],
            "coverage": covered[:, -1],
            "reward_total": env.history.rewards.sum(axis=1),
            "invalid_steps": (~valid).sum(axis=1),
        }
    )
    return episodes, steps
