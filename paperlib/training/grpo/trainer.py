"""trl's ``GRPOTrainer`` with two methods overridden, and the callback that writes the training log.
Imported only when a trainer is built (:func:`paperlib.training.grpo.build_trainer`): it loads
trl, transformers and torch."""

from __future__ import annotations

import math
import resource
import time

import torch
from peft import get_peft_model_state_dict
from tqdm.auto import tqdm
from transformers import TrainerCallback
from trl import GRPOTrainer
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from paperlib.training.checkpoints import adapter_hash
from paperlib.training.shared_prefix import shared_prefix_logprobs, shares_prefix

# trl's losses whose normaliser spans the step's generation batch (``num_items_in_batch``), not the
# rows of the micro-batch it is given: leaving out rows that add 0 leaves their value as it is
ROW_FREE_LOSSES = ("dapo", "cispo")


class SharedPrefixGRPOTrainer(GRPOTrainer):
    """Three methods overridden.

    ``_get_per_token_logps_and_entropies``, the one place where trl runs the model on a batch
    of rows, feeds the prompt prefix common to all rows once: every row of a step opens with
    the same instructions (for the philosophers the system prompt with the rules and tools,
    ≈ 350-460 tokens, ≈ 85% of a turn row), followed by a short observation and a completion
    of a few dozen tokens. The prefix's keys and values are computed once per batch of rows
    (with gradients, so the adapter still learns through them), and each row's own tokens
    attend to them and to themselves (:func:`paperlib.backends.hf.shared_prefix_attention`, the
    backend's own kernel, through :data:`~paperlib.training.shared_prefix.TRAINING_ATTENTION`).
    The log-probabilities and entropies come from trl's fused LM head as on trl's own path,
    laid out as trl lays them out; a test checks them and their gradients against trl's path.
    Batches with images or MoE auxiliary losses, models not on the training attention (not
    sdpa, or with sliding-window layers), and batches with no common prefix take trl's path.

    ``_generate_and_score_completions`` (trl's, then two measurements): whether every advantage
    of the step is zero (``no_signal``: every group's episodes scored the same; with ``beta = 0``,
    :meth:`compute_loss` then skips the step's passes, and on other steps the rows whose advantage
    is zero), and, with ``beta = 0`` trl
    computes no reference log-probabilities and logs no KL; with ``kl_every`` = k > 0 this logs,
    on every k-th step and the last (NaN on the others: the pass costs a quarter of a ``cpu``
    step, and only the curve is read), ``kl``, an estimate of KL(policy ‖ base) per model token over the step's completions: the
    log-probability each completion had when sampled (the rollout's ``policy_logprob``,
    recorded by the backend, at temperature 1) minus its log-probability under the base model
    (the adapter disabled, one forward pass without gradients), summed over the rows and
    divided by their tokens (the k1 estimator, unbiased, can be negative). Rows without a
    recorded log-probability are left out (a packed multi-turn row, where the base model would
    see context the sampler did not).
    """

    def __init__(self, *args, kl_every: int = 0, phase_seconds: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.kl_every = kl_every
        self.phase_seconds = {"forward": 0.0, "kl": 0.0} if phase_seconds is None else phase_seconds
        self.no_signal = False  # whether the step's advantages are all zero (StepLog reads it)

    def _timed(self, phase, started):
        self.phase_seconds[phase] += time.perf_counter() - started

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        if self.model.training:
            self.no_signal = not bool(self.accelerator.gather(output["advantages"]).ne(0).any())
        logprobs = [x.get("policy_logprob") for x in inputs]
        if (
            self.measures_kl(self.state.global_step + 1)
            and self.model.training
            and any(x is not None for x in logprobs)
        ):
            started = time.perf_counter()
            self._metrics["train"]["kl"].append(self._kl_to_base(output, logprobs))
            self._timed("kl", started)
        return output

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """trl's loss, without the rows that cannot change it. With ``beta = 0`` every term of the
        loss is a row's advantage times a ratio, so a row whose advantage is zero adds exactly 0 to
        the loss and to its gradient. On a step without signal (every advantage zero) the forward
        and backward passes are skipped (a zero that reaches every trainable parameter, so that
        each process's gradients are all-reduced as usual); such a step logs loss 0 and no entropy.
        On a step with some signal, in one process and where the loss's normaliser does not count
        the rows it is given (:data:`ROW_FREE_LOSSES`, trl's default ``dapo`` among them), a
        micro-batch keeps only its rows with a non-zero advantage, and one without any is skipped
        as a step without signal is: the same loss and gradient for less of the forward and
        backward passes (a group whose episodes all scored alike has none). The logged entropy
        and clip ratios are then those of the rows kept."""
        if self.beta == 0.0 and self.model.training:
            inputs = None if self.no_signal else self._rows_with_signal(inputs)
            if inputs is None:
                return sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def _rows_with_signal(self, inputs: dict) -> dict | None:
        """``inputs`` less its rows whose advantage is zero, where that leaves trl's loss as it is
        (None: no row is left); else ``inputs``."""
        if (
            self.loss_type not in ROW_FREE_LOSSES
            or self.accelerator.num_processes > 1  # trl gathers per-row metrics: the same rows everywhere
            or self.top_entropy_quantile < 1.0  # a quantile over the rows given
            or self._entropy_bonus_enabled  # a mean over the rows given
        ):
            return inputs
        advantages = inputs["advantages"]
        keep = advantages.ne(0) if advantages.dim() == 1 else advantages.ne(0).any(-1)
        if bool(keep.all()):
            return inputs
        if not bool(keep.any()):
            return None
        rows = advantages.size(0)
        return {k: v[keep] if torch.is_tensor(v) and v.dim() and v.size(0) == rows else v for k, v in inputs.items()}

    def measures_kl(self, step: int) -> bool:
        """Whether step ``step`` (from 1) logs its KL to the base model."""
        return self.beta == 0.0 and self.kl_every > 0 and (step % self.kl_every == 0 or step == self.args.max_steps)

    @torch.no_grad()
    def _kl_to_base(self, output, logprobs) -> float:
        scored = torch.tensor([x is not None for x in logprobs], device=output["completion_ids"].device)
        mask = output["completion_mask"] * output.get("tool_mask", 1)
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], 1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], 1)
        with (
            use_adapter(self.accelerator.unwrap_model(self.model), None),
            disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
        ):
            base, _, _ = self._get_per_token_logps_and_entropies(
                self.model,
                ids,
                attention,
                output["completion_ids"].size(1),
                batch_size=self.args.per_device_train_batch_size,
            )
        policy = sum(x for x in logprobs if x is not None)
        return float((policy - (base * mask)[scored].sum()) / mask[scored].sum())

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **multimodal,
    ):
        started, training = time.perf_counter(), torch.is_grad_enabled()
        try:
            return self._logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **multimodal,
            )
        finally:
            if training:  # the loss's forward pass (the KL's runs without gradients)
                self._timed("forward", started)

    def _logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size,
        compute_entropy,
        compute_aux_loss,
        **multimodal,
    ):
        if (
            compute_aux_loss
            or any(v is not None for v in multimodal.values())
            or not shares_prefix(self.accelerator.unwrap_model(model))
        ):
            return GRPOTrainer._get_per_token_logps_and_entropies(
                self,
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **multimodal,
            )
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            chunk = slice(start, start + batch_size)
            lp, ent = self._shared_prefix_logps(
                model, input_ids[chunk], attention_mask[chunk], logits_to_keep, compute_entropy
            )
            logps.append(lp)
            entropies.append(ent)
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    def _shared_prefix_logps(self, model, input_ids, attention_mask, logits_to_keep, compute_entropy):
        scored = shared_prefix_logprobs(
            self.accelerator.unwrap_model(model),
            input_ids,
            attention_mask,
            logits_to_keep,
            pad_token_id=self._tokenizer.pad_token_id,
            temperature=self.temperature,
            entropies=compute_entropy,
            autocast=self.accelerator.autocast,
            prefix_context=lambda: disable_gradient_checkpointing(model, self.args.gradient_checkpointing_kwargs),
        )
        if scored is None:
            return GRPOTrainer._get_per_token_logps_and_entropies(
                self, model, input_ids, attention_mask, logits_to_keep, None, compute_entropy
            )[:2]
        return scored[:2]


class StepLog(TrainerCallback):
    """After each optimiser step (before its checkpoint): the step's row of the training log, with
    where its seconds went (``phase_seconds``, filled by the trainer; the rest of a step is the
    backward pass and the optimiser) and whether it had no signal. ``checkpoint_seconds``: each
    save's. ``stop_after``: stop once that step is done, as a killed run would.

    A step without signal (every advantage zero) with ``skip_no_signal`` leaves the adapter as it
    was: its gradients are dropped before the optimiser steps, and AdamW skips a parameter without
    a gradient (no moment update, no weight decay), where a zero gradient would still move it by
    the moments of earlier steps."""

    def __init__(self, settings, run, rollout, phase_seconds: dict, stop_after: int | None, progress: bool):
        self.settings, self.run, self.rollout, self.phase_seconds = settings, run, rollout, phase_seconds
        self.stop_after, self.progress = stop_after, progress
        self.trainer = None  # set once the trainer is built: its no_signal flag

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if self.settings.skip_no_signal and self.trainer.no_signal:
            for parameter in model.parameters():
                parameter.grad = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.checkpoint_seconds = []
        self.bar = tqdm(
            total=self.settings.steps,
            initial=state.global_step,
            desc=f"GRPO {self.settings.model}",
            unit="step",
            disable=not self.progress,
        )

    def on_step_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()
        self.phase_seconds.update(dict.fromkeys(self.phase_seconds, 0.0))

    def on_log(self, args, state, control, logs=None, model=None, **kwargs):
        if not logs or "loss" not in logs:
            return
        step, last = state.global_step, self.rollout.last
        if last is None or last["step"] != step:
            raise RuntimeError(f"no rollout recorded for step {step}")
        row = {
            "step": step,
            **self.settings.labels(),
            **last,
            "loss": logs["loss"],
            "kl": logs.get("kl", math.nan),
            "grad_norm": logs.get("grad_norm", math.nan),
            "no_signal": self.trainer.no_signal,
            "entropy": logs.get("entropy", math.nan),
            "learning_rate": logs.get("learning_rate", math.nan),
            "precision": "bfloat16" if args.bf16 else "float32",
            "adapter_hash": adapter_hash(get_peft_model_state_dict(model)),
            "seconds": time.perf_counter() - self.started,
            **{f"{phase}_seconds": seconds for phase, seconds in self.phase_seconds.items()},
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        }
        self.run.append_log(row)
        self.logged = time.perf_counter()
        self.bar.set_postfix(self.settings.postfix(row))
        self.bar.update(1)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.run.keep_resume_point(state.global_step, finished=state.global_step == self.settings.steps)
        self.checkpoint_seconds.append(time.perf_counter() - self.logged)

    def on_step_end(self, args, state, control, **kwargs):
        if self.stop_after is not None and state.global_step >= self.stop_after:
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        self.bar.close()
