"""Run by tests/test_rlft_distributed.py under torchrun: ``rlft_replay.py GAME OUT [BATCH]`` trains
one update of GAME's (``rlft`` or ``rlft-tictactoe``) smoke recipe in OUT with the real loop
(``paperlib.training.rlft.loop.train``) and saves the gradient the optimiser stepped with (summed over processes)
in OUT/gradient.pt. With BATCH (a run this script made), the update trains on the batch that
run played at its update 1 (its saved rollouts) instead of a fresh rollout: each process replays
its block of those episodes, so the processes together train on exactly that batch."""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields

import pandas as pd
import torch

from paperlib.bandits import training as bandits
from paperlib.tictactoe import training as tictactoe
from paperlib.training.checkpoints import RunDir
from paperlib.training.distributed import Processes
from paperlib.training.rlft.loop import train


def replayed(share, batch: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """This process's block (``share``) of the episodes of update 1 in the run ``batch``, numbered from 0."""
    rollouts = RunDir(batch).path / "rollouts"
    episodes, steps = (pd.read_parquet(rollouts / kind / "step-00001.parquet") for kind in ("episodes", "steps"))
    mine = share(list(range(len(episodes))))
    return tuple(
        frame[frame["episode"].isin(mine)].assign(episode=lambda f: f["episode"] - mine[0]).reset_index(drop=True)
        for frame in (episodes, steps)
    )


@dataclass(frozen=True)
class ReplayedBandits(bandits.BanditSettings):
    batch: str = ""

    def rollout(self, backend, update, share=list):
        return replayed(share, self.batch) if self.batch else super().rollout(backend, update, share)


@dataclass(frozen=True)
class ReplayedTicTacToe(tictactoe.TicTacToeSettings):
    batch: str = ""

    def rollout(self, backend, update, share=list):
        return replayed(share, self.batch) if self.batch else super().rollout(backend, update, share)


GAMES = {"rlft": (ReplayedBandits, bandits.recipe), "rlft-tictactoe": (ReplayedTicTacToe, tictactoe.recipe)}


def saving_gradients(out: str):
    """Make :meth:`Processes.sum_gradients` save the summed gradients (main process) in ``out``."""
    summed = Processes.sum_gradients

    def sum_and_save(self, params):
        summed(self, params)
        if self.main:
            torch.save([None if p.grad is None else p.grad.clone() for p in params], f"{out}/gradient.pt")

    Processes.sum_gradients = sum_and_save


if __name__ == "__main__":
    game, out, batch = (sys.argv[1:] + [""])[:3]
    saving_gradients(out)
    kind, recipe = GAMES[game]
    preset = recipe("smoke")
    # float32: the processes' sums are compared to float32's rounding (bfloat16 has its own test)
    settings = kind(
        **{f.name: getattr(preset, f.name) for f in fields(preset)}
        | {"updates": 1, "batch": batch, "precision": "float32"}
    )
    train(settings, out, progress=False)
