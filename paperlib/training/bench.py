"""``paperlib bench grpo`` and ``paperlib bench rlft``: seconds per training step and where
they go, the plain path against ours.

Both take a game's settings (any game's): ``paperlib bench`` builds them from a profile's recipe.

GRPO.

Each variant runs one real step of :func:`paperlib.training.grpo.train` in a scratch
directory, in this process, from the same settings and seed: the same LoRA
initialisation, hence the same rollouts (rollouts are never autocast; the report checks
that every variant's rollout is the first's) and, up to rounding, the same loss, whose
difference to the first variant's the report shows beside the times. Variants
(:data:`VARIANTS`, by lever):

- ``precision`` (the default): the recipe in float32 against the recipe in bfloat16 autocast
  (``precision``; :mod:`paperlib.training.precision`);
- ``paths`` (float32): trl's own log-probability path, as shipped (every row fed whole; on a
  CPU the LM head projects every position through the vocabulary), gradient checkpointing on;
  the rules every row shares fed once per micro-batch and the LM head at completion positions
  only (``shared_prefix``), checkpointing on; the same without recomputing the forward pass
  in the backward pass (the ``cpu`` profile's recipe).

Where a step's seconds go: the rollout (the episodes played with the current adapter),
the loss's forward pass, the KL measurement's forward pass (``measure_kl``; a one-step run
measures it, as its last step, and a run measures it on one step in ``kl_every``: the report
gives the mean step of a run beside the step), the rest of the step (backward pass and
optimiser), and the checkpoint written after it. Memory is not compared here (freed memory
stays with the process, so a later variant's peak includes the earlier ones'); a training
run logs its own peak (``peak_rss_gb``), and an RLFT update each phase's
(``<phase>_peak_gb``, :mod:`paperlib.training.memory`: the resident memory's peak while the
phase ran, which includes what the process held before it). The figures depend on what else
runs on the machine (the load average is printed), so no test times them.

RLFT (:func:`bench_update`), on the bandits or tic-tac-toe. One real update of
:func:`paperlib.training.rlft.loop.train` per variant (:data:`RLFT_VARIANTS`: float32
against bfloat16, every row fed whole against the shared prefix, one pass per minibatch
against the recipe's passes of ``micro_batch`` sorted decisions, or PPO's old
log-probabilities from a pass without gradients against the rollout's own), from the same
settings and seed, hence the same rollout and (up to rounding) the same loss: the rollout,
the advantages (for tic-tac-toe, the value head's pass over every move), the reference
model's log-probabilities (the adapter disabled) and the old ones where a pass gives them,
the loss's forward and backward passes, and the rest of the update (optimiser, checkpoint,
logging).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import replace

import pandas as pd

from paperlib.training.checkpoints import RunDir, quiet_trl
from paperlib.training.grpo import GRPOSettings, build_trainer

PRECISION = {"float32": {"precision": "float32"}, "bfloat16": {"precision": "bfloat16"}}
VARIANTS = {
    "precision": PRECISION,
    "paths": {
        "trl": {"shared_prefix": False, "gradient_checkpointing": True, "precision": "float32"},
        "shared prefix": {"shared_prefix": True, "gradient_checkpointing": True, "precision": "float32"},
        "shared prefix, no checkpointing": {
            "shared_prefix": True,
            "gradient_checkpointing": False,
            "precision": "float32",
        },
    },
}
PHASES = ("rollout", "forward", "kl", "backward_and_optimiser", "checkpoint")


def rollout_hash(run: RunDir) -> str:
    """A hash of every completion a run's rollouts played and its log-probability (what two
    variants must share)."""
    steps = pd.concat(pd.read_parquet(p) for p in sorted((run.path / "rollouts" / "steps").glob("step-*.parquet")))
    played = steps[["raw_completion", "completion_logprob"]].astype(str).agg("|".join, axis=1)
    return hashlib.sha256(played.str.cat(sep="\x00").encode()).hexdigest()[:16]


def differences(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each variant's ratio to the first variant and its loss and gradient-norm
    difference from the first's (absolute, and relative for the norm)."""
    first = table.iloc[0]
    return table.assign(
        loss_difference=(table["loss"] - first["loss"]).abs(),
        grad_norm_relative_difference=(table["grad_norm"] - first["grad_norm"]).abs() / first["grad_norm"],
        same_rollout=table["rollout_hash"] == first["rollout_hash"],
    )


def bench_step(settings: GRPOSettings, variants: dict = PRECISION, log=print) -> pd.DataFrame:
    """One step of ``settings`` per variant: a row each with the seconds per phase, the step's
    total, its ratio to the first variant's, the loss and the gradient norm and their
    differences from the first variant's. ``log`` gets each variant's row as it finishes."""
    rows = []
    for name, overrides in variants.items():
        s = replace(settings, steps=1, **overrides).check()
        with tempfile.TemporaryDirectory() as out:
            run = RunDir(out)
            run.claim(s.config())
            with quiet_trl():
                trainer = build_trainer(s, run, progress=False)
                trainer.train()
            step_log = next(c for c in trainer.callback_handler.callbacks if hasattr(c, "checkpoint_seconds"))
            logged = run.log().iloc[0]
            played = rollout_hash(run)
        rest = logged["seconds"] - logged["rollout_seconds"] - logged["forward_seconds"] - logged["kl_seconds"]
        rows.append(
            {
                "variant": name,
                "rollout": logged["rollout_seconds"],
                "forward": logged["forward_seconds"],
                "kl": logged["kl_seconds"],
                "backward_and_optimiser": rest,
                "checkpoint": step_log.checkpoint_seconds[0],
                "loss": logged["loss"],
                "grad_norm": logged["grad_norm"],
                "rollout_hash": played,
            }
        )
        log(
            f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in rows[-1].items() if k not in ("variant", "rollout_hash"))
        )
        del trainer
    table = pd.DataFrame(rows)
    table["step"] = table[list(PHASES)].sum(axis=1)
    table["run_step"] = table["step"] - table["kl"] * (1 - 1 / settings.kl_every)  # a run's mean step
    table["training_side"] = table["step"] - table["rollout"]
    table["speedup"] = table["step"].iloc[0] / table["step"]
    table["training_side_speedup"] = table["training_side"].iloc[0] / table["training_side"]
    return differences(table)


def report(settings: GRPOSettings, table: pd.DataFrame) -> str:
    s = settings
    lines = [
        f"GRPO step, {s.model}: {s.shape}, {s.rows_per_pass} rows per pass, max_new_tokens {s.max_new_tokens}, "
        f"measure_kl {s.measure_kl} (every {s.kl_every} steps); load {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    ]
    for r in table.itertuples():
        lines.append(
            f"  {r.variant:32s} {r.step:7.1f} s  x{r.speedup:.2f} (training side {r.training_side:6.1f} s, "
            f"x{r.training_side_speedup:.2f}; a {s.steps}-step run's mean step {r.run_step:.1f} s, "
            f"{s.steps * r.run_step / 60:.0f} min): rollout {r.rollout:.1f}, forward {r.forward:.1f}, "
            f"kl {r.kl:.1f}, backward and optimiser {r.backward_and_optimiser:.1f}, checkpoint "
            f"{r.checkpoint:.1f}; loss {r.loss:.6g} (difference {r.loss_difference:.2g}), grad norm "
            f"{r.grad_norm:.6g} (relative difference {r.grad_norm_relative_difference:.2g}), "
            f"{'the same rollout' if r.same_rollout else 'A DIFFERENT ROLLOUT'}"
        )
    return "\n".join(lines)


RLFT_VARIANTS = {
    "precision": PRECISION,
    "paths": {
        "every row whole": {"shared_prefix": False, "precision": "float32"},
        "shared prefix": {"shared_prefix": True, "precision": "float32"},
    },
    # a minibatch's decisions are drawn at random, so one pass pads every row to the longest; the
    # recipe's passes (micro_batch) take its rows sorted by length: the same gradient
    "passes": {
        "a pass per minibatch": lambda s: {"micro_batch": s.minibatch, "precision": "float32"},
        "the recipe's passes": lambda s: {"precision": "float32"},
    },
    # PPO's old log-probabilities of the decisions after the first minibatch: the rollout's own
    # (recorded per token as it sampled) against a pass without gradients, or, in a game with a
    # value head, that head's pass (which scores every decision anyway): the same numbers
    "old": {
        "not the rollout's": {"rollout_old_logprobs": False, "precision": "float32"},
        "the rollout's": {"rollout_old_logprobs": True, "precision": "float32"},
    },
}
RLFT_PHASES = ("rollout", "advantages", "reference", "forward_backward", "rest")
PEAK_PHASES = ("rollout", "reference", "forward_backward")  # the phases whose peak memory an update logs


def bench_update(settings, variants: dict = PRECISION, log=print) -> pd.DataFrame:
    """One RLFT update of ``settings`` per variant (name -> the settings it changes, or a function of
    ``settings`` that gives them): the seconds per phase, the update's total and its ratio to the
    first variant's, the loss and the gradient norm and their differences from the first
    variant's, the peak memory of the process so far."""
    from paperlib.training.rlft.loop import train

    rows = []
    for name, overrides in variants.items():
        changes = overrides(settings) if callable(overrides) else overrides
        s = replace(settings, updates=1, **changes).check()
        with tempfile.TemporaryDirectory() as out:
            logged = train(s, out, progress=False).iloc[0]
            played = rollout_hash(RunDir(out))
        rest = logged["seconds"] - sum(logged[f"{phase}_seconds"] for phase in RLFT_PHASES[:-1])
        rows.append(
            {
                "variant": name,
                "rollout": logged["rollout_seconds"],
                "advantages": logged["advantages_seconds"],
                "reference": logged["reference_seconds"],
                "forward_backward": logged["forward_backward_seconds"],
                "rest": rest,
                "loss": logged["loss"],
                "grad_norm": logged["grad_norm"],
                "decisions": logged["decisions"],
                "completion_tokens": logged["completion_tokens"],
                "old_logprobs_from": logged.get("old_logprobs_from", "a pass"),
                "peak_rss_gb": logged["peak_rss_gb"],
                **{f"{k}_peak_gb": logged.get(f"{k}_peak_gb", math.nan) for k in PEAK_PHASES},
                "rollout_hash": played,
            }
        )
        shown = {k: v for k, v in rows[-1].items() if k not in ("variant", "rollout_hash")}
        log(f"{name}: " + ", ".join(f"{k} {v}" if isinstance(v, str) else f"{k} {v:.4g}" for k, v in shown.items()))
    table = pd.DataFrame(rows)
    table["update"] = table[list(RLFT_PHASES)].sum(axis=1)
    table["speedup"] = table["update"].iloc[0] / table["update"]
    return differences(table)


def report_update(settings, table: pd.DataFrame) -> str:
    s = settings
    lines = [
        f"RLFT update, {s.model}: {s.shape}, max_new_tokens {s.max_new_tokens}, "
        f"{s.micro_batch or 'all'} decisions per pass; "
        f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    ]
    for r in table.itertuples():
        lines.append(
            f"  {r.variant:18s} {r.update:7.1f} s  x{r.speedup:.2f}: rollout {r.rollout:.1f}, advantages "
            f"{r.advantages:.1f}, reference "
            f"{r.reference:.1f}, forward and backward {r.forward_backward:.1f}, rest {r.rest:.1f}; loss "
            f"{r.loss:.6g} (difference {r.loss_difference:.2g}), grad norm {r.grad_norm:.6g} (relative "
            f"difference {r.grad_norm_relative_difference:.2g}), peak memory so far {r.peak_rss_gb:.1f} GB "
            f"(this update's: rollout {r.rollout_peak_gb:.1f}, reference {r.reference_peak_gb:.1f}, forward and "
            f"backward {r.forward_backward_peak_gb:.1f}), old log-probabilities from {r.old_logprobs_from}, "
            f"{'the same rollout' if r.same_rollout else 'A DIFFERENT ROLLOUT'}"
        )
    return "\n".join(lines)
