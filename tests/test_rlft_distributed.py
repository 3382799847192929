"""The RLFT loop on several processes (paperlib/training/distributed.py): the process helpers
with one process, ``python -m paperlib``, and, under torchrun with two CPU processes over gloo,
the update of a batch equal to the one a single process makes of the same batch."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paperlib.training.distributed import Processes

TESTS = Path(__file__).parent
ROOT = TESTS.parent

# [ours] how close two processes' update must be to one process's, on the same batch. The sums
# differ only in the order of float32 additions (two micro-batches and an all-reduce against one
# pass). Measured on the smoke recipes (bandits / tic-tac-toe): the loss's statistics and the
# gradient norm agree to 5e-7 relative or better, the largest gradient difference is 6e-6 / 2e-8
# of the largest entry. Adam's first step moves each weight by about lr * g / (|g| + 1e-8), so a
# weight whose gradient is near 1e-8 moves by a different fraction of lr (66 of 921,600 weights
# by more than 1e-3 lr): the adapters are compared as a whole, the L2 norm of their difference
# against that of the update (measured 3.9e-4 / 1.1e-5). Adam's step hardly depends on the
# gradient's scale, which the gradient and its norm check.
# A statistic that is one term of the loss carries the loss's own float32 rounding: on tic-tac-toe
# (a loss of 7.9, most of it the value loss) the policy loss of -0.079 differed by 1.0e-6 between
# one and two processes (the loss by 1.3e-7 of itself; the clip fraction and the KL agreed), once
# the first minibatch's own pass gave its log-probabilities before the step.
RTOL = 1e-5  # the loss, its statistics and the gradient norm, relative
ATOL = 1e-6  # ... absolute, for statistics near 0 (a policy loss of 1e-8 against 0)
LOSS_ROUNDING = 1e-6  # ... absolute, relative to the loss: a term's share of the loss's rounding
GRADIENT_TOL = 1e-4  # largest difference of a gradient entry, relative to the largest entry
ADAPTER_TOL = 5e-3  # L2 norm of the adapters' difference, relative to the update's
GAP_TOL = 1e-4  # the recomputed log-probabilities against the rollout's, in both runs (on-policy)


def test_one_process_is_the_identity():
    processes = Processes()
    assert (processes.rank, processes.world_size, processes.main) == (0, 1, True)
    items = [5, 3, 9]
    assert processes.share(items) is items and processes.gather(items) is items
    assert processes.micro_batches([4, 2, 7, 1, 0], 0) == [[4, 2, 7, 1, 0]]
    assert processes.micro_batches([4, 2, 7, 1, 0], 2) == [[4, 2], [7, 1], [0]]
    assert processes.mine([[1], [2], [3]]) == [0, 1, 2]
    frames = (pd.DataFrame({"episode": [0, 1]}), pd.DataFrame({"episode": [0, 0, 1]}))
    assert processes.gather_rollout(*frames) == frames
    assert processes.from_main(lambda: 7) == 7 and processes.agree("h", "the hash") == "h"
    processes.check(1)
    processes.sum_gradients([])


def test_the_command_runs_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "paperlib", "train", "rlft", "--help"], capture_output=True, text=True, env=_env()
    )
    assert done.returncode == 0 and "--profile" in done.stdout


def _env() -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}  # one thread each, in both runs


def _torchrun(processes: int, *args) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
            str(TESTS / "rlft_replay.py"),
            *map(str, args),
        ],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("game", ["rlft", "rlft-tictactoe"])
def test_two_processes_make_one_processs_update_of_the_same_batch(tmp_path, game):
    import torch
    from safetensors.torch import load_file

    one, two = tmp_path / "one", tmp_path / "two"
    _torchrun(1, game, one)  # plays update 1 of the smoke recipe and trains on it
    _torchrun(2, game, two, one)  # each process replays its block of that batch
    logs = {run: pd.read_parquet(run / "training_log.parquet").iloc[0] for run in (one, two)}
    assert (logs[one]["world_size"], logs[two]["world_size"]) == (1, 2)
    assert logs[one]["rollout_adapter_hash"] == logs[two]["rollout_adapter_hash"]  # the same initial adapter
    for kind in ("episodes", "steps"):  # the main process wrote the whole batch, numbered as one process does
        written = (pd.read_parquet(run / "rollouts" / kind / "step-00001.parquet") for run in (one, two))
        pd.testing.assert_frame_equal(*written)
    timing = [c for c in logs[one].index if c.endswith(("seconds", "_gb"))]
    for column in logs[one].index.difference(timing + ["world_size", "adapter_hash"]):
        a, b = logs[one][column], logs[two][column]
        if isinstance(a, str) or column in ("decisions", "completion_tokens"):
            assert a == b, column
        elif column == "rollout_logprob_gap":  # float32 noise of the recomputation, which differs per micro-batch
            assert max(a, b) < GAP_TOL
        elif not (math.isnan(a) and math.isnan(b)):
            rounding = max(ATOL, LOSS_ROUNDING * abs(logs[one]["loss"]))
            assert b == pytest.approx(a, rel=RTOL, abs=rounding), column
    gradients = [torch.load(run / "gradient.pt") for run in (one, two)]
    scale = max(float(g.abs().max()) for g in gradients[0] if g is not None)
    for a, b in zip(*gradients, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert float((a - b).abs().max()) <= GRADIENT_TOL * scale
    adapters = [load_file(run / "checkpoint-1" / "adapter_model.safetensors") for run in (one, two)]
    difference = math.sqrt(sum(float((adapters[0][n] - adapters[1][n]).pow(2).sum()) for n in adapters[0]))
    update = math.sqrt(sum(float(t.pow(2).sum()) for n, t in adapters[0].items() if "lora_B" in n))  # B starts at 0
    assert difference <= ADAPTER_TOL * update
    if game == "rlft-tictactoe":
        heads = [torch.load(run / "checkpoint-1" / "value_head.pt", weights_only=True) for run in (one, two)]
        for name, weight in heads[0].items():
            np.testing.assert_allclose(heads[1][name].numpy(), weight.numpy(), rtol=RTOL, atol=ATOL)
