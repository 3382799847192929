"""RLFT on the bandits (paper B): PPO with a KL penalty on the model's own chains of thought,
through a peft LoRA adapter, one update per batch of bandits, resumable.

Paper B (Sec. 3) fine-tunes the whole model with PPO's clipped objective and a per-token KL
penalty to the frozen model, on the environment's reward, normalised, minus 5 for an output
with no valid action, with Monte-Carlo returns-to-go as the bandits' baseline; each rollout
plays 16 bandits drawn from a pool of 512 instances at temperature 1, and evaluation plays
held-out instances at temperature 0. Its exploration bonus (+1 for an arm not yet tried) is
a reward option (``bonus``). The objective's pieces live in :mod:`paperlib.training.rlft`,
the loop every game shares in :mod:`paperlib.training.rlft_loop`; this module is the
bandits' part of it and what notebook 14 computes after training:

- Rollout: the adapter of the update before plays ``instances`` bandits drawn from the pool
  with :class:`~paperlib.bandits.llm.LLMAgent`, the agent of notebooks 11-13.
- Advantages: the shaped step rewards (:func:`~paperlib.training.rlft.shaped_rewards`),
  returns-to-go minus the batch's mean at each step, standardised.
- Held-out evaluation of each saved adapter against the base model, UCB and random, the
  before/after table with its tests, the frequency bias after RLFT, sentences and claims.

The paper tunes all weights and reports LoRA insufficient; ours is a LoRA adapter, and every
notebook that shows our results says so. Each open choice is a named setting with its value
and source (:data:`SOURCES`, :func:`settings_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from paperlib.bandits.env import NOISE_SIGMA, BanditSpec
from paperlib.bandits.prompts import STYLES
from paperlib.stats import ALPHA
from paperlib.training.checkpoints import RunDir, each_adapter, from_preset
from paperlib.training.rlft_loop import RLFTBase, change, cot_verdict, held_out, lowered
from paperlib.training.rlft_loop import before_after as loop_before_after
from paperlib.training.rlft_loop import settings_table as loop_settings_table

POOL_SEEDS = 2_000_000  # the training pool: instances POOL_SEEDS .. POOL_SEEDS + pool - 1, every run's
HELD_OUT_SEEDS = 3_000_000  # held-out evaluation instances, disjoint from every pool


@dataclass(frozen=True)
class RLFTSettings(RLFTBase):
    """One RLFT run on the bandits: the shared settings (:class:`RLFTBase`) and the bandits'.
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

    def check(self) -> "RLFTSettings":
        """Refuse, in one line, settings that cannot run (before any model loads)."""
        super().check()
        if self.style not in STYLES:
            raise ValueError(f"unknown prompt style {self.style!r}; choose one of {', '.join(STYLES)}")
        self.spec  # noqa: B018 (BanditSpec refuses bad arms, horizon, family or noise)
        if self.instances < 1:
            raise ValueError(f"instances must be at least 1, got {self.instances}")
        if self.instances > self.pool:
            raise ValueError(f"an update draws {self.instances} instances from a pool of {self.pool}: "
                             f"the pool must be at least as large")
        if self.pool > HELD_OUT_SEEDS - POOL_SEEDS:
            raise ValueError(f"a pool of at most {HELD_OUT_SEEDS - POOL_SEEDS} instances, got {self.pool}")
        return self

    def rollout(self, trainer, update: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        from paperlib.bandits.llm import LLMAgent
        from paperlib.bandits.runner import run_bandit

        agent = LLMAgent(trainer.backend, style=self.style, decision="free", temperature=self.temperature,
                         max_new_tokens=self.max_new_tokens, seed=self.sampling_seed(update))
        trainer.model.eval()
        return run_bandit(agent, self.spec, self.instances, seeds=self.update_seeds(update),
                          labels={"update": update, "bonus": self.bonus})

    def advantages(self, steps: pd.DataFrame, trainer=None) -> tuple[np.ndarray, None, dict]:
        advantages, returns, arrays = advantages_of(steps, self)
        episodes = steps.groupby("episode")
        return advantages.reshape(-1), None, {
            "bonus": self.bonus, "mean_return": float(returns[:, 0].mean()),
            "reward_mean": float(arrays["reward"].mean()), "regret": float(episodes["regret"].last().mean()),
            "coverage": float(episodes["coverage"].last().mean()), "invalid_rate": float(1 - arrays["valid"].mean())}


SOURCES = {
    "bonus": "paper (exploration bonus, +1 for an arm not yet tried; off unless asked)",
    "instances": "paper (16 bandits per rollout)", "pool": "paper (a pool of 512 instances)",
    "arms": "ours: notebook 11's main setting (the paper trains and shows 5, 10 and 20 arms)",
    "horizon": "paper (50 steps)", "family": "ours: notebook 11's main setting", "noise": "ours: the low noise level",
    "style": "paper (RLFT on the model's chain of thought)",
    "reward_normalisation": "ours: one reward's moments under the prior, fixed (paperlib.training.rlft)",
    "baseline": "paper (Monte-Carlo returns-to-go), minus the batch's mean at each step (ours)",
}


def settings_table(settings: RLFTSettings) -> pd.DataFrame:
    """Every setting with its value and source: notebook 14's table."""
    from paperlib.training import rlft

    derived = {"reward_normalisation": "mean %.3f, std %.3f" % rlft.bandit_reward_moments(
        NOISE_SIGMA[settings.noise] if settings.family == "gaussian" else 0.0, settings.family),
               "baseline": "returns-to-go, undiscounted", "kl_estimator": "k3"}
    return loop_settings_table(settings, SOURCES, derived)


# Per-profile presets [ours]. cpu: Qwen2.5-Coder-0.5B, the embedded model that writes ACTION= itself
# (a valid one in 55% of its no-CoT steps in notebook 11 on cpu): the paper's free protocol without CoT,
# sized for a 2-core machine (the budget is updates x instances x horizon decisions of 16 tokens).
PRESETS = {
    "smoke": RLFTSettings(model="smollm2-135m", profile="smoke", updates=2, instances=2, pool=8, arms=3, horizon=3,
                          style="no_cot", max_new_tokens=4),
    "cpu": RLFTSettings(model="qwen2.5-coder-0.5b", profile="cpu", updates=12, instances=8, pool=64, arms=5,
                        horizon=10, style="no_cot", max_new_tokens=16, micro_batch=20),
    "paper": RLFTSettings(model="gemma2-2b", profile="paper", micro_batch=16),
}


def settings_for(profile: str, **overrides) -> RLFTSettings:
    """The profile's preset with ``overrides`` (None values ignored), checked."""
    return from_preset(PRESETS, profile, **overrides)


# -- one update ---------------------------------------------------------------------------------


def step_arrays(steps: pd.DataFrame, instances: int, horizon: int) -> dict[str, np.ndarray]:
    """A run's step rows as (instances x horizon) arrays: reward, valid, action, regret, coverage."""
    ordered = steps.sort_values(["episode", "turn"])
    if len(ordered) != instances * horizon:
        raise ValueError(f"expected {instances} x {horizon} step rows, got {len(ordered)}")
    return {name: ordered[name].to_numpy().reshape(instances, horizon)
            for name in ("reward", "valid", "action", "regret", "coverage")}


def advantages_of(steps: pd.DataFrame, settings: RLFTSettings) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(advantage per step, shaped return-to-go per step, the arrays), episodes x steps."""
    from paperlib.training import rlft

    s, spec = settings, settings.spec
    arrays = step_arrays(steps, s.instances, s.horizon)
    mask = np.ones(arrays["reward"].shape, dtype=bool)
    mean, scale = rlft.bandit_reward_moments(spec.sigma, spec.family)
    shaped = rlft.shaped_rewards(arrays["reward"].astype(float), arrays["valid"].astype(bool), mask, mean=mean,
                                 scale=scale, actions=arrays["action"] if s.bonus else None, penalty=s.penalty)
    advantages, returns = rlft.mc_advantages(shaped, mask)
    return advantages, returns, arrays


# -- after training -------------------------------------------------------------------------------


def evaluate_adapters(out, adapters: dict, instances: int, rollouts_dir=None, progress: bool = True
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out bandits under each of ``adapters`` (label -> a saved update, or None for the base
    model): ``instances`` instances with seeds ``HELD_OUT_SEEDS + i``, the same for every
    adapter, at the run's evaluation temperature (the paper's 0), arms, horizon and prompt.
    One store per label under ``rollouts_dir`` (default: the run's ``evaluation/``): a rerun
    with the same instances plays nothing. Rows carry ``adapter``, ``update`` (0: base) and
    ``adapter_hash``."""
    from paperlib.bandits.llm import LLMAgent
    from paperlib.bandits.runner import run_bandit

    s = RLFTSettings.of_run(out)

    def play(backend, _, labels):
        agent = LLMAgent(backend, style=s.style, decision="free", temperature=s.eval_temperature,
                         max_new_tokens=s.max_new_tokens, seed=s.seed)
        return run_bandit(agent, s.spec, instances, seed=HELD_OUT_SEEDS, labels={**labels, "bonus": s.bonus},
                          progress=progress)

    directory = rollouts_dir if rollouts_dir is not None else RunDir(out).path / "evaluation"
    return held_out(out, adapters, {"": None}, instances, directory, play)


def train_and_evaluate(settings: RLFTSettings, out, instances: int, progress: bool = True
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train ``settings`` in ``out`` (resuming what it holds), then play the base model (``base``)
    and the last adapter (``RLFT``) on ``instances`` held-out instances: (the training log, the
    held-out episodes). Notebook 14's runs beside its main recipe (the harder control, the CoT
    ablation)."""
    from paperlib.training.rlft_loop import train

    log = train(settings, out, progress=progress, postfix=("invalid_rate", "regret"))
    episodes, _ = evaluate_adapters(out, {"base": None, "RLFT": settings.updates}, instances, progress=progress)
    return log, episodes


def cot_ablation(recipe: RLFTSettings, tokens: int) -> RLFTSettings:
    """The recipe with its chain of thought flipped (the paper's CoT ablation): without CoT if it
    thinks, with CoT if it does not, at ``tokens`` new tokens."""
    return replace(recipe, style="no_cot" if recipe.style == "cot" else "cot", max_new_tokens=tokens).check()


def cot_ablation_sentence(table: pd.DataFrame) -> str:
    """RLFT with and without CoT (``before_after`` within ``cot`` of each style's base model and
    adapter): each metric's change per style, beside what paper B reports."""
    rows = table.set_index(["cot", "adapter", "metric"])
    lines = []
    for cot in sorted(set(table["cot"]), reverse=True):
        cells = [f"{metric.replace('_', ' ')} {rows.loc[(cot, 'base', metric), 'mean']:.3f} → "
                 f"{rows.loc[(cot, 'RLFT', metric), 'mean']:.3f} ({change(rows.loc[(cot, 'RLFT', metric)])})"
                 for metric in METRICS]
        lines.append(f"RLFT {'with' if cot else 'without'} CoT, base model → adapter on the same held-out instances: "
                     + "; ".join(cells) + ".")
    with_cot, without = (lowered(rows.loc[(cot, "RLFT", "regret")]) for cot in (True, False))
    lines.append("Paper B reports RLFT without CoT doing much worse than with it (Fig. 9b, on tic-tac-toe; it gives no "
                 "number for the bandits). " + cot_verdict("lowers regret", with_cot, without))
    return "\n\n".join(lines)


def references(settings: RLFTSettings, instances: int, agents=("ucb", "random")) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The classic agents on the held-out instances :func:`evaluate_adapters` plays (the paper's
    references in its Fig. 6): rows labelled like an adapter's (``adapter`` = the agent)."""
    from paperlib.bandits.baselines import BASELINES
    from paperlib.bandits.runner import run_bandit

    played = [run_bandit(BASELINES[name](), settings.spec, instances, seed=HELD_OUT_SEEDS,
                         labels={"adapter": name, "update": 0, "adapter_hash": "", "bonus": False})
              for name in agents]
    return (pd.concat([e for e, _ in played], ignore_index=True),
            pd.concat([s.assign(adapter=e["adapter"].iloc[0]) for e, s in played], ignore_index=True))


def frequency_bias_after(out, adapters: dict, profile, directory) -> dict[str, pd.DataFrame]:
    """Notebook 12's frequency-bias cases (the profile's ``freq_*`` knobs) scored by the run's
    base model and saved adapters (label -> update, or None for the base model), as
    ``experiments.frequency_bias_results`` scores a model: resumable in the store at
    ``directory``, whose rows carry the label as ``model``. The model loads only when some
    label has cases left to score."""
    from dataclasses import replace

    from paperlib.backends.hf import HFBackend
    from paperlib.bandits import experiments

    labelled = replace(profile, freq_models=tuple(adapters))
    try:
        return experiments.stored_frequency_bias(labelled, directory)
    except FileNotFoundError:
        pass
    s = RLFTSettings.of_run(out)
    results = {}
    for label, _, model, tokenizer, _ in each_adapter(RunDir(out), s.model, adapters):
        backend = HFBackend(s.model, lm=model, tokenizer=tokenizer)
        results |= experiments.frequency_bias_results(replace(profile, freq_models=(label,)), lambda _: backend,
                                                      directory)
    return results


def frequency_bias_sentence(table: pd.DataFrame, reported: pd.DataFrame) -> str:
    """The frequency bias before and after RLFT (``experiments.frequency_bias_claims``' table, one
    row per label) beside paper B's Gemma2 2B (B18-B21)."""
    paper = reported.set_index("id")["value"]
    rows = table.set_index("model")
    base = rows.loc["base"]
    cells = "; ".join(f"`{label}` {row['frequent, 0-10 repetitions']:.2f} (r = {row['r']:.2f}, frequent overall "
                      f"{row['frequent']:.2f})" for label, row in rows.drop(index="base").iterrows())
    return (f"Share of predictions that are the most frequent action at 0-10 repetitions: base model "
            f"{base['frequent, 0-10 repetitions']:.2f} (r = {base['r']:.2f}, frequent overall {base['frequent']:.2f}); "
            f"after RLFT {cells}. Paper B, Gemma2 2B: {paper['B18']} before and {paper['B19']} after RLFT, with "
            f"r = {paper['B20']} and a frequent fraction of {paper['B21']} after. The cases are notebook 12's "
            f"({', '.join(map(str, sorted(table['model'])))} scored on the same histories).")


METRICS = ("regret", "coverage", "invalid_share")


def before_after(episodes: pd.DataFrame, metrics=METRICS, base: str = "base", within=()) -> pd.DataFrame:
    """One row per adapter (x ``within`` cell) x metric on held-out bandits
    (``rlft_loop.before_after``), the invalid-action share being invalid steps over the horizon."""
    return loop_before_after(episodes.assign(invalid_share=episodes["invalid_steps"] / episodes["horizon"]), metrics,
                             base, within)



def control_sentence(table: pd.DataFrame, adapter: str, gates: bool = True) -> str:
    """The positive control: did the -5 penalty lower the held-out invalid-action share? With
    ``gates``, what that means for the regret and coverage that follow."""
    rows = table.set_index(["adapter", "metric"])
    base, trained = rows.loc[("base", "invalid_share")], rows.loc[(adapter, "invalid_share")]
    return (f"Positive control: the held-out invalid-action share went from {base['mean']:.3f} "
            f"[{base['ci_low']:.3f}, {base['ci_high']:.3f}] (base model) to {trained['mean']:.3f} "
            f"[{trained['ci_low']:.3f}, {trained['ci_high']:.3f}] (`{adapter}`, {int(trained['n'])} instances; "
            f"{change(trained)}). " + (
                ("The trainer learns what the penalty asks for within this budget"
                 + ("; regret and coverage below can be read." if gates else "."))
                if lowered(trained) else
                ("The trainer did not lower it significantly within this budget"
                 + (", so no claim about regret or coverage below is made from this run: it would need more updates, "
                    "instances or a larger learning rate." if gates else "."))))


def harder_control_sentence(model: str, log: pd.DataFrame, episodes: pd.DataFrame) -> str:
    """The positive control on a model that rarely writes a valid action (the profile's
    ``rlft_control_models``): its held-out invalid share before and after (``episodes``: the
    base model's and the last adapter's, labelled ``base`` and ``RLFT``) and in training (``log``: its
    ``step``, ``invalid_rate`` and ``decisions`` per update); when nothing moved, why, from the log."""
    table = before_after(episodes)
    trained = table.set_index(["adapter", "metric"]).loc[("RLFT", "invalid_share")]
    invalid = log.sort_values("step")["invalid_rate"]
    sentence = (f"**{model}**: " + control_sentence(table, "RLFT", gates=False)
                + f" In training the invalid share went {invalid.iloc[0]:.3f} → {invalid.iloc[-1]:.3f} over "
                  f"{len(invalid)} updates.")
    if lowered(trained):
        return sentence
    if (invalid == 1).all():
        return sentence + (" No update held a single valid action, so every step paid the same penalty and the "
                           "advantages followed only the random fallback arms' rewards: the penalty gave no signal "
                           "about the format, and more updates alone would not move it. The model first needs valid "
                           "actions to reinforce (a prompt or a few supervised examples that elicit the format, or "
                           "many more samples per update).")
    valid = round(float(((1 - log["invalid_rate"]) * log["decisions"]).sum()))
    return sentence + (f" Only {valid} of its {int(log['decisions'].sum())} training decisions were valid actions, so "
                       "the penalty's signal was that rare: for it to move the share within a budget like this one, the "
                       "model would first need valid actions far more often (a prompt or a few supervised examples that "
                       "elicit the format), or many more samples per update.")


def rlft_sentence(table: pd.DataFrame, reported: pd.DataFrame, settings: RLFTSettings, adapters: dict) -> str:
    """Regret and coverage of each trained adapter against the base model, beside paper B's
    (rows B17, B22, B23, B30 of ``reported``) and the reference agents on the same instances.
    ``adapters``: label -> a description."""
    paper = reported.set_index("id")["value"]
    rows = table.set_index(["adapter", "metric"])
    s = settings
    lines = [f"Paper B (Gemma2, all weights tuned, 10 arms, 50 steps, CoT): coverage +{float(paper['B17']):.2f} for "
             f"2B after 30K updates; {paper['B22']} coverage without and {paper['B23']} with the exploration bonus; "
             f"regret falls for 2B and 9B."]
    for label, what in adapters.items():
        cells = []
        for metric in ("coverage", "regret"):
            base, trained = rows.loc[("base", metric)], rows.loc[(label, metric)]
            cells.append(f"{metric} {base['mean']:.3f} → {trained['mean']:.3f} ({change(trained)})")
        lines.append(f"Ours ({s.model}, a rank-{s.lora_rank} LoRA adapter after {s.updates} updates, {what}; "
                     f"{s.arms} arms, {s.horizon} steps, {s.style.replace('_', ' ')}): " + "; ".join(cells) + ".")
    references = [f"{name} regret {rows.loc[(name, 'regret'), 'mean']:.3f}, coverage "
                  f"{rows.loc[(name, 'coverage'), 'mean']:.3f}" for name in ("ucb", "random")
                  if (name, "regret") in rows.index]
    if references:
        lines.append("On the same held-out instances: " + "; ".join(references) + ".")
    lines.append("The paper tunes every weight and reports LoRA insufficient; our adapters are LoRA at a CPU budget, "
                 "so a change that does not appear here is not evidence against the paper.")
    return "\n\n".join(lines)


def rlft_claims_table(table: pd.DataFrame, episodes: pd.DataFrame, source, profile: str, model: str,
                      frequency: pd.DataFrame | None = None) -> pd.DataFrame:
    """Notebook 14's held-out results in the claims schema (``paperlib.claims``): the coverage gain
    of RLFT (B17) and its regret change (B30) against the base model, and coverage with the
    exploration bonus against without (B22/B23), each shown only when significant at ALPHA
    (Welch) in the paper's direction **[ours]**; with ``frequency`` (the frequency-bias table
    of base and ``RLFT``), the frequent share at 0-10 repetitions after RLFT (B19; shown when
    below the base model's, a share of the cases with no test **[ours]**)."""
    from paperlib.claims import claims_table, source_name
    from paperlib.stats import welch

    rows = table.set_index(["adapter", "metric"])
    who = f"{model} (LoRA adapter, {profile})"

    def gain(metric, label="RLFT"):
        trained, base = rows.loc[(label, metric)], rows.loc[("base", metric)]
        return trained["mean"] - base["mean"], trained["p"], trained["g"]

    coverage, coverage_p, coverage_g = gain("coverage")
    regret, regret_p, regret_g = gain("regret")
    plain = episodes[episodes["adapter"] == "RLFT"]["coverage"]
    bonus = episodes[episodes["adapter"] == "RLFT + bonus"]["coverage"]
    _, bonus_p = welch(bonus, plain)
    with_bonus = rows.loc[("RLFT + bonus", "coverage")]
    claims = pd.DataFrame([
        {"reported": "B17", "what": "coverage gain of RLFT over the base model (held-out, absolute)", "model": who,
         "ours": coverage, "effect_if": "a significant gain (Welch p < 0.05)",
         "shown": coverage > 0 and coverage_p < ALPHA, "note": f"p = {coverage_p:.2g}, Hedges' g = {coverage_g:.2f}"},
        {"reported": "B30", "what": "change in final cumulative regret, RLFT against the base model (held-out)",
         "model": who, "ours": regret, "effect_if": "a significant fall (Welch p < 0.05)",
         "shown": regret < 0 and regret_p < ALPHA, "note": f"p = {regret_p:.2g}, Hedges' g = {regret_g:.2f}"},
        {"reported": "B22/B23", "what": "coverage with the exploration bonus (held-out)", "model": who,
         "ours": with_bonus["mean"], "ours_low": with_bonus["ci_low"], "ours_high": with_bonus["ci_high"],
         "effect_if": "significantly above RLFT without the bonus (Welch p < 0.05)",
         "shown": with_bonus["mean"] > plain.mean() and bonus_p < ALPHA,
         "note": f"without the bonus {plain.mean():.3f}; p = {bonus_p:.2g}"},
    ])
    if frequency is not None:
        shares = frequency.set_index("model")["frequent, 0-10 repetitions"]
        claims = pd.concat([claims, pd.DataFrame([{
            "reported": "B18/B19", "what": "share of predictions that are the most frequent action, 0-10 repetitions, "
            "after RLFT", "model": who, "ours": shares["RLFT"], "effect_if": "below the base model's",
            "shown": shares["RLFT"] < shares["base"], "note": f"base model {shares['base']:.3f}; no test"}])],
            ignore_index=True)
    return claims_table(claims.assign(source=source_name(source)), "14_rlft_bandits", profile)
