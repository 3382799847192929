"""Paper B's RLFT loop, shared by its two games: rollouts by the adapter of the update before,
advantages, PPO's clipped objective with a KL penalty to the frozen model, a checkpoint and a
row of the training log per update, resumable.

A game's settings (:class:`RLFTBase`'s subclasses: ``rlft_bandits.RLFTSettings`` and
``rlft_tictactoe.TicTacToeSettings``) say what one update plays and how its steps become
advantages; everything else is here, once:

1. Rollout (the game's ``rollout``): the trainer's own peft model, through the
   :class:`~paperlib.backends.hf.HFBackend`, plays the game with the game's LLM agent (free
   decisions, the paper's rule), so prompts, parser, decision core and backend are those of
   the evaluation notebooks. Every step row keeps its prompt and completion tokens and the
   completion's log-probability under that adapter.
2. Advantages (the game's ``advantages``), on the step rows in (episode, turn) order: the
   bandits' Monte-Carlo returns-to-go, tic-tac-toe's GAE on the values of a value head
   (:meth:`Trainer.values`), whose targets the update then fits.
3. One optimiser step per PPO epoch on every decision, in micro-batches whose losses add up
   to the batch's (gradient accumulation): the clipped surrogate plus beta times the k3 KL to
   the same model with its adapter disabled, token means (plus the value loss where the game
   has a value head). In the first epoch the rollout's per-token log-probabilities are the
   model's own before the step, so its forward pass gives them (no extra pass); the log
   records how far the recomputed sequence log-probabilities are from the rollout's
   (``rollout_logprob_gap``), a check that the update is on-policy.
4. The update's row of the training log, then its checkpoint (the adapter, the value head if
   any, the optimiser's state, ``trainer_state.json`` last): the run directory is GRPO's
   (:class:`~paperlib.training.checkpoints.RunDir`), and a killed run resumes from its last
   complete checkpoint to the same log. Every random choice is a function of (run seed,
   update): what is played, the sampling seed, the LoRA initialisation (run seed).
"""

from __future__ import annotations

import gc
import json
import math
import os
import resource
import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from paperlib.stats import ALPHA
from paperlib.training.checkpoints import ADAPTER_FILE, COMPLETE_MARKER, RunDir, adapter_hash, quiet_trl
from paperlib.training.rlft_constants import CLIP_EPSILON, INVALID_PENALTY, KL_BETA

OPTIMIZER_FILE = "optimizer.pt"
VALUE_HEAD_FILE = "value_head.pt"


@dataclass(frozen=True)
class RLFTBase:
    """The settings every RLFT run has; a game's subclass adds its own and the three methods
    below. Sources per field in :data:`SOURCES`."""

    model: str = "gemma2-2b"
    seed: int = 0  # LoRA initialisation, what each update plays, sampling
    profile: str = "custom"  # a label: the preset this run started from
    updates: int = 30_000
    max_new_tokens: int = 256
    temperature: float = 1.0
    eval_temperature: float = 0.0
    epsilon: float = CLIP_EPSILON
    beta: float = KL_BETA
    penalty: float = INVALID_PENALTY
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    learning_rate: float = 2.5e-4
    max_grad_norm: float = 1.0
    ppo_epochs: int = 1
    micro_batch: int = 0  # decisions per forward and backward pass; 0: the whole batch
    shared_prefix: bool = True

    value_head = False  # whether the game's advantages need a value head (not a setting: the game's)

    @property
    def batch_size(self) -> int:
        """Episodes one update plays at once (the backend's batch)."""
        raise NotImplementedError

    @property
    def shape(self) -> str:
        """What one update plays, in words (the benchmark's report)."""
        raise NotImplementedError

    def rollout(self, trainer: "Trainer", update: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Update ``update``'s episodes and step rows, played by ``trainer``'s model."""
        raise NotImplementedError

    def advantages(self, steps: pd.DataFrame, trainer: "Trainer") -> tuple[np.ndarray, np.ndarray | None, dict]:
        """For ``steps`` in (episode, turn) order: the advantage of each row, the value target of
        each row (None without a value head), and the rollout's columns of the training log."""
        raise NotImplementedError

    def sampling_seed(self, update: int) -> int:
        return int(np.random.SeedSequence([self.seed, update, 1]).generate_state(1)[0])

    def check(self):
        """Refuse, in one line, settings that cannot run (before any model loads)."""
        from paperlib.models import resolve

        if resolve(self.model).kind == "gateway":
            raise ValueError(f"{self.model!r} is a gateway model: only local models (embedded or hub) can be trained")
        at_least_one = {"updates": self.updates, "max_new_tokens": self.max_new_tokens, "lora_rank": self.lora_rank,
                        "ppo_epochs": self.ppo_epochs, "seed + 1": self.seed + 1}
        for name, value in at_least_one.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if not self.temperature > 0:
            raise ValueError("the training temperature must be positive: PPO's ratio needs a sampling policy")
        if self.eval_temperature < 0 or not self.learning_rate > 0 or not self.epsilon > 0 or self.beta < 0:
            raise ValueError("eval_temperature and beta must be zero or more, learning_rate and epsilon positive")
        if self.micro_batch < 0:
            raise ValueError(f"micro_batch must be zero (the whole batch) or more, got {self.micro_batch}")
        return self

    def config(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def of_run(cls, out):
        """The settings a run directory was trained with."""
        config = RunDir(out).config()
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()})


SOURCES = {
    "updates": "paper (coverage reported after 30K updates)",
    "max_new_tokens": "paper (256 CoT tokens)",
    "temperature": "paper (1.0 in training)", "eval_temperature": "paper (0, greedy, on held-out instances)",
    "epsilon": "paper (PPO's clip, 0.2)", "beta": "paper (KL penalty to the frozen model, 0.05)",
    "penalty": "paper (-5 for an output with no valid action)",
    "lora_rank": "ours: GRPO's rank (paper A); paper B tunes all weights and found LoRA insufficient",
    "lora_alpha": "ours (twice the rank)", "lora_targets": "ours (the attention projections, as GRPO)",
    "learning_rate": "ours: GRPO's, measured on its positive control (paper B's is for all weights)",
    "max_grad_norm": "ours: trl's default", "ppo_epochs": "ours: one on-policy pass per batch",
    "micro_batch": "ours: memory (gradient accumulation over the batch)",
    "shared_prefix": "ours: the instructions every prompt shares fed once per micro-batch (the same log-probabilities "
                     "and gradients, tested; paperlib.training.shared_prefix)",
    "kl_estimator": "ours: k3, per token, in the loss (trl's GRPO penalty)",
}


def settings_table(settings: RLFTBase, sources: dict, derived: dict) -> pd.DataFrame:
    """Every field of ``settings`` with its value and source, then the ``derived`` choices (name ->
    value); sources from the game's ``sources`` first, then :data:`SOURCES`, "run" for none."""
    from dataclasses import fields

    both = {**SOURCES, **sources}
    rows = [{"setting": f.name, "value": str(getattr(settings, f.name))} for f in fields(settings)]
    rows += [{"setting": name, "value": value} for name, value in derived.items()]
    return pd.DataFrame([{**row, "source": both.get(row["setting"], "run")} for row in rows])


class Trainer:
    """The model, its adapter (and value head), the optimiser and the backend of one run."""

    def __init__(self, settings: RLFTBase, run: RunDir):
        import torch
        from peft import LoraConfig, get_peft_model

        from paperlib.backends.hf import HFBackend
        from paperlib.models import load_local
        from paperlib.training.rlft import ValueHead
        from paperlib.training.shared_prefix import use_training_attention

        self.settings, self.run = settings, run
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        lm, self.tokenizer = load_local(settings.model, self.device)
        if settings.shared_prefix:
            use_training_attention(lm)  # where the kernel covers the model; else the plain forward pass
        torch.manual_seed(settings.seed)  # the LoRA initialisation
        config = LoraConfig(r=settings.lora_rank, lora_alpha=settings.lora_alpha,
                            target_modules=list(settings.lora_targets), lora_dropout=0.0, task_type="CAUSAL_LM")
        with quiet_trl():  # peft asks transformers' renamed gradient-checkpointing API
            self.model = get_peft_model(lm, config)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.value_head = None
        if settings.value_head:
            # [ours] zero-initialised: the first update's values are 0, so its advantages are the returns
            self.value_head = ValueHead(lm.config.get_text_config().hidden_size).to(self.device)
            torch.nn.init.zeros_(self.value_head.linear.weight)
            torch.nn.init.zeros_(self.value_head.linear.bias)
            params += list(self.value_head.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
        self.backend = HFBackend(settings.model, lm=self.model, tokenizer=self.tokenizer,
                                 max_batch=settings.batch_size)

    def adapter_hash(self) -> str:
        from peft import get_peft_model_state_dict

        return adapter_hash(get_peft_model_state_dict(self.model))

    def restore(self, update: int) -> None:
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        checkpoint = self.run.checkpoint(update)
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

    def _rows(self, steps: pd.DataFrame) -> tuple[list, list, list[list[int]]]:
        """Prompt and completion ids of ``steps``, and the micro-batches of the rows that have a
        completion (a decision with no token has nothing to train), each of similar length."""
        prompts = [self.backend.encode(p) for p in steps["prompt"]]
        completions = [list(ids) for ids in steps["completion_ids"]]
        rows = [i for i, ids in enumerate(completions) if len(ids)]
        rows.sort(key=lambda i: len(prompts[i]) + len(completions[i]))  # less padding per micro-batch
        size = self.settings.micro_batch or len(rows) or 1
        return prompts, completions, [rows[i:i + size] for i in range(0, len(rows), size)]

    def _tensors(self, prompts, completions, batch) -> dict:
        from paperlib.training import rlft

        return {k: v.to(self.device) for k, v in rlft.pad_rows(
            [prompts[i] for i in batch], [completions[i] for i in batch], self.tokenizer.pad_token_id).items()}

    def values(self, steps: pd.DataFrame) -> np.ndarray:
        """The value head's V(s) of each step row (its prompt's last hidden state), without
        gradients; 0 for a row with no completion (it is not trained either)."""
        import torch

        from paperlib.training import rlft

        prompts, completions, batches = self._rows(steps)
        values = np.zeros(len(steps))
        self.model.eval()
        with torch.no_grad():
            for batch in batches:
                scored = rlft.completion_logprobs(self.model, **self._tensors(prompts, completions, batch), states=True)
                values[batch] = self.value_head(scored.states).float().cpu().numpy()
        return values

    def update(self, steps: pd.DataFrame, advantages: np.ndarray, targets: np.ndarray | None = None
               ) -> dict[str, float]:
        """One optimiser step per PPO epoch on every decision of ``steps`` (with one advantage and,
        with a value head, one value target per row); the loss's statistics and where the
        seconds went."""
        import torch

        from paperlib.training import rlft

        s = self.settings
        steps = steps.reset_index(drop=True)
        prompts, completions, batches = self._rows(steps)
        rows = [i for batch in batches for i in batch]
        tokens = sum(len(completions[i]) for i in rows)
        stats: dict[str, float] = {}
        seconds = {"reference": 0.0, "forward_backward": 0.0}
        old: dict[int, torch.Tensor] = {}
        references: dict[int, torch.Tensor] = {}
        gaps = []
        self.model.train()
        for epoch in range(s.ppo_epochs):
            for b, batch in enumerate(batches):
                tensors = self._tensors(prompts, completions, batch)
                if epoch == 0:
                    started = time.perf_counter()
                    references[b] = rlft.reference_logprobs(self.model, **tensors) if s.beta else None
                    seconds["reference"] += time.perf_counter() - started
                started = time.perf_counter()
                scored = rlft.completion_logprobs(self.model, **tensors, entropies=True,
                                                  states=self.value_head is not None)
                if epoch == 0:
                    old[b] = scored.logprobs.detach()
                    recorded = torch.tensor([float(steps["completion_logprob"][i]) for i in batch])
                    gaps.append((old[b].sum(dim=1).cpu() - recorded).abs())
                reference = references[b] if references[b] is not None else old[b]
                critic = {}
                if self.value_head is not None:
                    critic = {"values": self.value_head(scored.states),
                              "targets": torch.tensor(targets[batch], dtype=torch.float32, device=self.device),
                              "rows": len(rows)}
                loss, batch_stats = rlft.ppo_loss(
                    scored.logprobs, old[b], reference,
                    torch.tensor(advantages[batch], dtype=scored.logprobs.dtype, device=self.device),
                    tensors["completion_mask"], epsilon=s.epsilon, beta=s.beta, entropies=scored.entropies,
                    tokens=tokens, **critic)
                loss.backward()
                seconds["forward_backward"] += time.perf_counter() - started
                if epoch == s.ppo_epochs - 1:  # the last epoch's statistics: token means over the batch
                    for name, value in {"loss": loss.item(), **batch_stats}.items():
                        stats[name] = stats.get(name, 0.0) + value
            params = [p for group in self.optimizer.param_groups for p in group["params"]]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, s.max_grad_norm))
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        gap = torch.cat(gaps).nan_to_num(nan=0.0) if gaps else torch.zeros(0)
        return {**stats, "grad_norm": grad_norm, "decisions": len(rows), "completion_tokens": tokens,
                "rollout_logprob_gap": float(gap.max()) if len(gap) else math.nan,
                **{f"{name}_seconds": value for name, value in seconds.items()}}


def train(settings: RLFTBase, out, stop_after: int | None = None, progress: bool = True,
          postfix=("invalid_rate",)) -> pd.DataFrame:
    """Run (or resume) ``settings`` in the directory ``out``; return its training log (one row per
    update). ``stop_after``: stop once that update is saved, as a killed run would.
    ``postfix``: the log's columns the progress bar shows."""
    from tqdm.auto import tqdm

    from paperlib.backends.hf import release_freed_memory

    settings.check()
    run = RunDir(out)
    run.claim(settings.config())
    done = run.rewind()
    last = min(settings.updates, stop_after or settings.updates)
    if done >= last:
        return run.log()
    trainer = Trainer(settings, run)
    if done:
        trainer.restore(done)
    bar = tqdm(total=settings.updates, initial=done, desc=f"RLFT {settings.model}", unit="update",
               disable=not progress)
    for update in range(done + 1, last + 1):
        started = time.perf_counter()
        generating = trainer.adapter_hash()
        episodes, steps = settings.rollout(trainer, update)
        rollout_seconds = time.perf_counter() - started
        steps = steps.sort_values(["episode", "turn"], ignore_index=True)
        advantages_started = time.perf_counter()
        advantages, targets, rollout_stats = settings.advantages(steps, trainer)
        advantages_seconds = time.perf_counter() - advantages_started
        episodes = episodes.assign(adapter_hash=generating)
        run.save_rollouts(update, episodes, steps.assign(update=update, adapter_hash=generating))
        stats = trainer.update(steps, advantages, targets)
        row = {"step": update, "model": settings.model, "seed": settings.seed, "profile": settings.profile,
               "rollout_adapter_hash": generating, **rollout_stats, **stats, "adapter_hash": trainer.adapter_hash(),
               "rollout_seconds": rollout_seconds, "advantages_seconds": advantages_seconds,
               "seconds": time.perf_counter() - started,
               "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
        run.append_log(row)
        trainer.save(update)
        bar.set_postfix({name: f"{row[name]:.2f}" for name in postfix} | {"s": f"{row['seconds']:.0f}"})
        bar.update(1)
    bar.close()
    del trainer
    gc.collect()  # the trainer's model, optimiser and hooks hold reference cycles
    release_freed_memory()  # what the updates peaked at, before an evaluation in this process
    return run.log()


def held_out(out, adapters: dict, cells: dict, size: int, directory, play) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out rollouts of the run in ``out`` under each of ``adapters`` (label -> a saved
    update, or None for the base model) in each of ``cells`` (name -> the game's cell; the name
    "" for a game with one), ``size`` episodes each: one resumable store per label and cell under
    ``directory`` (``<label>/<cell name>``). A complete store is read, a partial one refused in
    one line, and the model loads only when something is missing: each adapter that lacks a
    cell loads once and plays it with ``play(backend, cell, labels)`` -> (episodes, steps),
    ``labels`` being ``adapter``, ``update`` (0: base), ``adapter_hash`` and, in a named cell,
    ``cell``. Step rows carry ``adapter`` (and ``cell``) too."""
    from pathlib import Path

    from paperlib.backends.hf import HFBackend
    from paperlib.data import RolloutStore
    from paperlib.training.checkpoints import each_adapter

    run, directory = RunDir(out), Path(directory)
    played_episodes, played_steps, pending = [], [], {}
    for label in adapters:
        for name in cells:
            store = RolloutStore(directory / label / name)
            held = store.episodes()
            if len(held) == size:
                played_episodes.append(held)
                played_steps.append(store.steps())
            elif len(held):
                raise ValueError(f"{store.directory} holds {len(held)} held-out episodes, not {size}: delete it to play "
                                 "them again")
            else:
                pending.setdefault(label, []).append(name)
    model_name = run.config()["model"]
    todo = {label: adapters[label] for label in pending}
    for label, update, model, tokenizer, hashed in (each_adapter(run, model_name, todo) if todo else ()):
        backend = HFBackend(model_name, lm=model, tokenizer=tokenizer, max_batch=size)
        for name in pending[label]:
            labels = {"adapter": label, "update": update, "adapter_hash": hashed, **({"cell": name} if name else {})}
            episodes, steps = play(backend, cells[name], labels)
            steps = steps.assign(adapter=label, **({"cell": name} if name else {}))
            RolloutStore(directory / label / name).append(episodes, steps)
            played_episodes.append(episodes)
            played_steps.append(steps)
    return pd.concat(played_episodes, ignore_index=True), pd.concat(played_steps, ignore_index=True)


def before_after(episodes: pd.DataFrame, metrics, base: str = "base", within=()) -> pd.DataFrame:
    """One row per adapter x ``within`` cell x metric of held-out episodes: the mean and its 95%
    t interval, and against ``base`` in the same cell :func:`paperlib.stats.against`'s columns
    (the difference of means, its p and the test that gave it: Welch's, or Mann-Whitney's where
    neither side varies; Hedges' g with its interval). Every adapter must have played the base
    model's seeds in that cell."""
    from paperlib.stats import against, mean_ci

    keys = [*within, "adapter", "update"]
    rows = []
    for key, group in episodes.groupby(keys, sort=False):
        cell = dict(zip(keys, key))
        control = episodes[(episodes["adapter"] == base)
                           & np.logical_and.reduce([episodes[k] == cell[k] for k in within] or [True])]
        label = cell["adapter"]
        if label != base and sorted(group["seed"]) != sorted(control["seed"]):
            where = "".join(f" {k} {cell[k]}" for k in within)
            raise ValueError(f"{label!r} was not played on the base model's held-out seeds{where and ' in' + where}")
        for metric in metrics:
            mean, low, high = mean_ci(group[metric])
            row = {**cell, "update": int(cell["update"]), "model": group["model"].iloc[0], "metric": metric,
                   "mean": mean, "ci_low": low, "ci_high": high, "n": len(group)}
            rows.append(row if label == base else {**row, **against(group[metric], control[metric])})
    return pd.DataFrame(rows)


def lowered(row) -> bool:
    """Whether a before/after row is significantly below the base model at :data:`~paperlib.stats.ALPHA`
    (the positive control's test: the invalid share fell)."""
    return bool(row["p"] < ALPHA and row["difference"] < 0)


def raised(row) -> bool:
    """Whether a before/after row is significantly above the base model at :data:`~paperlib.stats.ALPHA`."""
    return bool(row["p"] < ALPHA and row["difference"] > 0)


def cot_verdict(effect: str, with_cot: bool, without: bool) -> str:
    """Ours beside paper B's CoT ablation (RLFT without CoT does much worse than with it, Fig. 9b):
    whether ``effect`` (e.g. "lowers regret") was significant with CoT and not without, the
    opposite, in both styles or in neither."""
    if with_cot != without:
        return (f"Ours {'show that direction' if with_cot else 'show the opposite'}: RLFT {effect} significantly "
                f"{'with' if with_cot else 'without'} CoT and not {'without' if with_cot else 'with'} it.")
    return f"Ours do not separate the two: RLFT {effect} significantly in {'both styles' if with_cot else 'neither style'}."


def change(row) -> str:
    """A before/after row's change against the base model in words: its direction, p and g when
    significant at :data:`~paperlib.stats.ALPHA`."""
    if not row["p"] < ALPHA:
        return f"no significant change (p = {row['p']:.2g})" if row["p"] == row["p"] else "no test: no variation"
    if row.get("test", "welch") == "welch":
        return f"{'higher' if row['difference'] > 0 else 'lower'}, p = {row['p']:.2g}, g = {row['g']:.2f}"
    return f"{'higher' if row['difference'] > 0 else 'lower'}, p = {row['p']:.2g}, {row['test']}: neither side varies"
