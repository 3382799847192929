"""Paper B's RLFT loop, for any game: rollouts by the adapter of the update before, advantages,
PPO's clipped objective with a KL penalty to the frozen model, a checkpoint and a row of the
training log per update, resumable. The bandits plug in from ``paperlib.bandits.training``,
tic-tac-toe from ``paperlib.tictactoe.training``.

The protocol a game implements, on its subclass of :class:`RLFTSettings` (which adds the
trainer's fields to :class:`~paperlib.training.settings.TrainerSettings`)::

    batch_size  (property)  episodes one update plays at once (the backend's batch)
    shape       (property)  what one update plays, in words (``paperlib bench rlft``)
    progress    (class attribute)  the training log's columns the progress bar shows
    value_head  (class attribute)  whether its advantages need a value head
    episode_reward  (class attribute)  the episode rows' reward column (each trace's reward)
    sources(), derived()    where each setting comes from, for the settings table
    rollout(backend, update, share=list) -> (episodes, steps)
        update ``update``'s episodes (a function of the run seed and the update), or the block of
        them ``share`` gives this process (``share(items)``: all of them with one process;
        numbered from 0 in the block), played with
        ``backend`` (the trainer's own model) by the game's LLM agent at the training
        temperature with :meth:`RLFTSettings.sampling_seed`, keeping each completion token's
        log-probability (the agent's ``token_logprobs``); step rows in the decision core's
        columns (prompt, completion ids and log-probabilities, ...) with ``episode``, ``seed``,
        ``seat`` and ``turn``.
    advantages(steps, values) -> (advantages, targets, columns)
        for ``steps`` in (episode, turn) order, with the value head's V of each row (None
        without a value head): each row's advantage, its value target (None without a value
        head), and the rollout's columns of the training log.

Everything else is here, once:

1. Rollout: the game's, through :class:`~paperlib.backends.hf.HFBackend` on the trainer's peft
   model, so prompts, parser, decision core and backend are those of the evaluation
   notebooks. The step rows become traces per seat (:func:`paperlib.llm.traces.seat_traces`),
   the unit the update consumes: each decision's prompt and completion tokens and the
   completion's log-probability under the adapter that sampled it.
2. Advantages: the game's, on the value head's V of each decision (:meth:`Trainer.values`)
   where it has one (tic-tac-toe's GAE; the bandits' Monte-Carlo returns-to-go need none).
3. PPO as the paper runs it: ``ppo_epochs`` passes over the rollout's decisions, each in a
   seeded order cut into minibatches of ``minibatch`` decisions, one optimiser step per
   minibatch, its gradient accumulated over micro-batches whose losses add up to the
   minibatch's: the clipped surrogate plus beta times the k3 KL to the same model with its
   adapter disabled, token means (plus the value loss where the game has a value head). The
   ratio and the KL compare against the log-probabilities before the update's first step: the
   first minibatch's own forward pass gives its decisions' (detached, and shared with every
   process for the later epochs), and the other decisions' are the rollout's own, per token
   (``rollout_old_logprobs``, where the training passes and the rollout both run in float32:
   the same numbers up to rounding), else the value head's pass's (a game with a value head:
   that pass scores every decision under the same adapter, in the training precision), else a
   pass without gradients before the first step; so from the second minibatch on the ratio
   moves and the clip acts. The log records how far the recomputed sequence log-probabilities
   are from the rollout's (``rollout_logprob_gap``), a check that the update is on-policy,
   where the other decisions' came from (``old_logprobs_from``), and the clipped share
   (``clip_fraction``).
4. The update's row of the training log, then its checkpoint (the adapter, the value head if
   any, the optimiser's state, ``trainer_state.json`` last): the run directory is GRPO's
   (:class:`~paperlib.training.checkpoints.RunDir`), and a killed run resumes from its last
   complete checkpoint to the same log. Every random choice is a function of (run seed,
   update): what is played, the sampling seed, the LoRA initialisation (run seed).

Several processes (``torchrun`` or ``accelerate launch``) split each update's episodes and
micro-batches and sum the gradients; the main process writes: :mod:`paperlib.training.distributed`.
"""

from __future__ import annotations

import gc
import json
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperlib.training import precision
from paperlib.training.checkpoints import ADAPTER_FILE, COMPLETE_MARKER, RunDir, adapter_hash, quiet_trl
from paperlib.training.memory import PhasePeaks
from paperlib.training.rlft import CLIP_EPSILON, INVALID_PENALTY, KL_BETA
from paperlib.training.settings import TrainerSettings, at_least_one

OPTIMIZER_FILE = "optimizer.pt"
VALUE_HEAD_FILE = "value_head.pt"


@dataclass(frozen=True)
class RLFTSettings(TrainerSettings):
    """The settings every RLFT run has; a game's subclass adds its own and the protocol (the module
    doc). Sources per field in :data:`SOURCES`."""

    model: str = "gemma2-2b"
    max_new_tokens: int = 256
    epsilon: float = CLIP_EPSILON
    beta: float = KL_BETA
    updates: int = 30_000
    eval_temperature: float = 0.0
    penalty: float = INVALID_PENALTY
    ppo_epochs: int = 1
    minibatch: int = 128  # decisions per optimiser step (0: one step on the whole rollout)
    rollout_old_logprobs: bool = True  # PPO's old log-probabilities from the rollout where both run in float32

    value_head = False
    episode_reward = "reward"
    progress = ("invalid_rate",)

    def rollout(self, backend, update: int, share=list) -> tuple[pd.DataFrame, pd.DataFrame]:
        raise NotImplementedError

    def advantages(self, steps: pd.DataFrame, values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, dict]:
        raise NotImplementedError

    def sampling_seed(self, update: int) -> int:
        return int(np.random.SeedSequence([self.seed, update, 1]).generate_state(1)[0])

    def sources(self) -> dict[str, str]:
        return {**super().sources(), **SOURCES}

    def derived(self) -> dict[str, str]:
        return {**super().derived(), "kl_estimator": "k3"}

    @classmethod
    def defaults(cls) -> dict:
        return {**super().defaults(), **RECORDED_BEFORE}

    def check(self):
        super().check()
        at_least_one({"updates": self.updates, "ppo_epochs": self.ppo_epochs})
        if self.minibatch < 0:
            raise ValueError(f"minibatch must be zero (the whole rollout) or more, got {self.minibatch}")
        if self.eval_temperature < 0:
            raise ValueError(f"eval_temperature must be zero or more, got {self.eval_temperature}")
        return self


# a setting added after runs were recorded whose default is not what those runs ran with
RECORDED_BEFORE = {"rollout_old_logprobs": False}

SOURCES = {
    "updates": "paper (coverage reported after 30K updates)",
    "max_new_tokens": "paper (256 CoT tokens)",
    "temperature": "paper (1.0 in training)",
    "eval_temperature": "paper (0, greedy, on held-out instances)",
    "epsilon": "paper (PPO's clip, 0.2)",
    "beta": "paper (KL penalty to the frozen model, 0.05)",
    "penalty": "paper (-5 for an output with no valid action)",
    "lora_rank": "ours: GRPO's rank (paper A); paper B tunes all weights and found LoRA insufficient",
    "lora_alpha": "ours (twice the rank)",
    "lora_targets": "ours (the attention projections, as GRPO)",
    "learning_rate": "ours: GRPO's, measured on its positive control (paper B's is for all weights)",
    "max_grad_norm": "ours: trl's default",
    "ppo_epochs": "paper (1 epoch over a bandit rollout)",
    "minibatch": "paper (an accumulated batch of 128 decisions per optimiser step: about 6 steps per bandit rollout "
    "of 800 decisions)",
    "micro_batch": "ours: memory (gradient accumulation over the batch)",
    "shared_prefix": "ours: the instructions every prompt shares fed once per micro-batch (the same log-probabilities "
    "and gradients, tested; paperlib.training.shared_prefix)",
    "kl_estimator": "ours: k3, per token, in the loss (trl's GRPO penalty)",
    "rollout_old_logprobs": "ours: PPO's old log-probabilities are the rollout's, per token, where the training "
    "passes run in the rollout's float32 (the same numbers up to rounding, rollout_logprob_gap), instead of a pass "
    "without gradients, or a value head's pass where the game has one (paperlib bench rlft --profile cpu --lever old, float32: a bandit update 261 -> 227 s, a "
    "tic-tac-toe update 280 -> 245 s, x1.15 each, the loss 2e-8 apart)",
}


def decisions(traces) -> tuple[list[list[int]], list[list[int]], list[float], list[list[float] | None]]:
    """Every decision of ``traces`` (per seat, each in turn order): its prompt's token ids, its
    completion's, the completion's log-probability when it was sampled, and the same per token
    (None where the rollout did not record it)."""
    return (
        [prompt for t in traces for prompt in t.prompt_ids],
        [list(c) for t in traces for c in t.completion_ids],
        [logprob for t in traces for logprob in t.completion_logprobs],
        [lps for t in traces for lps in (t.completion_token_logprobs or [None] * len(t.completion_ids))],
    )


def per_decision(batch: list[int], logprobs, completions) -> list[tuple[int, object]]:
    """Each decision of ``batch`` with its row of ``logprobs`` cut to its completion, on the CPU."""
    return [(i, row[: len(completions[i])].cpu()) for i, row in zip(batch, logprobs)]


def minibatches(rows: list[int], size: int, seed) -> list[list[int]]:
    """One PPO epoch's optimiser steps: ``rows`` in an order drawn from ``seed`` (the run seed, the
    update and the epoch), cut into minibatches of ``size`` decisions; all of them in their own
    order, as one, where ``size`` is 0 or covers them."""
    if not size or size >= len(rows):
        return [list(rows)]
    order = np.random.default_rng(seed).permutation(rows).tolist()
    return [order[i : i + size] for i in range(0, len(order), size)]


class Trainer:
    """The model, its adapter (and value head), the optimiser and the backend of one run."""

    def __init__(self, settings: RLFTSettings, run: RunDir, processes=None):
        import torch
        from peft import get_peft_model

        from paperlib.backends.hf import HFBackend
        from paperlib.training.distributed import Processes
        from paperlib.training.rlft.objective import ValueHead

        self.settings, self.run = settings, run
        self.processes = processes or Processes()
        lm, self.tokenizer, self.device = settings.base_model(self.processes.device)
        self.precision = precision.resolve(settings.precision, self.device)
        self.autocast = precision.autocast(self.precision, self.device)  # the training passes', not the rollout's
        # the rollout (never autocast) and the training passes both compute in float32
        self.float32_throughout = self.precision == "float32" and lm.dtype == torch.float32
        torch.manual_seed(settings.seed)  # the LoRA initialisation
        with quiet_trl():  # peft asks transformers' renamed gradient-checkpointing API
            self.model = get_peft_model(lm, settings.lora_config())
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.value_head = None
        if settings.value_head:
            # [ours] zero-initialised: the first update's values are 0, so its advantages are the returns
            self.value_head = ValueHead(lm.config.get_text_config().hidden_size).to(self.device)
            torch.nn.init.zeros_(self.value_head.linear.weight)
            torch.nn.init.zeros_(self.value_head.linear.bias)
            params += list(self.value_head.parameters())
        self.optimizer = self.processes.accelerator.prepare_optimizer(
            torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
        )
        self.backend = HFBackend(settings.model, lm=self.model, tokenizer=self.tokenizer, max_batch=settings.batch_size)
        self.peaks = PhasePeaks()  # where each update's memory peaks (its log's *_peak_gb)
        self.value_pass_logprobs: dict | None = None  # the value head's pass's, until the update takes them

    def adapter_hash(self) -> str:
        from peft import get_peft_model_state_dict

        return adapter_hash(get_peft_model_state_dict(self.model))

    def restore(self, update: int) -> None:
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        checkpoint = self.run.saved(update)
        set_peft_model_state_dict(self.model, load_file(checkpoint / ADAPTER_FILE))
        if self.value_head is not None:
            self.value_head.load_state_dict(torch.load(checkpoint / VALUE_HEAD_FILE, weights_only=True))
        self.optimizer.load_state_dict(torch.load(checkpoint / OPTIMIZER_FILE, weights_only=True))

    def save(self, update: int) -> None:
        import torch

        checkpoint = self.run.checkpoint(update)
        self.model.save_pretrained(str(checkpoint))
        if self.value_head is not None:
            torch.save(self.value_head.state_dict(), checkpoint / VALUE_HEAD_FILE)
        torch.save(self.optimizer.state_dict(), checkpoint / OPTIMIZER_FILE)
        marker = checkpoint / COMPLETE_MARKER
        marker.with_suffix(".tmp").write_text(json.dumps({"update": update}))
        os.replace(marker.with_suffix(".tmp"), marker)

    def _tensors(self, prompts, completions, batch) -> dict:
        from paperlib.training.rlft import objective

        return {
            k: v.to(self.device)
            for k, v in objective.pad_rows(
                [prompts[i] for i in batch], [completions[i] for i in batch], self.tokenizer.pad_token_id
            ).items()
        }

    def values(self, traces) -> np.ndarray:
        """The value head's V(s) of each decision of ``traces`` (its prompt's last hidden state),
        without gradients; 0 for a decision with no completion (it is not trained either). The
        same pass gives each decision's per-token log-probabilities under the adapter that played
        them, in the training passes' precision: kept for the update (:attr:`value_pass_logprobs`),
        whose old log-probabilities they are."""
        import torch

        from paperlib.training.rlft import objective

        prompts, completions, _, _ = decisions(traces)
        values = np.zeros(len(prompts))
        scored_rows = []
        self.model.eval()
        with torch.no_grad():
            batches = self._batches_of([i for i, ids in enumerate(completions) if len(ids)], prompts, completions)
            for batch in (batches[b] for b in self.processes.mine(batches)):
                tensors = self._tensors(prompts, completions, batch)
                with self.autocast():
                    scored = objective.completion_logprobs(self.model, **tensors, states=True)
                values[batch] = self.value_head(scored.states).float().cpu().numpy()
                scored_rows += per_decision(batch, scored.logprobs, completions)
        self.value_pass_logprobs = self._on_every_process(scored_rows)
        return self.processes.sum_array(values)

    def _scored_once(self, prompts, completions, rows: list[int], adapter: bool) -> dict:
        """Each decision of ``rows``'s per-token log-probabilities (a 1-D tensor on the device)
        under the model as it is (``adapter``) or with its adapter disabled, without gradients:
        every process gets every decision's (computed by the process whose micro-batch held it)."""
        import torch

        from paperlib.training.rlft import objective

        batches = self._batches_of(rows, prompts, completions)
        scored = []
        with torch.no_grad(), self.autocast():
            for batch in (batches[b] for b in self.processes.mine(batches)):
                tensors = self._tensors(prompts, completions, batch)
                if adapter:
                    logprobs = objective.completion_logprobs(self.model, **tensors).logprobs
                else:
                    logprobs = objective.reference_logprobs(self.model, **tensors)
                scored += per_decision(batch, logprobs, completions)
        return self._on_every_process(scored)

    def _on_every_process(self, scored: list[tuple[int, object]]) -> dict:
        """The per-decision rows every process scored (:func:`per_decision`), on this device."""
        return {i: row.to(self.device) for i, row in self.processes.gather(scored)}

    def _batches_of(self, rows: list[int], prompts, completions) -> list[list[int]]:
        """``rows`` (decisions with a completion: one with no token has nothing to train) sorted by
        length, for less padding, and cut into micro-batches (with several processes, each has
        one at least where there are enough rows)."""
        ordered = sorted(rows, key=lambda i: len(prompts[i]) + len(completions[i]))
        return self.processes.micro_batches(ordered, self.settings.micro_batch)

    def update(
        self, traces, advantages: np.ndarray, targets: np.ndarray | None = None, update: int = 1
    ) -> dict[str, float]:
        """PPO on every decision of ``traces`` (with one advantage and, with a value head, one value
        target per decision): ``ppo_epochs`` passes, each one optimiser step per minibatch of
        ``minibatch`` decisions (gradients accumulated over its micro-batches). The log-probabilities
        the ratio and the KL compare against are the model's before the update's first step: the
        first minibatch's forward pass gives its own decisions', a pass without gradients before it
        the rest's (none where the first step takes every decision).
        Returns the loss's statistics (token means over the batch, from the last epoch), the mean
        gradient norm, the optimiser steps and where the seconds went."""
        import torch

        from paperlib.training.rlft import objective

        s = self.settings
        prompts, completions, recorded, recorded_tokens = decisions(traces)
        rows = [i for i, ids in enumerate(completions) if len(ids)]  # a decision with no token has nothing to train
        tokens = sum(len(completions[i]) for i in rows)
        stats: dict[str, float] = {}
        seconds = {"reference": 0.0, "forward_backward": 0.0}
        self.model.train()
        steps = [minibatches(rows, s.minibatch, [s.seed, update, epoch]) for epoch in range(s.ppo_epochs)]
        started = time.perf_counter()
        first = set(steps[0][0])  # the first step's decisions: its own forward pass scores them before it steps
        later = [i for i in rows if i not in first]
        value_pass, self.value_pass_logprobs = self.value_pass_logprobs or {}, None
        if not later:
            source = "none needed"
        elif (
            s.rollout_old_logprobs
            and self.float32_throughout
            and all(recorded_tokens[i] is not None and len(recorded_tokens[i]) == len(completions[i]) for i in later)
        ):
            source = "the rollout"
        else:
            source = "the value head's pass" if all(i in value_pass for i in later) else "a pass"
        with self.peaks.phase("reference"):
            references = self._scored_once(prompts, completions, rows, adapter=False) if s.beta else None
            if source == "the rollout":
                old = {i: torch.tensor(recorded_tokens[i], dtype=torch.float32, device=self.device) for i in later}
            elif source == "the value head's pass":
                old = {i: value_pass[i] for i in later}
            else:
                old = self._scored_once(prompts, completions, later, adapter=True) if later else {}
        seconds["reference"] += time.perf_counter() - started
        gaps, grad_norms = [], []

        def padded(per_row: dict, batch: list[int], like: torch.Tensor) -> torch.Tensor:
            out = torch.zeros_like(like)
            for j, i in enumerate(batch):
                out[j, : len(per_row[i])] = per_row[i]
            return out

        with self.peaks.phase("forward_backward"):  # every minibatch of every epoch
            for epoch, cut in enumerate(steps):
                for minibatch in cut:
                    is_first = minibatch is steps[0][0]
                    batches = self._batches_of(minibatch, prompts, completions)
                    first_scored = []
                    share = sum(len(completions[i]) for i in minibatch)  # the minibatch's tokens: its loss's mean
                    for batch in (batches[b] for b in self.processes.mine(batches)):
                        started = time.perf_counter()
                        tensors = self._tensors(prompts, completions, batch)
                        with self.autocast():
                            scored = objective.completion_logprobs(
                                self.model, **tensors, entropies=True, states=self.value_head is not None
                            )
                        if is_first:
                            before = scored.logprobs.detach()
                            first_scored += per_decision(batch, before, completions)
                        else:
                            before = padded(old, batch, scored.logprobs)
                        if epoch == 0 and (is_first or source != "the rollout"):  # the log-probabilities a pass gave
                            sums = torch.stack(
                                [row[: len(completions[i])].sum().cpu() for i, row in zip(batch, before)]
                            )
                            gaps.append((sums - torch.tensor([recorded[i] for i in batch])).abs())
                        reference = before if references is None else padded(references, batch, scored.logprobs)
                        critic = {}
                        if self.value_head is not None:
                            critic = {
                                "values": self.value_head(scored.states),
                                "targets": torch.tensor(targets[batch], dtype=torch.float32, device=self.device),
                                "rows": len(minibatch),
                            }
                        loss, batch_stats = objective.ppo_loss(
                            scored.logprobs,
                            before,
                            reference,
                            torch.tensor(advantages[batch], dtype=scored.logprobs.dtype, device=self.device),
                            tensors["completion_mask"],
                            epsilon=s.epsilon,
                            beta=s.beta,
                            entropies=scored.entropies,
                            tokens=share,
                            **critic,
                        )
                        loss.backward()
                        seconds["forward_backward"] += time.perf_counter() - started
                        if epoch == s.ppo_epochs - 1:  # the last epoch's statistics, as means over the batch
                            for name, value in {"loss": loss.item(), **batch_stats}.items():
                                weight = len(minibatch) / len(rows) if name == "value_loss" else share / tokens
                                stats[name] = stats.get(name, 0.0) + value * weight
                    if is_first:  # a later epoch may give these decisions to another process
                        old.update(self._on_every_process(first_scored))
                    params = [p for group in self.optimizer.param_groups for p in group["params"]]
                    self.processes.sum_gradients(params)
                    grad_norms.append(float(torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm)))
                    self.optimizer.step()
                    self.optimizer.zero_grad(set_to_none=True)
        gaps, stats = self.processes.gather(gaps), self.processes.sum_stats(stats)
        gap = torch.cat(gaps).nan_to_num(nan=0.0) if gaps else torch.zeros(0)
        return {
            **stats,
            "grad_norm": float(np.mean(grad_norms)),
            "optimizer_steps": len(grad_norms),
            "decisions": len(rows),
            "completion_tokens": tokens,
            "rollout_logprob_gap": float(gap.max()) if len(gap) else math.nan,
            "old_logprobs_from": source,
            **{f"{name}_seconds": value for name, value in seconds.items()},
        }


def train(
    settings: RLFTSettings, out, stop_after: int | None = None, progress: bool = True, replay: bool = False
) -> pd.DataFrame:
    """Run (or resume) ``settings`` in the directory ``out``; return its training log (one row per
    update). ``stop_after``: stop once that update is saved, as a killed run would. A finished
    record is returned as it is, unless ``replay``: then the updates recorded without a checkpoint
    here are redone, each checked against its record (:mod:`paperlib.training.checkpoints`)."""
    from tqdm.auto import tqdm

    from paperlib.llm.traces import seat_traces
    from paperlib.training.distributed import Processes

    settings.check()
    processes = Processes()
    processes.check(settings.batch_size)
    run = RunDir(out)

    def claim():
        run.claim(settings.config(), settings.defaults())
        return run.rewind()

    done = processes.from_main(claim)
    last = min(settings.updates, stop_after or settings.updates)
    recorded = run.recorded_steps()
    if done >= last or (not replay and recorded and recorded[-1] >= last):
        return run.log()
    trainer = Trainer(settings, run, processes)
    if done:
        trainer.restore(done)
    bar = tqdm(
        total=settings.updates,
        initial=done,
        desc=f"RLFT {settings.model}",
        unit="update",
        disable=not progress or not processes.main,
    )
    for update in range(done + 1, last + 1):
        started = time.perf_counter()
        generating = trainer.adapter_hash()
        trainer.model.eval()
        trainer.peaks.new_step()
        with trainer.peaks.phase("rollout"):
            episodes, steps = processes.gather_rollout(*settings.rollout(trainer.backend, update, processes.share))
        rollout_seconds = time.perf_counter() - started
        steps = steps.sort_values(["episode", "turn"], ignore_index=True)
        traces = seat_traces(steps, episodes, trainer.backend.encode, reward=settings.episode_reward)
        advantages_started = time.perf_counter()
        values = trainer.values(traces) if settings.value_head else None
        advantages, targets, rollout_stats = settings.advantages(steps, values)
        advantages_seconds = time.perf_counter() - advantages_started
        episodes = episodes.assign(adapter_hash=generating)
        if processes.main:
            run.save_rollouts(update, episodes, steps.assign(update=update, adapter_hash=generating))
        stats = trainer.update(traces, advantages, targets, update)
        row = {
            "step": update,
            **settings.labels(),
            "world_size": processes.world_size,
            "precision": trainer.precision,
            "rollout_adapter_hash": generating,
            **rollout_stats,
            **stats,
            "adapter_hash": processes.agree(trainer.adapter_hash(), f"the adapter after update {update}"),
            "rollout_seconds": rollout_seconds,
            "advantages_seconds": advantages_seconds,
            "seconds": time.perf_counter() - started,
            **trainer.peaks.row(),
        }
        if processes.main:
            run.append_log(row)
            trainer.save(update)
            run.keep_resume_point(update, finished=update == settings.updates)
        bar.set_postfix(settings.postfix(row))
        bar.update(1)
    bar.close()
    del trainer
    processes.release()  # the accelerator's reference to the optimiser
    gc.collect()  # the trainer's model, optimiser and hooks hold reference cycles
    from paperlib.backends.hf import release_freed_memory  # here: a run refused above imports no backend

    release_freed_memory()  # what the updates peaked at, before an evaluation in this process
    processes.wait()  # for the main process's last writes
    return run.log()
