"""GRPO on the dining philosophers: trl's ``GRPOTrainer`` with a peft LoRA adapter, fed by the
table's own episodes (paper A, GRPO recipe: ART in the paper, trl + peft here).

The recipe the paper states is the default (:class:`GRPOSettings`): N = 5, R = 5, 16 steps,
each step 2 groups of 3 episodes, every episode of a group from the same seed, advantages
relative within the group, LoRA rank 8, the last adapter kept. Everything it does not
state is a named setting with its value and source (ART's default, trl's, or ours): see
:data:`SOURCES` and :func:`settings_table`.

How episodes become trl's rows (trl's ``rollout_func`` contract):

- The dataset holds one row per (seed, seat, turn) of every step, seed-major, unshuffled
  (``rows="turn"``), or one per (seed, seat) (``rows="seat"``); its ``prompt`` is the
  row's key as JSON. trl repeats each row G times (``num_generations`` = the group's
  size), so one step's batch is every seat and turn of ``groups`` seeds, G times over,
  and trl's groups of G consecutive rows are one seat (and turn) in the G episodes of one
  seed: advantages are relative within the group.
- :class:`TableRollout` plays the step's episodes, G per seed, with the current policy:
  the trainer's own peft model behind :class:`~paperlib.backends.hf.HFBackend` and
  :class:`~paperlib.philosophers.llm.LLMPolicy`, the same decision core, prompts, parser
  and backend the evaluation uses, at the training temperature. The step rows become
  traces per seat (:func:`~paperlib.llm.traces.seat_traces`), and the j-th repetition of
  a seed's row takes the j-th episode of that seed.
- ``rows="turn"`` (the default **[ours]**): a row is one decision, its prompt and the
  completion sampled from it, exactly what the policy saw. A turn an episode never
  reached (it deadlocked first) is a masked one-token row with no reward, which trl
  leaves out of its group's baseline. ``rows="seat"``: a row is a seat's whole
  trajectory packed into one sequence, every later turn's prompt masked out of the loss
  by ``env_mask``. The table's prompts carry no history (each turn's prompt is a fresh
  conversation of rules and observation), so in a packed row each later completion is
  scored after earlier turns it was not sampled with: an approximation, kept as a
  setting; it also costs about twice as much per step here (every later prompt is fed
  in full).
- Each row carries its episode's outcome as extra keys, which reach the reward
  function as keyword arguments: the chosen reward of the episode goes to every seat
  and turn **[ours]**, as paper A's reward is per episode.

Rewards (``reward``): ``paper``, paper A's clipped reward; ``shaped``, its variant whose
no-deadlock credit needs a meal (``paperlib.philosophers.reward``); ``valid``, the share of
the episode's decisions that were valid actions, the positive control **[ours]**.

Each step saves its adapter (trl's ``checkpoint-<step>``) and appends a row to the run's
training log (``paperlib.training.checkpoints.RunDir``); the step's episodes are saved with
the hash of the adapter that generated them. A killed run resumes from its last complete
checkpoint (trl restores the adapter, optimiser and RNG state; the episodes of a step are
a function of the adapter, the run seed and the step's seeds) and ends with the same log.

What trl could not express, and the narrowest override (``make_trainer_class``):
``_get_per_token_logps_and_entropies``, to feed the system prompt all rows share once
instead of once per row (the same log-probabilities and gradients, tested against trl's
path; a smoke step's training side is several times cheaper, since the shared rules and
tools are ≈ 85% of a turn row's tokens), and ``_generate_and_score_completions``, to log
a KL to the base model when ``beta = 0`` (trl then computes none).
"""

from __future__ import annotations

import json
import logging
import math
import os
import resource
import time
from dataclasses import asdict, dataclass, fields

import pandas as pd

from paperlib.training.checkpoints import RunDir, adapter_hash, from_preset, quiet_trl

# reward name -> the episode column it reads
REWARDS = {"paper": "reward", "shaped": "reward_shaped", "valid": "valid_share"}
ROW_LAYOUTS = ("seat", "turn")
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
SCALE_REWARDS = ("group", "batch", "none")
GENERATIONS = ("hf", "vllm")
COMPONENTS = ("r_nd", "r_thru", "r_fair", "r_idle")
# Episode seeds of training runs start here [ours]: disjoint from the evaluation's (episode
# e of an evaluation has seed e, far below) and from validation's (VALIDATION_SEEDS).
TRAINING_SEEDS = 1_000_000
SEEDS_PER_RUN = 10_000  # training run with seed S draws its episode seeds from S * SEEDS_PER_RUN on
VALIDATION_SEEDS = 500_000


@dataclass(frozen=True)
class GRPOSettings:
    """One GRPO run. Sources per field in :data:`SOURCES`."""

    model: str = "qwen3-14b"
    reward: str = "paper"
    seed: int = 0  # the run's seed: LoRA init, sampling, its episode seeds
    profile: str = "custom"  # a label: the preset this run started from
    # -- the paper's recipe
    n: int = 5
    rounds: int = 5
    steps: int = 16
    groups: int = 2
    group_size: int = 3
    lora_rank: int = 8
    # -- not stated by the paper
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    learning_rate: float = 2.5e-4
    lr_scheduler: str = "constant"
    max_grad_norm: float = 0.1
    weight_decay: float = 0.1
    adam_beta2: float = 0.99
    beta: float = 0.0
    loss_type: str = "dapo"
    epsilon: float = 0.2
    scale_rewards: str = "group"
    temperature: float = 1.0
    max_new_tokens: int = 32
    prompt: str = "options-v1"
    mode: str = "simultaneous"
    rows: str = "turn"
    micro_batch: int = 0  # rows per forward and backward pass; 0: the whole step's batch
    gradient_checkpointing: bool = True
    shared_prefix: bool = True
    generation: str = "hf"
    measure_kl: bool = True

    # -- derived sizes
    @property
    def row_count(self) -> int:
        """Rows of one step's batch: every seat (and turn) of every episode."""
        per_episode = self.n * (self.rounds if self.rows == "turn" else 1)
        return per_episode * self.groups * self.group_size

    @property
    def rows_per_pass(self) -> int:
        return self.micro_batch or self.row_count

    def step_seeds(self, step: int) -> list[int]:
        """The episode seeds of ``step`` (1-based), one per group."""
        first = TRAINING_SEEDS + self.seed * SEEDS_PER_RUN + (step - 1) * self.groups
        return list(range(first, first + self.groups))

    def check(self) -> "GRPOSettings":
        """Refuse, in one line, settings that cannot run (before any model loads)."""
        from paperlib.models import resolve
        from paperlib.philosophers.env import MODES
        from paperlib.philosophers.prompts import get_prompt

        if resolve(self.model).kind == "gateway":
            raise ValueError(f"{self.model!r} is a gateway model: only local models (embedded or hub) can be trained")
        get_prompt(self.prompt)
        choices = {"reward": (self.reward, tuple(REWARDS)), "rows": (self.rows, ROW_LAYOUTS),
                   "loss_type": (self.loss_type, LOSS_TYPES), "scale_rewards": (self.scale_rewards, SCALE_REWARDS),
                   "generation": (self.generation, GENERATIONS), "mode": (self.mode, MODES)}
        for name, (value, allowed) in choices.items():
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
        if self.steps < 1:
            raise ValueError(f"steps must be at least 1, got {self.steps}")
        if self.group_size < 2:
            raise ValueError(f"a group of {self.group_size} episode: GRPO's advantage is relative within a group, "
                             f"which needs at least 2 episodes")
        at_least_one = {"groups": self.groups, "rounds": self.rounds, "lora_rank": self.lora_rank,
                        "max_new_tokens": self.max_new_tokens, "seed + 1": self.seed + 1}
        for name, value in at_least_one.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.n < 2:
            raise ValueError(f"a table needs at least 2 philosophers, got {self.n}")
        if not self.learning_rate > 0 or not self.temperature > 0 or not self.epsilon > 0:
            raise ValueError("learning_rate, temperature and epsilon must be positive (at temperature 0 every "
                             "episode of a group is the same episode)")
        if self.beta < 0:
            raise ValueError(f"beta must be zero or more, got {self.beta}")
        if self.micro_batch < 0 or self.row_count % self.rows_per_pass:
            raise ValueError(f"micro_batch {self.micro_batch} must divide the step's {self.row_count} rows")
        if self.groups * self.steps > SEEDS_PER_RUN:
            raise ValueError(f"at most {SEEDS_PER_RUN} episode seeds per run, got {self.groups * self.steps}")
        return self

    def config(self) -> dict:
        """The settings as JSON values (the run directory's ``run.json``)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


SOURCES = {
    "n": "paper (N = 5)", "rounds": "paper (R = 5)", "steps": "paper (16 steps)",
    "groups": "paper (2 groups per step)", "group_size": "paper (3 episodes per group)",
    "lora_rank": "paper (LoRA rank 8)",
    "lora_alpha": "ours (twice the rank)",
    "lora_targets": "ours (the attention projections)",
    "learning_rate": "ours, measured on the positive control (SmolLM2, N = 2, R = 1, 2 groups of 4, held-out "
                     "valid share from 0.10): 1e-4 for 4 steps 0.18 (not significant), 1e-3 for 4 steps 0.58, "
                     "2.5e-4 for 12 steps 0.79; ART's 5e-6 and trl's 1e-6 move an adapter 50-250x less per step "
                     "(an Adam step is about the learning rate)",
    "lr_scheduler": "ART's default (constant)", "max_grad_norm": "ART's default", "weight_decay": "ART's default",
    "adam_beta2": "ART's default",
    "beta": "ART's default (no KL penalty)", "loss_type": "trl's default", "epsilon": "trl's default (PPO's clip)",
    "scale_rewards": "trl's default (advantage / the group's std)",
    "temperature": "ours: the evaluation's sampling temperature",
    "max_new_tokens": "ours: the evaluation's budget for the profile",
    "prompt": "ours: the evaluation's default prompt version (cpu: rules-v1, the version notebook 02's probe "
              "chose for Qwen2.5-Coder-0.5B by its valid-call rate)",
    "mode": "ours: the evaluation's default turn order",
    "rows": "ours: a turn row is exactly what the policy sampled from; the table's prompts carry no history, so "
            "a packed seat row scores each completion after earlier turns it was not sampled with",
    "micro_batch": "ours: memory (gradient accumulation over the step's batch)",
    "gradient_checkpointing": "trl's default (cpu profile: off, ours: the activations of a shared-prefix "
                              "micro-batch fit in memory, and the backward pass need not recompute the forward)",
    "shared_prefix": "ours: the rules every row shares fed once per micro-batch, and the LM head at completion "
                     "positions only (trl's path on False; the same log-probabilities and gradients, tested)",
    "generation": "ours: hf on a CPU, trl's colocated vLLM on a GPU",
    "measure_kl": "ours: log KL(policy ‖ base) with beta = 0 (one more forward pass per step; turn rows at "
                  "temperature 1)",
    "seat_reward": "ours: the episode's reward to every seat and turn",
}


def settings_table(settings: GRPOSettings) -> pd.DataFrame:
    """Every setting with its value and source: notebook 03's table."""
    rows = [{"setting": f.name, "value": str(getattr(settings, f.name)), "source": SOURCES.get(f.name, "run")}
            for f in fields(settings)]
    rows.append({"setting": "seat_reward", "value": "episode", "source": SOURCES["seat_reward"]})
    return pd.DataFrame(rows)


# Per-profile presets [ours]; ``cpu`` and ``paper`` keep the paper's recipe. max_new_tokens is
# the evaluation's budget for the profile (notebook 02). micro_batch: on a CPU a pass of 50 turn
# rows of Qwen2.5-Coder-0.5B peaked at 15 GB, so 30 (5 passes, each feeding the shared prompt
# once more); on a GPU, 6 rows of up to 1024 completion tokens.
PRESETS = {
    "smoke": GRPOSettings(model="smollm2-135m", profile="smoke", n=3, rounds=2, steps=2, groups=1, group_size=2,
                          max_new_tokens=16),
    "cpu": GRPOSettings(model="qwen2.5-coder-0.5b", profile="cpu", max_new_tokens=16, micro_batch=30,
                        prompt="rules-v1", gradient_checkpointing=False),
    "paper": GRPOSettings(model="qwen3-14b", profile="paper", max_new_tokens=1024, micro_batch=6, generation="vllm"),
}


def settings_for(profile: str, **overrides) -> GRPOSettings:
    """The profile's preset with ``overrides`` (None values ignored), checked."""
    return from_preset(PRESETS, profile, **overrides)


# -- episode outcomes ------------------------------------------------------------------
def add_outcomes(episodes: pd.DataFrame) -> pd.DataFrame:
    """Each episode's decisions, valid share (the positive control's reward), valid-call and
    invalid-action rates, from the runner's counts."""
    decisions = episodes["actions_total"] + episodes["no_actions"]
    calls = episodes["actions_total"]
    return episodes.assign(
        decisions=decisions,
        valid_share=(calls - episodes["invalid_actions"]) / decisions,
        valid_call_rate=calls / decisions,
        invalid_action_rate=(episodes["invalid_actions"] / calls.where(calls > 0)),
    )


def step_summary(episodes: pd.DataFrame) -> dict:
    """A step's log columns from its episodes: mean and std of every reward and component,
    deadlock rate, meals, valid-call and invalid-action rates (pooled over decisions)."""
    row = {"episodes": len(episodes)}
    for column in ("reward", "reward_shaped", "valid_share", *COMPONENTS):
        row[f"{column}_mean"] = float(episodes[column].mean())
        row[f"{column}_std"] = float(episodes[column].std(ddof=0))
    calls = episodes["actions_total"].sum()
    row.update(deadlock_rate=float(episodes["deadlock"].mean()), meals=float(episodes["meals_total"].mean()),
               valid_call_rate=float(calls / episodes["decisions"].sum()),
               invalid_action_rate=float(episodes["invalid_actions"].sum() / calls) if calls else math.nan)
    return row


# -- the rollout -----------------------------------------------------------------------------
class TableRollout:
    """trl's ``rollout_func``: play the step's episodes with the trainer's current policy and
    lay them out as the step's rows (module doc)."""

    def __init__(self, settings: GRPOSettings, tokenizer, run: RunDir):
        self.settings, self.tokenizer, self.run = settings, tokenizer, run
        self.backend = None
        self.last: dict | None = None  # the last step's summary, for its log row

    def _backend(self, trainer, model):
        if self.settings.generation == "vllm":  # trl's colocated engine, whose weights trl syncs each step
            from paperlib.backends.vllm_backend import VLLMBackend
            from paperlib.models import resolve

            return VLLMBackend(resolve(self.settings.model).source, llm=trainer.vllm_generation.llm)
        from paperlib.backends.hf import HFBackend

        return HFBackend(self.settings.model, lm=model, tokenizer=self.tokenizer,
                         max_batch=self.settings.n * self.settings.groups * self.settings.group_size)

    def __call__(self, prompts: list[str], trainer) -> dict:
        from peft import get_peft_model_state_dict

        from paperlib.llm.traces import seat_traces
        from paperlib.philosophers.episode import run_episodes
        from paperlib.philosophers.llm import LLMPolicy

        s = self.settings
        started = time.perf_counter()
        step = trainer.state.global_step + 1
        model = trainer.accelerator.unwrap_model(trainer.model)
        generating = adapter_hash(get_peft_model_state_dict(model))
        if self.backend is None:
            self.backend = self._backend(trainer, model)
        keys = [json.loads(p) for p in prompts]
        seeds = list(dict.fromkeys(k["seed"] for k in keys))
        if seeds != s.step_seeds(step):
            raise RuntimeError(f"step {step} got the rows of seeds {seeds}, expected {s.step_seeds(step)}")
        policy = LLMPolicy(self.backend, prompt=s.prompt, decision="free", temperature=s.temperature,
                           max_new_tokens=s.max_new_tokens, seed=s.seed)
        was_training = model.training
        model.eval()  # no dropout, no gradient checkpointing while generating
        try:
            episodes, steps = run_episodes(policy, s.n, s.rounds, [x for x in seeds for _ in range(s.group_size)],
                                           mode=s.mode, labels={"model": s.model, "train_step": step})
        finally:
            model.train(was_training)
        episodes = add_outcomes(episodes).assign(adapter_hash=generating)
        steps = steps.assign(train_step=step, adapter_hash=generating)
        column = REWARDS[s.reward]
        traces = {(t.episode, t.seat): t for t in seat_traces(steps, episodes, self.backend.encode, reward=column)}
        out = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "logprobs": None, "episode_reward": [],
               "policy_logprob": []}
        seen: dict[tuple, int] = {}
        for key in keys:
            j = seen[tuple(key.items())] = seen.get(tuple(key.items()), -1) + 1
            episode = seeds.index(key["seed"]) * s.group_size + j
            trace = traces[(episode, key["seat"])]
            logprob = None  # the sampled completion's log-probability, for the KL estimate (turn rows)
            if s.rows == "seat":
                prompt, completion, mask = trace.packed()
                reward = trace.reward
            elif key["turn"] in trace.turns:
                t = trace.turns.index(key["turn"])
                prompt, completion = trace.prompt_ids[t], trace.completion_ids[t]
                mask, reward, logprob = [1] * len(completion), trace.reward, trace.completion_logprobs[t]
            else:  # the episode ended before this turn
                prompt, completion, mask, reward = trace.prompt_ids[0], [self.tokenizer.eos_token_id], [0], None
            out["prompt_ids"].append(list(prompt))
            out["completion_ids"].append(list(completion))
            out["env_mask"].append(mask)
            out["episode_reward"].append(reward)
            out["policy_logprob"].append(logprob)
        self.run.save_rollouts(step, episodes, steps)
        self.last = {"step": step, "rollout_adapter_hash": generating, "rollout_seconds": time.perf_counter() - started,
                     "train_reward": float(episodes[column].mean()), **step_summary(episodes)}
        return out


def episode_reward(completions, episode_reward, **_) -> list[float | None]:
    """The reward function trl calls: each row's episode reward, as the rollout passed it."""
    return list(episode_reward)


def dataset_rows(settings: GRPOSettings) -> list[str]:
    """The ``prompt`` column: every step's rows, seed-major (the module doc)."""
    s = settings
    rows = []
    for step in range(1, s.steps + 1):
        for seed in s.step_seeds(step):
            for seat in range(s.n):
                if s.rows == "seat":
                    rows.append(json.dumps({"seed": seed, "seat": seat}))
                else:
                    rows += [json.dumps({"seed": seed, "seat": seat, "turn": t}) for t in range(1, s.rounds + 1)]
    return rows


# -- trl's log-probabilities with the shared prompt prefix fed once --------------------------
def make_trainer_class():
    """trl's ``GRPOTrainer`` with two methods overridden (built on demand: trl loads torch)."""
    import torch
    from trl import GRPOTrainer
    from trl.models.utils import disable_gradient_checkpointing
    from trl.trainer.utils import use_adapter

    from paperlib.training.shared_prefix import shared_prefix_logprobs, shares_prefix

    class SharedPrefixGRPOTrainer(GRPOTrainer):
        """Two methods overridden.

        ``_get_per_token_logps_and_entropies``, the one place where trl runs the model on a batch
        of rows, feeds the prompt prefix common to all rows once: every row of a step opens with
        the same rules and tools (the system prompt, ≈ 350-460 tokens), followed by a short
        observation and a completion of a few dozen tokens. The prefix's keys and values are
        computed once per batch of rows (with gradients, so the adapter still learns through
        them), and each row's own tokens attend to them and to themselves
        (:func:`paperlib.backends.hf.shared_prefix_attention`, the backend's own kernel, through
        :data:`TRAINING_ATTENTION`). The log-probabilities and entropies come from trl's fused
        LM head as on trl's own path, laid out as trl lays them out; a test checks them and
        their gradients against trl's path. Batches with images or MoE auxiliary losses,
        models not on :data:`TRAINING_ATTENTION` (not sdpa, or with sliding-window layers),
        and batches with no common prefix take trl's path.

        ``_generate_and_score_completions`` (trl's, then one measurement): with ``beta = 0``
        trl computes no reference log-probabilities and logs no KL; with ``measure_kl`` this
        logs ``kl``, an estimate of KL(policy ‖ base) per model token over the step's
        completions: the log-probability each completion had when sampled (recorded by the
        backend, at temperature 1) minus its log-probability under the base model (the
        adapter disabled, one forward pass without gradients), summed over the rows and
        divided by their tokens (the k1 estimator, unbiased, can be negative). Turn rows
        only: in a packed seat row the base model would see context the sampler did not.
        """

        def __init__(self, *args, measure_kl: bool = False, phase_seconds: dict | None = None, **kwargs):
            super().__init__(*args, **kwargs)
            self.measure_kl = measure_kl
            self.phase_seconds = {"forward": 0.0, "kl": 0.0} if phase_seconds is None else phase_seconds

        def _timed(self, phase, started):
            self.phase_seconds[phase] += time.perf_counter() - started

        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            logprobs = [x.get("policy_logprob") for x in inputs]
            if self.measure_kl and self.beta == 0.0 and self.model.training and any(x is not None for x in logprobs):
                started = time.perf_counter()
                self._metrics["train"]["kl"].append(self._kl_to_base(output, logprobs))
                self._timed("kl", started)
            return output

        @torch.no_grad()
        def _kl_to_base(self, output, logprobs) -> float:
            scored = torch.tensor([x is not None for x in logprobs], device=output["completion_ids"].device)
            mask = output["completion_mask"] * output.get("tool_mask", 1)
            ids = torch.cat([output["prompt_ids"], output["completion_ids"]], 1)
            attention = torch.cat([output["prompt_mask"], output["completion_mask"]], 1)
            with use_adapter(self.accelerator.unwrap_model(self.model), None), \
                    disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
                base, _, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, attention, output["completion_ids"].size(1),
                    batch_size=self.args.per_device_train_batch_size)
            policy = sum(x for x in logprobs if x is not None)
            return float((policy - (base * mask)[scored].sum()) / mask[scored].sum())

        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               batch_size=None, compute_entropy=False, compute_aux_loss=False,
                                               **multimodal):
            started, training = time.perf_counter(), torch.is_grad_enabled()
            try:
                return self._logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, batch_size,
                                                 compute_entropy, compute_aux_loss, **multimodal)
            finally:
                if training:  # the loss's forward pass (the KL's runs without gradients)
                    self._timed("forward", started)

        def _logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size,
                                 compute_entropy, compute_aux_loss, **multimodal):
            if (compute_aux_loss or any(v is not None for v in multimodal.values())
                    or not shares_prefix(self.accelerator.unwrap_model(model))):
                return GRPOTrainer._get_per_token_logps_and_entropies(
                    self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy,
                    compute_aux_loss, **multimodal)
            batch_size = batch_size or input_ids.size(0)
            logps, entropies = [], []
            for start in range(0, input_ids.size(0), batch_size):
                chunk = slice(start, start + batch_size)
                lp, ent = self._shared_prefix_logps(model, input_ids[chunk], attention_mask[chunk], logits_to_keep,
                                                    compute_entropy)
                logps.append(lp)
                entropies.append(ent)
            return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

        def _shared_prefix_logps(self, model, input_ids, attention_mask, logits_to_keep, compute_entropy):
            scored = shared_prefix_logprobs(
                self.accelerator.unwrap_model(model), input_ids, attention_mask, logits_to_keep,
                pad_token_id=self._tokenizer.pad_token_id, temperature=self.temperature, entropies=compute_entropy,
                autocast=self.accelerator.autocast,
                prefix_context=lambda: disable_gradient_checkpointing(model, self.args.gradient_checkpointing_kwargs))
            if scored is None:
                return GRPOTrainer._get_per_token_logps_and_entropies(self, model, input_ids, attention_mask,
                                                                      logits_to_keep, None, compute_entropy)[:2]
            return scored[:2]

    return SharedPrefixGRPOTrainer


# -- the run -------------------------------------------------------------------------------------
def _callbacks(settings: GRPOSettings, run: RunDir, rollout: TableRollout, phase_seconds: dict,
               stop_after: int | None, progress: bool):
    from peft import get_peft_model_state_dict
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class StepLog(TrainerCallback):
        """After each optimiser step (before its checkpoint): the step's row of the training log,
        with where its seconds went (``phase_seconds``, filled by the trainer; the rest of a
        step is the backward pass and the optimiser). ``checkpoint_seconds``: each save's."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.checkpoint_seconds = []
            self.bar = tqdm(total=settings.steps, initial=state.global_step, desc=f"GRPO {settings.model}",
                            unit="step", disable=not progress)

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()
            phase_seconds.update(dict.fromkeys(phase_seconds, 0.0))

        def on_log(self, args, state, control, logs=None, model=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            step = state.global_step
            if rollout.last is None or rollout.last["step"] != step:
                raise RuntimeError(f"no rollout recorded for step {step}")
            row = {"step": step, "model": settings.model, "reward": settings.reward, "seed": settings.seed,
                   "profile": settings.profile, **rollout.last,
                   "loss": logs["loss"], "kl": logs.get("kl", math.nan), "grad_norm": logs.get("grad_norm", math.nan),
                   "entropy": logs.get("entropy", math.nan), "learning_rate": logs.get("learning_rate", math.nan),
                   "adapter_hash": adapter_hash(get_peft_model_state_dict(model)),
                   "seconds": time.perf_counter() - self.started,
                   **{f"{phase}_seconds": seconds for phase, seconds in phase_seconds.items()},
                   "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
            run.append_log(row)
            self.logged = time.perf_counter()
            self.bar.set_postfix(reward=f"{row['train_reward']:.3f}", valid=f"{row['valid_share_mean']:.2f}",
                                 s=f"{row['seconds']:.0f}")
            self.bar.update(1)

        def on_save(self, args, state, control, **kwargs):
            self.checkpoint_seconds.append(time.perf_counter() - self.logged)

        def on_step_end(self, args, state, control, **kwargs):
            if stop_after is not None and state.global_step >= stop_after:
                control.should_training_stop = True

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

    return [StepLog()]


def _not_a_masked_turn(record) -> bool:
    """trl warns, every step, of rows whose reward is None; ours are the turns an episode never
    reached (the rollout's masked rows, left out of their group's baseline by design). accelerate's
    logger prefixes the process rank, so the message is matched anywhere in the record."""
    return "All reward functions returned None" not in record.getMessage()


def build_trainer(settings: GRPOSettings, run: RunDir, stop_after: int | None = None, progress: bool = True):
    """trl's GRPOTrainer for ``settings``, writing into ``run`` (whose config is already claimed)."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # trl pings the Hub at start-up otherwise
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in trl 1.16
    import datasets
    import torch
    from peft import LoraConfig
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig

    from paperlib.models import load_local
    from paperlib.training.shared_prefix import use_training_attention

    s = settings
    device = "cuda" if torch.cuda.is_available() else "cpu"
    lm, tokenizer = load_local(s.model, device)
    if s.shared_prefix:
        use_training_attention(lm)  # where the kernel covers the model; else trl's own path (SharedPrefixGRPOTrainer)
    config = GRPOConfig(
        output_dir=str(run.path), max_steps=s.steps, seed=s.seed, data_seed=s.seed,
        per_device_train_batch_size=s.rows_per_pass, gradient_accumulation_steps=s.row_count // s.rows_per_pass,
        num_generations=s.group_size, shuffle_dataset=False,
        learning_rate=s.learning_rate, lr_scheduler_type=s.lr_scheduler, warmup_steps=0,
        max_grad_norm=s.max_grad_norm, weight_decay=s.weight_decay, adam_beta2=s.adam_beta2, optim="adamw_torch",
        beta=s.beta, loss_type=s.loss_type, epsilon=s.epsilon, scale_rewards=s.scale_rewards,
        temperature=s.temperature, gradient_checkpointing=s.gradient_checkpointing,
        use_vllm=s.generation == "vllm", vllm_mode="colocate",
        logging_steps=1, save_strategy="steps", save_steps=1, report_to="none", disable_tqdm=True,
        use_cpu=device == "cpu", bf16=device != "cpu",
    )
    peft_config = LoraConfig(r=s.lora_rank, lora_alpha=s.lora_alpha, target_modules=list(s.lora_targets),
                             lora_dropout=0.0, task_type="CAUSAL_LM")
    rollout = TableRollout(s, tokenizer, run)
    phase_seconds = {"forward": 0.0, "kl": 0.0}  # each step's, filled by the trainer, logged by StepLog
    trainer = make_trainer_class()(
        model=lm, reward_funcs=episode_reward, args=config, processing_class=tokenizer, peft_config=peft_config,
        train_dataset=datasets.Dataset.from_dict({"prompt": dataset_rows(s)}), rollout_func=rollout,
        callbacks=_callbacks(s, run, rollout, phase_seconds, stop_after, progress), phase_seconds=phase_seconds,
        measure_kl=s.measure_kl and s.rows == "turn" and s.temperature == 1)
    trainer.remove_callback(PrinterCallback)  # our own progress bar reports each step
    masked = logging.getLogger("trl.trainer.grpo_trainer")
    if _not_a_masked_turn not in masked.filters:
        masked.addFilter(_not_a_masked_turn)
    return trainer


def train(settings: GRPOSettings, out, stop_after: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Run (or resume) ``settings`` in the directory ``out``; return its training log.

    ``stop_after``: stop once that step is saved, as a killed run would (a rerun resumes)."""
    settings.check()
    run = RunDir(out)
    run.claim(settings.config())
    done = run.rewind()
    if done < min(settings.steps, stop_after or settings.steps):
        with quiet_trl():
            trainer = build_trainer(settings, run, stop_after, progress)
            trainer.train(resume_from_checkpoint=str(run.checkpoint(done)) if done else None)
    return run.log()


# -- after training -------------------------------------------------------------------------------
def run_settings(out) -> GRPOSettings:
    """The settings a run directory was trained with."""
    config = RunDir(out).config()
    return GRPOSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()})


def play_adapters(out, adapters: dict, ns, episodes: int, first_seed: int, rollouts_dir, seed: int | None = None,
                  progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episodes of the run in ``out`` under each of ``adapters`` (label -> a saved step, or None for
    the base model: the adapter disabled): ``episodes`` episodes at each N of ``ns``, episode e
    with seed ``first_seed + e`` under every adapter, played with the run's prompt, temperature,
    token budget, R and turn order, and the sampling seed ``seed`` (default: the run's). One
    resumable store per label under ``rollouts_dir`` (``paperlib.philosophers.evaluate``): a
    rerun plays only what is missing. Rows carry ``adapter`` (the label), ``step`` (0: the base
    model) and ``adapter_hash`` (of the saved adapter file; "base")."""
    from pathlib import Path

    from paperlib.backends.hf import HFBackend
    from paperlib.data import RolloutStore
    from paperlib.philosophers.evaluate import evaluate
    from paperlib.philosophers.llm import LLMPolicy
    from paperlib.training.checkpoints import each_adapter

    s, run = run_settings(out), RunDir(out)
    played_episodes, played_steps = [], []
    for label, step, model, tokenizer, hashed in each_adapter(run, s.model, adapters):
        policy = LLMPolicy(HFBackend(s.model, lm=model, tokenizer=tokenizer), prompt=s.prompt,
                           temperature=s.temperature, max_new_tokens=s.max_new_tokens,
                           seed=s.seed if seed is None else seed)
        ep, st = evaluate(s.model, ns, episodes, rounds=s.rounds, mode=s.mode, seed=first_seed,
                          store=RolloutStore(Path(rollouts_dir) / label), policy=policy,
                          labels={"adapter": label, "step": step, "adapter_hash": hashed}, progress=progress)
        played_episodes.append(add_outcomes(ep))
        played_steps.append(st.assign(adapter=label))
    return pd.concat(played_episodes, ignore_index=True), pd.concat(played_steps, ignore_index=True)



def lens_of_last_adapter(out, profile, seed: int, rollouts_dir, progress: bool = True) -> pd.DataFrame | None:
    """Notebook 06's knowing-doing lens (``philosophers.knowing_doing.run_lens``) on the last saved
    adapter of the run in ``out`` (the one the paper keeps), for the lens model the run trained:
    its classified turns, labelled ``adapter`` = "GRPO step K"; None when the run has no saved
    step or trained no lens model of ``profile``."""
    from paperlib.backends.hf import HFBackend
    from paperlib.philosophers.knowing_doing import run_lens
    from paperlib.training.checkpoints import each_adapter

    run = RunDir(out)
    if not run.config_path.exists() or not run.steps_saved():
        return None
    s = run_settings(out)
    if s.model not in {model for model, _ in profile.lens_models}:
        return None
    last = run.steps_saved()[-1]
    for label, _, model, tokenizer, _ in each_adapter(run, s.model, {f"GRPO step {last}": last}):
        backend = HFBackend(s.model, lm=model, tokenizer=tokenizer, max_batch=profile.gap_max_batch)
        return run_lens(profile, seed, rollouts_dir, adapter=label, progress=progress, backends={s.model: backend})

def validate(out, episodes: int, n: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Validation episodes for every saved step of the run in ``out`` (``best_val``'s table): at each
    step, ``episodes`` episodes with seeds ``VALIDATION_SEEDS + e`` (disjoint from training's and
    from the evaluation's), the same seeds and sampling seed for every step, at the run's N (or
    ``n``) and R (:func:`play_adapters`). One row per episode, with its ``step``; kept under the
    run's ``validation/``, so a rerun plays only what is missing."""
    s, run = run_settings(out), RunDir(out)
    steps = {f"step-{k}": k for k in run.steps_saved()}
    if not steps:
        raise ValueError(f"{out} holds no saved step to validate")
    table, _ = play_adapters(out, steps, [n or s.n], episodes, VALIDATION_SEEDS, run.path / "validation",
                             progress=progress)
    return table
