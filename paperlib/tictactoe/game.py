"""Tic-tac-toe as paper B plays it: open_spiel's rules, the board as nine digits.

The rules (legal moves, the end of a game, returns) are open_spiel's ``tic_tac_toe``.
The paper's encoding (its tic-tac-toe environment): the board is nine digits, cells
0..8 row by row from the top left, 0 for an empty cell, 1 for the agent's mark and 2
for the opponent's; an action is a cell number 0..8; the agent moves first (open_spiel's
player 0) and gets +1 for a win, 0 for a draw and -1 for a loss (its open_spiel return).

``board_digits`` encodes a state; ``from_board`` rebuilds one from nine digits, by
replaying the marks in some order that reaches the position without ending the game
earlier (the rules, the legal moves and the returns depend on the position alone).

Seeds **[ours]**: game g of a run with base seed S has seed S + g, and every random
choice in a game (the opponent's, a scripted agent's, the move played for an invalid
one) comes from a generator of (its stream, the game's seed), so a game reruns alone
and the same game meets the same opponent whichever agent plays it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyspiel

GAME = pyspiel.load_game("tic_tac_toe")
CELLS = 9
AGENT, OPPONENT = 0, 1  # open_spiel players: the agent moves first
MARKS = {AGENT: "1", OPPONENT: "2"}  # an empty cell is "0"
OUTCOMES = {1.0: "win", 0.0: "draw", -1.0: "loss"}

# Random streams: the first word of every seed sequence, so no two purposes share draws.
AGENT_STREAM, OPPONENT_STREAM, FALLBACK_STREAM = 1, 2, 3


def seed_sequence(stream: int, seed: int) -> np.random.SeedSequence:
    """The seed sequence of one purpose (``*_STREAM``) in one game."""
    return np.random.SeedSequence([stream, seed])


def generator(stream: int, seed: int) -> np.random.Generator:
    return np.random.default_rng(seed_sequence(stream, seed))


def game_seeds(seed: int, games: int) -> list[int]:
    """Game g of a run with base seed S has seed S + g, so one game reruns alone."""
    return [seed + g for g in range(games)]


def new_state() -> pyspiel.State:
    return GAME.new_initial_state()


def board_digits(state: pyspiel.State) -> str:
    """The nine digits of a state's board: 0 empty, 1 the agent, 2 the opponent."""
    cells = ["0"] * CELLS
    for ply, cell in enumerate(state.history()):
        cells[cell] = MARKS[ply % 2]
    return "".join(cells)


def legal_moves(state: pyspiel.State) -> tuple[int, ...]:
    """The empty cells, or nothing once the game is over."""
    return tuple(state.legal_actions())


def from_board(board: str) -> pyspiel.State:
    """The open_spiel state of a nine-digit board (see the module doc)."""
    if not isinstance(board, str) or len(board) != CELLS or set(board) - {"0", "1", "2"}:
        raise ValueError(f"a board is nine digits 0, 1 or 2, got {board!r}")
    mine = frozenset(i for i, c in enumerate(board) if c == MARKS[AGENT])
    theirs = frozenset(i for i, c in enumerate(board) if c == MARKS[OPPONENT])
    if len(mine) - len(theirs) not in (0, 1):
        raise ValueError(f"board {board}: the agent moves first, so it has as many marks as the opponent or one more")
    state = _replay(new_state(), mine, theirs)
    if state is None:
        raise ValueError(f"board {board} cannot be reached: the game would have ended before its last mark")
    return state


def _replay(state, mine: frozenset, theirs: frozenset):
    """``state`` with the marks ``mine`` (agent) and ``theirs`` added in turn, never ending
    the game before the last one; None if no order does."""
    if not mine and not theirs:
        return state
    if state.is_terminal():
        return None
    agent_to_move = state.current_player() == AGENT
    for cell in mine if agent_to_move else theirs:
        child = state.child(cell)
        found = _replay(child, mine - {cell}, theirs) if agent_to_move else _replay(child, mine, theirs - {cell})
        if found is not None:
            return found
    return None


def agent_return(state: pyspiel.State) -> float:
    """The agent's reward for a finished game: +1 win, 0 draw, -1 loss."""
    if not state.is_terminal():
        raise ValueError(f"the game on board {board_digits(state)} is not over")
    return state.returns()[AGENT]


@dataclass(frozen=True)
class Observation:
    """What the agent sees before its move: enough to act and to write a prompt."""

    episode: int  # the game's index in its run
    seed: int  # the game's seed
    turn: int  # the agent's move number, 1..5
    board: str  # nine digits
    legal: tuple[int, ...]  # the empty cells
    legal_in_prompt: bool  # whether a prompt lists ``legal`` (the paper's default: yes)
