"""Which precision the trainers' forward and backward passes run in: a named setting
(``TrainerSettings.precision``) whose default, ``auto``, picks bfloat16 autocast where the
hardware multiplies bfloat16 natively and float32 elsewhere.

On a CPU, torch's bfloat16 matrix products are native where the CPU has AVX512-BF16 or
AMX (measured: SmolLM2 inference ≈ 1.5x faster with AVX512-BF16, ≈ 2x with AMX) and
emulated on AVX2-only CPUs, where a training step is far slower than in float32 (measured
with ``paperlib bench grpo --profile smoke``, SmolLM2-135M: the forward pass 5.4x, the
backward pass and optimiser 28x, the step 12x); on a GPU, where
``torch.cuda.is_bf16_supported()`` says so. Under autocast the weights, the LoRA
adapter and the optimiser's state stay float32 (autocast casts a product's inputs, not the
parameters), and the log-probabilities are taken from float32 logits. Rollouts are never
autocast: a greedy rollout is rebuilt exactly from its seeds.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from functools import cache
from pathlib import Path

PRECISIONS = ("auto", "float32", "bfloat16")
EMULATED = (
    "bfloat16 on a CPU without AVX512-BF16 or AMX is emulated: a training step takes about 12x "
    "float32's (precision = auto takes float32 here)"
)
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo's names for native bfloat16 products


@cache
def cpu_multiplies_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (Linux: its flags; elsewhere: no)."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return False
    flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "").split()
    return any(flag in flags for flag in CPU_BF16_FLAGS)


def resolve(precision: str, device: str) -> str:
    """``float32`` or ``bfloat16``: what ``precision`` (one of :data:`PRECISIONS`) means on ``device``;
    bfloat16 asked for on a CPU that emulates it is taken, with a warning."""
    chosen = _chosen(precision, device)
    if precision == "bfloat16" and device == "cpu" and not cpu_multiplies_bf16():
        warnings.warn(EMULATED, stacklevel=2)
    return chosen


def _chosen(precision: str, device: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if cpu_multiplies_bf16() else "float32"


def autocast(precision: str, device: str):
    """A context-manager factory for the training passes: bfloat16 autocast where ``precision``
    resolves to it on ``device``, else nothing."""
    if _chosen(precision, device) == "float32":
        return nullcontext
    import torch

    return lambda: torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16)


# bfloat16 against float32 on the same rollout, one step (tests/test_precision.py): bfloat16 keeps
# 8 bits of mantissa, so each product's inputs are rounded by up to 2^-9 (0.2%) [ours: measured
# below these on the smoke and cpu recipes, README "What training costs"]
LOSS_TOLERANCE = 0.01  # absolute, on losses of order 0.1-1
GRAD_NORM_TOLERANCE = 0.05  # relative
# the largest gap between a completion's log-probability when it was sampled (float32) and when the
# trainer scores it (``rollout_logprob_gap``, nats): float32's recomputation noise, or bfloat16's
# rounding (measured 0.10-0.18 on the smoke runs); a completion scored under another adapter or
# misaligned is off by nats
LOGPROB_GAP_TOLERANCE = {"float32": 1e-3, "bfloat16": 0.5}
