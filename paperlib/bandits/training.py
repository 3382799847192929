"""How the bandits plug into paper B's RLFT loop (:mod:`paperlib.training.rlft.loop`, whose doc has
the protocol): PPO with a KL penalty on the model's own chains of thought, through a peft LoRA
adapter, one update per batch of bandits, resumable; and what notebook 14 plays after training.

Paper B (Sec. 3) fine-tunes the whole model with PPO's clipped objective and a per-token KL
penalty to the frozen model, on the environment's reward, normalised, minus 5 for an output
with no valid action, with Monte-Carlo returns-to-go as the bandits' baseline; each rollout
plays 16 bandits drawn from a pool of 512 instances at temperature 1, and evaluation plays
held-out instances at temperature 0. Its exploration bonus (+1 for an arm not yet tried) is
a reward option (``bonus``). The objective's pieces live in
:mod:`paperlib.training.rlft.objective`; here:

- Rollout: the adapter of the update before plays ``instances`` bandits drawn from the pool
  with :class:`~paperlib.bandits.llm.LLMAgent`, the agent of notebooks 11-13.
- Advantages: the shaped step rewards (:func:`~paperlib.training.rlft.objective.shaped_rewards`,
  the reward standardised by its moments under the prior, :func:`reward_moments`),
  returns-to-go minus the batch's mean at each step, standardised.
- Recipes: the profile's (``paperlib.profiles``: ``rlft_recipe``), the CoT ablation's flip.
- After training: held-out bandits of each saved adapter beside the base model, UCB and
  random (the paper's references), the before/after table, the frequency bias after RLFT.

The paper tunes all weights and reports LoRA insufficient; ours is a LoRA adapter, and every
notebook that shows our results says so. Each open choice is a named setting with its value
and source (:data:`SOURCES`, ``paperlib.training.settings.settings_table``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from paperlib.bandits.env import NOISE_SIGMA, BanditSpec
from paperlib.bandits.prompts import STYLES
from paperlib.training import compare
from paperlib.training.checkpoints import RunDir, each_adapter
from paperlib.training.held_out import play_adapters
from paperlib.training.rlft.loop import RLFTSettings, train
from paperlib.training.settings import at_least_one

POOL_SEEDS = 2_000_000  # the training pool: instances POOL_SEEDS .. POOL_SEEDS + pool - 1, every run's
HELD_OUT_SEEDS = 3_000_000  # held-out evaluation instances, disjoint from every pool


def reward_moments(sigma: float, family: str = "gaussian") -> tuple[float, float]:
    """Mean and standard deviation of one bandit reward under the prior, means ~ U(0, 1).

    Gaussian: r = mu + sigma * noise, so E r = 1/2 and Var r = Var mu + sigma^2 = 1/12 + sigma^2.
    Bernoulli: r ~ Bernoulli(p), p ~ U(0, 1), which is Bernoulli(1/2): mean 1/2, std 1/2.
    """
    if family == "gaussian":
        return 0.5, math.sqrt(1 / 12 + sigma**2)
    if family == "bernoulli":
        return 0.5, 0.5
    raise ValueError(f"unknown reward family {family!r}; expected gaussian or bernoulli")


@dataclass(frozen=True)
class BanditSettings(RLFTSettings):
    """One RLFT run on the bandits: the shared settings (:class:`RLFTSettings`) and the bandits'.
    Sources per field in :data:`SOURCES`."""

    bonus: bool = False  # paper B's exploration bonus (+1 for an untried arm)
    # -- the paper's
    instances: int = 16
    pool: int = 512
    arms: int = 10
    horizon: int = 50
    family: str = "gaussian"
    noise: str = "low"
    style: str = "cot"

    episode_reward = "reward_total"
    progress = ("invalid_rate", "regret")

    @property
    def spec(self) -> BanditSpec:
        return BanditSpec(k=self.arms, horizon=self.horizon, family=self.family, noise=self.noise)

    @property
    def batch_size(self) -> int:
        return self.instances

    @property
    def shape(self) -> str:
        return f"{self.instances} bandits x {self.horizon} steps ({self.arms} arms, {self.style})"

    def update_seeds(self, update: int) -> list[int]:
        """The pool instances update ``update`` (1-based) plays: a draw without replacement,
        a function of (run seed, update)."""
        rng = np.random.default_rng([self.seed, update])
        return [POOL_SEEDS + int(i) for i in rng.choice(self.pool, size=self.instances, replace=False)]

    def check(self) -> BanditSettings:
        """Refuse, in one line, settings that cannot run (before any model loads)."""
        super().check()
        if self.style not in STYLES:
            raise ValueError(f"unknown prompt style {self.style!r}; choose one of {', '.join(STYLES)}")
        self.spec  # noqa: B018 (BanditSpec refuses bad arms, horizon, family or noise)
        at_least_one({"instances": self.instances})
        if self.instances > self.pool:
            raise ValueError(
                f"an update draws {self.instances} instances from a pool of {self.pool}: "
                f"the pool must be at least as large"
            )
        if self.pool > HELD_OUT_SEEDS - POOL_SEEDS:
            raise ValueError(f"a pool of at most {HELD_OUT_SEEDS - POOL_SEEDS} instances, got {self.pool}")
        return self

    def rollout(self, backend, update: int, share=list) -> tuple[pd.DataFrame, pd.DataFrame]:
        from paperlib.bandits.llm import LLMAgent
        from paperlib.bandits.runner import run_bandit

        seeds = share(self.update_seeds(update))  # this process's block (all of them, with one)
        agent = LLMAgent(
            backend,
            style=self.style,
            decision="free",
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            seed=self.sampling_seed(update),
            token_logprobs=True,  # PPO's old log-probabilities (rollout_old_logprobs)
        )
        return run_bandit(agent, self.spec, len(seeds), seeds=seeds, labels={"update": update, "bonus": self.bonus})

    def advantages(self, steps: pd.DataFrame, values=None) -> tuple[np.ndarray, None, dict]:
        advantages, returns, arrays = advantages_of(steps, self)
        episodes = steps.groupby("episode")
        return (
            advantages.reshape(-1),
            None,
            {
                "bonus": self.bonus,
                "mean_return": float(returns[:, 0].mean()),
                "reward_mean": float(arrays["reward"].mean()),
                "regret": float(episodes["regret"].last().mean()),
                "coverage": float(episodes["coverage"].last().mean()),
                "invalid_rate": float(1 - arrays["valid"].mean()),
            },
        )

    def sources(self) -> dict[str, str]:
        return {**super().sources(), **SOURCES}

    def derived(self) -> dict[str, str]:
        mean, std = reward_moments(NOISE_SIGMA[self.noise] if self.family == "gaussian" else 0.0, self.family)
        return {
            "reward_normalisation": f"mean {mean:.3f}, std {std:.3f}",
            "baseline": "returns-to-go, undiscounted",
            **super().derived(),
        }


SOURCES = {
    "bonus": "paper (exploration bonus, +1 for an arm not yet tried; off unless asked)",
    "instances": "paper (16 bandits per rollout)",
    "pool": "paper (a pool of 512 instances)",
    "arms": "ours: notebook 11's main setting (the paper trains and shows 5, 10 and 20 arms)",
    "horizon": "paper (50 steps)",
    "family": "ours: notebook 11's main setting",
    "noise": "ours: the low noise level",
    "style": "paper (RLFT on the model's chain of thought)",
    "reward_normalisation": "ours: one reward's moments under the prior, fixed (paperlib.bandits.training.reward_moments)",
    "baseline": "paper (Monte-Carlo returns-to-go), minus the batch's mean at each step (ours)",
}


def recipe(profile: str, **overrides) -> BanditSettings:
    """The profile's RLFT recipe on the bandits (``Profile.rlft_recipe``: what it changes from the
    paper's defaults) with ``overrides`` (None values ignored), checked."""
    from paperlib.profiles import get_profile

    chosen = get_profile(profile)
    return BanditSettings.from_recipe(chosen.name, chosen.rlft_recipe, **overrides)


def cot_ablation(recipe: BanditSettings, tokens: int, micro_batch: int = 0) -> BanditSettings:
    """The recipe with its chain of thought flipped (the paper's CoT ablation): without CoT if it
    thinks, with CoT if it does not, at ``tokens`` new tokens, and ``micro_batch`` decisions per
    forward and backward pass (0: the recipe's)."""
    flipped = replace(recipe, style="no_cot" if recipe.style == "cot" else "cot", max_new_tokens=tokens)
    return replace(flipped, micro_batch=micro_batch or recipe.micro_batch).check()


# -- one update ---------------------------------------------------------------------------------
def step_arrays(steps: pd.DataFrame, instances: int, horizon: int) -> dict[str, np.ndarray]:
    """A run's step rows as (instances x horizon) arrays: reward, valid, action, regret, coverage."""
    ordered = steps.sort_values(["episode", "turn"])
    if len(ordered) != instances * horizon:
        raise ValueError(f"expected {instances} x {horizon} step rows, got {len(ordered)}")
    return {
        name: ordered[name].to_numpy().reshape(instances, horizon)
        for name in ("reward", "valid", "action", "regret", "coverage")
    }


def advantages_of(
    steps: pd.DataFrame, settings: BanditSettings
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(advantage per step, shaped return-to-go per step, the arrays), episodes x steps."""
    from paperlib.training.rlft import objective

    s, spec = settings, settings.spec
    arrays = step_arrays(steps, s.instances, s.horizon)
    mask = np.ones(arrays["reward"].shape, dtype=bool)
    mean, scale = reward_moments(spec.sigma, spec.family)
    shaped = objective.shaped_rewards(
        arrays["reward"].astype(float),
        arrays["valid"].astype(bool),
        mask,
        mean=mean,
        scale=scale,
        actions=arrays["action"] if s.bonus else None,
        penalty=s.penalty,
    )
    advantages, returns = objective.mc_advantages(shaped, mask)
    return advantages, returns, arrays


# -- after training -------------------------------------------------------------------------------
def evaluate_adapters(
    out, adapters: dict, instances: int, rollouts_dir=None, progress: bool = True, shared_base=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out bandits under each of ``adapters`` (label -> a saved update, or None for the base
    model): ``instances`` instances with seeds ``HELD_OUT_SEEDS + i``, the same for every
    adapter, at the run's evaluation temperature (the paper's 0), arms, horizon and prompt.
    One store per label under ``rollouts_dir`` (default: the run's ``evaluation/``): a rerun
    with the same instances plays nothing (``paperlib.training.held_out.play_adapters``). Rows
    carry ``adapter``, ``update`` (0: base) and ``adapter_hash``. With ``shared_base``, the base
    model's store is kept there for every run that plays it the same way (training seeds, the
    bonus run), so it is played once."""
    from paperlib.bandits.llm import LLMAgent
    from paperlib.bandits.runner import run_bandit

    s = BanditSettings.of_run(out)

    def play(backend, _cell, labels, _store):
        agent = LLMAgent(
            backend,
            style=s.style,
            decision="free",
            temperature=s.eval_temperature,
            max_new_tokens=s.max_new_tokens,
            seed=s.seed,
        )
        return run_bandit(
            agent, s.spec, instances, seed=HELD_OUT_SEEDS, labels={**labels, "bonus": s.bonus}, progress=progress
        )

    same_play = {"style": s.style, "max_new_tokens": s.max_new_tokens, "spec": str(s.spec), "bonus": s.bonus}
    return play_adapters(
        out,
        adapters,
        {"": None},
        rollouts_dir,
        play,
        size=instances,
        max_batch=instances,
        restore=lambda: train(s, out, progress=progress, replay=True),
        shared_base=shared_base,
        base_key={**same_play, "eval_temperature": s.eval_temperature, "seed": s.seed if s.eval_temperature else None},
    )


def train_and_evaluate(
    settings: BanditSettings, out, instances: int, progress: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``settings`` in ``out`` (resuming what it holds), then play the base model (``base``)
    and the last adapter (``RLFT``) on ``instances`` held-out instances: (the training log, the
    held-out episodes). Notebook 14's runs beside its main recipe (the harder control, the CoT
    ablation)."""
    log = train(settings, out, progress=progress)
    episodes, _ = evaluate_adapters(out, {"base": None, "RLFT": settings.updates}, instances, progress=progress)
    return log, episodes


def references(settings: BanditSettings, instances: int, agents=("ucb", "random")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The classic agents on the held-out instances :func:`evaluate_adapters` plays (the paper's
    references in its Fig. 6): rows labelled like an adapter's (``adapter`` = the agent)."""
    from paperlib.bandits.baselines import BASELINES
    from paperlib.bandits.runner import run_bandit

    played = [
        run_bandit(
            BASELINES[name](),
            settings.spec,
            instances,
            seed=HELD_OUT_SEEDS,
            labels={"adapter": name, "update": 0, "adapter_hash": "", "bonus": False},
        )
        for name in agents
    ]
    return (
        pd.concat([e for e, _ in played], ignore_index=True),
        pd.concat([s.assign(adapter=e["adapter"].iloc[0]) for e, s in played], ignore_index=True),
    )


def frequency_bias_after(out, adapters: dict, profile, directory) -> dict[str, pd.DataFrame]:
    """Notebook 12's frequency-bias cases (the profile's ``freq_*`` knobs) scored by the run's
    base model and saved adapters (label -> update, or None for the base model), as
    ``experiments.frequency_bias_results`` scores a model: resumable in the store at
    ``directory``, whose rows carry the label as ``model``. The model loads only when some
    label has cases left to score."""
    from paperlib.backends.hf import HFBackend
    from paperlib.bandits import experiments

    labelled = replace(profile, freq_models=tuple(adapters))
    try:
        return experiments.stored_frequency_bias(labelled, directory)
    except FileNotFoundError:
        pass
    s = BanditSettings.of_run(out)
    results = {}
    for label, _, model, tokenizer, _ in each_adapter(RunDir(out), s.model, adapters):
        backend = HFBackend(s.model, lm=model, tokenizer=tokenizer)
        results |= experiments.frequency_bias_results(
            replace(profile, freq_models=(label,)), lambda _, backend=backend: backend, directory
        )
    return results


METRICS = ("regret", "coverage", "invalid_share")


def before_after(episodes: pd.DataFrame, metrics=METRICS, base: str = "base", within=()) -> pd.DataFrame:
    """One row per adapter (x ``within`` cell) x metric on held-out bandits
    (``paperlib.training.compare.before_after``), the invalid-action share being invalid steps
    over the horizon."""
    return compare.before_after(
        episodes.assign(invalid_share=episodes["invalid_steps"] / episodes["horizon"]), metrics, base, within
    )
