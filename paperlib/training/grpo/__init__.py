"""GRPO with trl's ``GRPOTrainer`` and a peft LoRA adapter, fed by a game's own episodes (paper A's
trainer: ART in the paper, trl + peft here). It knows no game: the dining philosophers plug in
from :mod:`paperlib.philosophers.training`.

The protocol a game implements, on its subclass of :class:`GRPOSettings` (which adds the
trainer's fields to :class:`~paperlib.training.settings.TrainerSettings`)::

    batch_size  (property)  decisions the backend generates at once while the step plays
    shape       (property)  one step's batch in words (``paperlib bench grpo``)
    progress    (class attribute)  the training log's columns the progress bar shows
    labels()                the log's columns that name the run (default: model, seed, profile)
    sources(), derived()    where each setting comes from, for the settings table
    row_count   (property)  rows of one step's batch
    dataset_rows() -> list[str]
        trl's ``prompt`` column: every step's rows in order. trl repeats each row G times
        (``group_size``), never shuffles, and takes ``row_count`` rows (with repetitions) per
        step, so G consecutive rows are one group, whose advantages are relative within it.
    rollout(backend, prompts, step, tokenizer) -> (rows, episodes, steps, summary)
        play step ``step``'s episodes with ``backend`` (the trainer's own policy) for the
        ``prompts`` trl hands over (one step's rows, repetitions included), and lay them out:
        ``rows`` is trl's ``rollout_func`` result (``prompt_ids``, ``completion_ids``,
        ``env_mask``, ``logprobs``, and per row ``episode_reward``, None for a row left out of
        its group, and ``policy_logprob``, the sampled completion's log-probability or None);
        ``episodes`` and ``steps`` the rows the step saves; ``summary`` the step's columns of
        the training log.
    validate(backend, step, adapter_hash, run)   (optional; default: none)
        play the validation episodes of ``step``'s adapter (checkpoint selection's held-out
        set) into ``run``'s stores. The trainer calls it at the next step's rollout, whose
        policy that adapter is, so every adapter is validated while it is in memory, and a run
        trained across sessions needs none of its earlier checkpoints for it; the last step's,
        the game plays after training.

Around it (:class:`Rollout`, trl's ``rollout_func``): the backend over the trainer's model (hf,
or trl's colocated vLLM engine), the model in eval mode while it plays, the hash of the
adapter that played (``adapter_hash`` in the saved rows, ``rollout_adapter_hash`` in the log),
the rollouts saved in the run directory, and the seconds. The reward function hands trl each
row's ``episode_reward``. Each step saves its adapter (trl's ``checkpoint-<step>``) and
appends a row to the training log (:class:`~paperlib.training.checkpoints.RunDir`), and a
killed run resumes from its last complete checkpoint (trl restores the adapter, optimiser and
RNG state; the game's episodes are a function of the adapter, the run seed and the step) and
ends with the same log.

What trl could not express lives in :mod:`paperlib.training.grpo.trainer`, imported only when a
trainer is built (it loads trl and torch): the shared prompt prefix fed once per micro-batch,
and a KL to the base model logged when ``beta = 0``. The training passes run in bfloat16
autocast where the hardware multiplies it natively (``precision``,
:mod:`paperlib.training.precision`); rollouts stay float32.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import pandas as pd

from paperlib.training.checkpoints import RunDir, adapter_hash, quiet_trl
from paperlib.training.precision import resolve
from paperlib.training.settings import TrainerSettings, at_least_one

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
SCALE_REWARDS = ("group", "batch", "none")
GENERATIONS = ("hf", "vllm")


@dataclass(frozen=True)
class GRPOSettings(TrainerSettings):
    """One GRPO run: the shared settings, paper A's recipe where it states one, and trl's. A game
    subclasses it (the module doc); sources per field in :data:`SOURCES`."""

    model: str = "qwen3-14b"
    max_grad_norm: float = 0.1
    max_new_tokens: int = 32
    # -- the paper's recipe
    steps: int = 16
    groups: int = 2
    group_size: int = 3
    # -- not stated by the paper
    lr_scheduler: str = "constant"
    weight_decay: float = 0.1
    adam_beta2: float = 0.99
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    gradient_checkpointing: bool = True
    generation: str = "hf"
    measure_kl: bool = True
    kl_every: int = 1
    skip_no_signal: bool = True

    @property
    def row_count(self) -> int:
        """Rows of one step's batch (the game's)."""
        raise NotImplementedError

    @property
    def rows_per_pass(self) -> int:
        return self.micro_batch or self.row_count

    def dataset_rows(self) -> list[str]:
        raise NotImplementedError

    def rollout(
        self, backend, prompts: list[str], step: int, tokenizer
    ) -> tuple[dict, pd.DataFrame, pd.DataFrame, dict]:
        raise NotImplementedError

    def validate(self, backend, step: int, adapter_hash: str, run: RunDir) -> None:
        return None

    def sources(self) -> dict[str, str]:
        return {**super().sources(), **SOURCES}

    def check(self):
        super().check()
        choices = {
            "loss_type": (self.loss_type, LOSS_TYPES),
            "scale_rewards": (self.scale_rewards, SCALE_REWARDS),
            "generation": (self.generation, GENERATIONS),
        }
        for name, (value, allowed) in choices.items():
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")
        at_least_one({"steps": self.steps, "groups": self.groups, "kl_every": self.kl_every})
        if self.group_size < 2:
            raise ValueError(
                f"a group of {self.group_size} episode: GRPO's advantage is relative within a group, "
                f"which needs at least 2 episodes"
            )
        if self.row_count % self.rows_per_pass:
            raise ValueError(f"micro_batch {self.micro_batch} must divide the step's {self.row_count} rows")
        return self


SOURCES = {
    "steps": "paper (16 steps)",
    "groups": "paper (2 groups per step)",
    "group_size": "paper (3 episodes per group)",
    "lora_rank": "paper (LoRA rank 8)",
    "lora_alpha": "ours (twice the rank)",
    "lora_targets": "ours (the attention projections)",
    "learning_rate": "ours, measured on the positive control (SmolLM2, N = 2, R = 1, 2 groups of 4, held-out "
    "valid share from 0.10): 1e-4 for 4 steps 0.18 (not significant), 1e-3 for 4 steps 0.58, "
    "2.5e-4 for 12 steps 0.79; ART's 5e-6 and trl's 1e-6 move an adapter 50-250x less per step "
    "(an Adam step is about the learning rate)",
    "lr_scheduler": "ART's default (constant)",
    "max_grad_norm": "ART's default",
    "weight_decay": "ART's default",
    "adam_beta2": "ART's default",
    "beta": "ART's default (no KL penalty)",
    "loss_type": "trl's default",
    "epsilon": "trl's default (PPO's clip)",
    "scale_rewards": "trl's default (advantage / the group's std)",
    "temperature": "ours: the evaluation's sampling temperature",
    "max_new_tokens": "ours: the evaluation's budget for the profile",
    "micro_batch": "ours: memory (gradient accumulation over the step's batch)",
    "gradient_checkpointing": "trl's default (cpu profile: off, ours: the activations of a shared-prefix "
    "micro-batch fit in memory, and the backward pass need not recompute the forward)",
    "shared_prefix": "ours: the rules every row shares fed once per micro-batch, and the LM head at completion "
    "positions only (trl's path on False; the same log-probabilities and gradients, tested)",
    "generation": "ours: hf on a CPU, trl's colocated vLLM on a GPU",
    "measure_kl": "ours: log KL(policy ‖ base) with beta = 0 (one more forward pass per measured step; turn "
    "rows at temperature 1)",
    "skip_no_signal": "ART's (paper A's trainer): it drops trajectories whose advantage is zero and skips a step "
    "left with none; here the step's optimiser step leaves the adapter as it was (logged as no_signal)",
    "kl_every": "ours: the KL is measured on every kl_every-th step and the last (NaN between), where its curve "
    "is read; 1: every step",
}


# -- the rollout -----------------------------------------------------------------------------
class Rollout:
    """trl's ``rollout_func``: the game plays the step's episodes with the trainer's current policy
    and lays them out as the step's rows (the module doc)."""

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

        return HFBackend(self.settings.model, lm=model, tokenizer=self.tokenizer, max_batch=self.settings.batch_size)

    def __call__(self, prompts: list[str], trainer) -> dict:
        from peft import get_peft_model_state_dict

        started = time.perf_counter()
        step = trainer.state.global_step + 1
        # accelerate wraps the prepared model's forward in its mixed-precision autocast; the rollout
        # plays in float32 (the loss's passes enter the autocast themselves)
        model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
        generating = adapter_hash(get_peft_model_state_dict(model))
        if self.backend is None:
            self.backend = self._backend(trainer, model)
        was_training = model.training
        model.eval()  # no dropout, no gradient checkpointing while generating
        validation_seconds = 0.0
        try:
            if step > 1:  # the policy of this step's rollout is the adapter of the step before
                validating = time.perf_counter()
                self.settings.validate(self.backend, step - 1, generating, self.run)
                validation_seconds = time.perf_counter() - validating
            rows, episodes, steps, summary = self.settings.rollout(self.backend, prompts, step, self.tokenizer)
        finally:
            model.train(was_training)
        self.run.save_rollouts(step, episodes.assign(adapter_hash=generating), steps.assign(adapter_hash=generating))
        self.last = {
            "step": step,
            "rollout_adapter_hash": generating,
            "rollout_seconds": time.perf_counter() - started - validation_seconds,
            "validation_seconds": validation_seconds,
            **summary,
        }
        return rows


def episode_reward(completions, episode_reward, **_) -> list[float | None]:
    """The reward function trl calls: each row's episode reward, as the rollout passed it."""
    return list(episode_reward)


def _not_a_masked_turn(record) -> bool:
    """trl warns, every step, of rows whose reward is None; ours are rows a game leaves out of their
    group's baseline by design (a turn its episode never reached). accelerate's logger prefixes
    the process rank, so the message is matched anywhere in the record."""
    return "All reward functions returned None" not in record.getMessage()


# -- the run -------------------------------------------------------------------------------------
def build_trainer(settings: GRPOSettings, run: RunDir, stop_after: int | None = None, progress: bool = True):
    """trl's GRPOTrainer for ``settings``, writing into ``run`` (whose config is already claimed)."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")  # trl pings the Hub at start-up otherwise
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in trl 1.16
    import datasets
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig

    from paperlib.training.grpo.trainer import SharedPrefixGRPOTrainer, StepLog

    s = settings
    lm, tokenizer, device = s.base_model()  # off the shared-prefix attention: trl's own path (SharedPrefixGRPOTrainer)
    config = GRPOConfig(
        output_dir=str(run.path),
        max_steps=s.steps,
        seed=s.seed,
        data_seed=s.seed,
        per_device_train_batch_size=s.rows_per_pass,
        gradient_accumulation_steps=s.row_count // s.rows_per_pass,
        num_generations=s.group_size,
        shuffle_dataset=False,
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.lr_scheduler,
        warmup_steps=0,
        max_grad_norm=s.max_grad_norm,
        weight_decay=s.weight_decay,
        adam_beta2=s.adam_beta2,
        optim="adamw_torch",
        beta=s.beta,
        loss_type=s.loss_type,
        epsilon=s.epsilon,
        scale_rewards=s.scale_rewards,
        temperature=s.temperature,
        gradient_checkpointing=s.gradient_checkpointing,
        use_vllm=s.generation == "vllm",
        vllm_mode="colocate",
        logging_steps=1,
        save_strategy="steps",
        save_steps=1,
        report_to="none",
        disable_tqdm=True,
        use_cpu=device == "cpu",
        bf16=resolve(s.precision, device) == "bfloat16",
    )
    rollout = Rollout(s, tokenizer, run)
    phase_seconds = {"forward": 0.0, "kl": 0.0}  # each step's, filled by the trainer, logged by StepLog
    step_log = StepLog(s, run, rollout, phase_seconds, stop_after, progress)
    trainer = SharedPrefixGRPOTrainer(
        model=lm,
        reward_funcs=episode_reward,
        args=config,
        processing_class=tokenizer,
        peft_config=s.lora_config(),
        train_dataset=datasets.Dataset.from_dict({"prompt": s.dataset_rows()}),
        rollout_func=rollout,
        callbacks=[step_log],
        phase_seconds=phase_seconds,
        kl_every=s.kl_every if s.measure_kl and s.temperature == 1 else 0,
    )
    step_log.trainer = trainer
    trainer.remove_callback(PrinterCallback)  # our own progress bar reports each step
    masked = logging.getLogger("trl.trainer.grpo_trainer")
    if _not_a_masked_turn not in masked.filters:
        masked.addFilter(_not_a_masked_turn)
    return trainer


def train(
    settings: GRPOSettings, out, stop_after: int | None = None, progress: bool = True, replay: bool = False
) -> pd.DataFrame:
    """Run (or resume) ``settings`` in the directory ``out``; return its training log.

    ``stop_after``: stop once that step is saved, as a killed run would (a rerun resumes). A
    finished record is returned as it is, unless ``replay``: then the steps recorded without a
    checkpoint here are redone, each checked against its record
    (:mod:`paperlib.training.checkpoints`)."""
    settings.check()
    run = RunDir(out)
    run.claim(settings.config(), settings.defaults())
    done = run.rewind()
    last = min(settings.steps, stop_after or settings.steps)
    recorded = run.recorded_steps()
    if done >= last or (not replay and recorded and recorded[-1] >= last):
        return run.log()
    with quiet_trl():
        trainer = build_trainer(settings, run, stop_after, progress)
        trainer.train(resume_from_checkpoint=str(run.saved(done)) if done else None)
    return run.log()
