"""Scripted tic-tac-toe players: paper B's three opponents, also baselines in the agent's seat.

- ``random``: uniform over the legal moves.
- ``mcts``: open_spiel's ``MCTSBot`` (UCT search with MCTS-Solver) over a
  ``RandomRolloutEvaluator``. The paper names none of its opponent's search settings.
  Ours **[ours]**: ``UCT_C`` = 2, ``N_ROLLOUTS`` = 1 and ``SOLVE`` = True are the
  defaults of open_spiel's own MCTS example (``open_spiel/python/examples/mcts.py``,
  whose default game is tic-tac-toe); ``MAX_SIMULATIONS`` = 2000 is twice its 1000,
  because at 1000 the reply to the agent's first move was a losing one (against exact
  minimax) in 8 of 360 searches (9 first moves x 40 seeds), and at 2000 in none.
  The paper's untrained model loses to its MCTS almost every game and its RL-tuned
  one only draws, so the opponent must leave no such opening to learn. It never
  loses to random play and always blocks a line about to be completed (both tested).
- ``noisy_mcts``: the paper's MCTS that plays randomly half the time: with probability
  ``NOISY_RANDOM`` = 0.5 (the paper's) a uniformly random legal move, otherwise ``mcts``.

Every game has its own coin-and-choice generator and its own search random state,
both from (the player's stream, the game's seed), so a game's moves do not depend on
the rest of the batch and a game reruns alone (``game`` module doc).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyspiel
from open_spiel.python.algorithms.mcts import MCTSBot, RandomRolloutEvaluator

from paperlib.tictactoe.game import GAME, seed_sequence

PLAYERS = ("random", "mcts", "noisy_mcts")
UCT_C = 2.0  # [ours] open_spiel's example default
MAX_SIMULATIONS = 2000  # [ours] twice open_spiel's example default (module doc)
N_ROLLOUTS = 1  # [ours] open_spiel's example default
SOLVE = True  # [ours] open_spiel's example default: back up proven wins and losses
NOISY_RANDOM = 0.5  # the paper's: noisy MCTS plays a random move half the time


def check_player(name: str) -> None:
    if name not in PLAYERS:
        raise ValueError(f"unknown player {name!r}; expected one of {', '.join(PLAYERS)}")


def mcts_bot(seeds: np.random.SeedSequence) -> MCTSBot:
    """The MCTS player of one game, its search and rollouts drawing from ``seeds``."""
    random_state = np.random.RandomState(np.random.MT19937(seeds))
    evaluator = RandomRolloutEvaluator(N_ROLLOUTS, random_state)
    return MCTSBot(GAME, UCT_C, MAX_SIMULATIONS, evaluator, solve=SOLVE, random_state=random_state)


class ScriptedPlayer:
    """One of ``PLAYERS`` in a batch of games, drawing from random stream ``stream``."""

    def __init__(self, name: str, stream: int):
        check_player(name)
        self.name, self.stream = name, stream

    def reset(self, seeds: Sequence[int]) -> None:
        """Start games with these seeds; game g is ``episode`` g in :meth:`move`."""
        self._generators, self._bots = [], []
        for seed in seeds:
            coin, search = seed_sequence(self.stream, seed).spawn(2)
            self._generators.append(np.random.default_rng(coin))
            self._bots.append(None if self.name == "random" else mcts_bot(search))

    def move(self, episode: int, state: pyspiel.State) -> int:
        """This player's move in game ``episode``, whose ``state`` awaits it."""
        rng = self._generators[episode]
        if self.name == "random" or (self.name == "noisy_mcts" and rng.random() < NOISY_RANDOM):
            return int(rng.choice(state.legal_actions()))
        return int(self._bots[episode].step(state))
