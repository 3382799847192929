"""The RLFT loop on several processes, through accelerate: ``torchrun --nproc_per_node K -m
paperlib train rlft ...`` on CPUs, ``accelerate launch --num_processes K -m paperlib train rlft
...`` on one node with K GPUs. :class:`Processes` is everything the loop
(:mod:`paperlib.training.rlft.loop`) asks about the other processes; with one process every
method is the identity, so a one-process run computes, writes and logs what it did before
(its log gains ``world_size`` = 1).

With K processes, one update goes:

1. Rollout. The update's episodes (the bandits' instances, tic-tac-toe's games) are split in
   contiguous blocks, in order (:meth:`Processes.share`, accelerate's
   ``split_between_processes``: the first ``n % K`` processes play one more); process r plays
   its block, and the blocks together are exactly the episodes one process plays. Each free
   call's sampling seed mixes in the episode seeds of the call (``paperlib.llm.core``), so the
   blocks draw independent samples; a completion is not the one a single process would have
   drawn (its batch draws every row from one generator): a K-process run plays the same
   episodes with other samples, and is not the same run as a one-process one.
2. Gather (:meth:`Processes.gather_rollout`). Every process receives every block, its episodes
   numbered as one process numbers them, and computes the advantages on the whole batch as
   one process does (the bandits' per-step baseline and standardisation, tic-tac-toe's GAE).
3. Micro-batches. The value head's pass and the update cut the whole batch into the
   micro-batches one process would (:meth:`Processes.micro_batches`: at most ``ceil(rows / K)``
   rows each, so that every process has one) and process r computes every K-th
   (:meth:`Processes.mine`). Values are summed across processes (each row is one process's);
   each micro-batch's loss is divided by the whole batch's tokens and rows, as in one process,
   and after its micro-batches each process's gradients are summed with the others' in one
   all-reduce (:meth:`Processes.sum_gradients`): the gradient of the same batch that one
   process computes, up to the order of float additions. Every process then clips and steps
   the same gradient with its own copy of the optimiser, so the adapters stay equal (checked
   after every update, :meth:`Processes.agree`).
4. Writes. The main process claims and rewinds the run directory, writes the rollouts, the
   log row and the checkpoint; the others only read (to resume) and wait for it at the end.

accelerate builds the process group (``Accelerator(cpu=True)`` without CUDA: measured with
accelerate 1.16, two torchrun processes form ``MULTI_CPU`` over gloo only then; without it
each process thinks it is alone), gives each process its device, prepares the optimiser, and
does the splitting and the collectives. The model is loaded on that device but not wrapped in
DistributedDataParallel: the shared-prefix scoring (``paperlib.training.shared_prefix``) runs
two passes into the backbone per micro-batch, which DDP's wrapper does not see, the processes
run different numbers of micro-batches, and the same module generates the rollouts. What is
summed is a LoRA adapter's gradient (and a value head's): one all-reduce per optimiser step.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


class Processes:
    """The processes of one RLFT run: this one's ``rank``, their number (``world_size``),
    whether this one is ``main``, its ``device`` and the collectives the loop needs."""

    def __init__(self):
        import torch
        from accelerate import Accelerator

        self.accelerator = Accelerator(cpu=not torch.cuda.is_available())
        self.rank, self.world_size = self.accelerator.process_index, self.accelerator.num_processes
        self.main = self.accelerator.is_main_process
        device = self.accelerator.device
        self.device = "cpu" if device.type == "cpu" else str(device)

    def check(self, episodes: int) -> None:
        """Refuse, in one line, an update of ``episodes`` episodes that leaves a process none."""
        if episodes < self.world_size:
            raise ValueError(
                f"an update plays {episodes} episodes, fewer than the {self.world_size} processes: "
                "each process needs at least one"
            )

    def share(self, items: list) -> list:
        """This process's contiguous block of ``items`` (all of them with one process)."""
        if self.world_size == 1:
            return items
        with self.accelerator.split_between_processes(list(items)) as mine:
            return mine

    def from_main(self, compute):
        """``compute()`` on the main process, its result on every process (which wait for it)."""
        if self.world_size == 1:
            return compute()
        from accelerate.utils import broadcast_object_list

        result = [compute() if self.main else None]
        broadcast_object_list(result)
        return result[0]

    def gather_rollout(self, episodes: pd.DataFrame, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Every process's (episodes, steps), in process order, each block's episodes (numbered
        0, 1, ... in its process) renumbered after the blocks before it: the rows one process
        playing every block would have, on every process."""
        if self.world_size == 1:
            return episodes, steps
        from accelerate.utils import gather_object

        all_episodes, all_steps, offset = [], [], 0
        for block_episodes, block_steps in gather_object([(episodes, steps)]):
            all_episodes.append(block_episodes.assign(episode=block_episodes["episode"] + offset))
            all_steps.append(block_steps.assign(episode=block_steps["episode"] + offset))
            offset += len(block_episodes)
        return pd.concat(all_episodes, ignore_index=True), pd.concat(all_steps, ignore_index=True)

    def micro_batches(self, rows: list[int], micro_batch: int) -> list[list[int]]:
        """``rows`` (in the order given) cut into micro-batches of ``micro_batch`` rows (0: all in
        one), with several processes at most ``ceil(len(rows) / world_size)`` each."""
        size = micro_batch or len(rows) or 1
        if self.world_size > 1:
            size = min(size, max(1, math.ceil(len(rows) / self.world_size)))
        return [rows[i : i + size] for i in range(0, len(rows), size)]

    def mine(self, batches: list) -> list[int]:
        """The indices of the micro-batches this process computes: every ``world_size``-th."""
        return list(range(self.rank, len(batches), self.world_size))

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        """The sum over processes of ``values`` (float64), where each row is set by one process."""
        if self.world_size == 1:
            return values
        import torch

        summed = self.accelerator.reduce(
            torch.as_tensor(values, dtype=torch.float64, device=self.accelerator.device), reduction="sum"
        )
        return summed.cpu().numpy()

    def sum_gradients(self, params: list) -> None:
        """Replace each parameter's gradient by its sum over processes, in one all-reduce per
        dtype; a process that computed none adds zeros. A parameter that no process gave a
        gradient keeps none (as in one process, the optimiser then skips it)."""
        if self.world_size == 1:
            return
        import torch

        device = self.accelerator.device
        held = torch.tensor([float(p.grad is not None) for p in params], device=device)
        held = self.accelerator.reduce(held, reduction="sum")
        for dtype in dict.fromkeys(p.dtype for p in params):
            group = [p for p, h in zip(params, held.tolist()) if p.dtype == dtype and h]
            if not group:
                continue
            flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in group])
            flat = self.accelerator.reduce(flat, reduction="sum")
            for p, part in zip(group, flat.split([p.numel() for p in group])):
                p.grad = part.view_as(p).clone()

    def gather(self, items: list) -> list:
        """Every process's ``items`` (picklable), concatenated in process order."""
        if self.world_size == 1:
            return items
        from accelerate.utils import gather_object

        return gather_object(list(items))

    def sum_stats(self, stats: dict[str, float]) -> dict[str, float]:
        """Each statistic summed over processes (in process order); a process that computed no
        micro-batch has none."""
        if self.world_size == 1:
            return stats
        summed: dict[str, float] = {}
        for part in self.gather([stats]):
            for name, value in part.items():
                summed[name] = summed.get(name, 0.0) + value
        return summed

    def agree(self, value, what: str):
        """``value``, after checking that every process holds the same one (``what`` names it)."""
        values = self.gather([value])
        if any(v != values[0] for v in values):
            raise RuntimeError(f"the processes disagree on {what}: {values}")
        return value

    def wait(self) -> None:
        """Until every process gets here."""
        if self.world_size > 1:
            self.accelerator.wait_for_everyone()

    def release(self) -> None:
        """Drop the accelerator's references to the prepared optimiser (after training)."""
        self.accelerator.free_memory()


def is_main() -> bool:
    """Whether this is the main process (the one that prints a command's summary)."""
    return Processes().main
