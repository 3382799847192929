"""The tic-tac-toe agent interface, batched over games, and the scripted agents.

An agent has ``name``, ``model`` and ``cot`` (recorded in each game row), and

- ``reset(seeds)``: called once before the first move with the games' seeds (game g
  of the batch has ``seeds[g]`` and ``episode`` g in its observations);
- ``act(observations) -> actions``: one cell per observation, for every game still
  being played (``game.Observation``: the board as nine digits, the legal moves,
  whether a prompt lists them), or a ``Decisions`` when the agent has more to say per
  game (what an LLM wrote, extra step columns). -1 means the agent's output held no
  move (``parsing.parse_action`` found none); the runner then plays a random legal move
  and flags the step invalid, as it does for a move to an occupied cell.

The scripted agents are the scripted players of ``opponents`` in the agent's seat,
drawing from the agent's random stream, so they never share draws with the opponent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from paperlib.decisions import Decisions
from paperlib.tictactoe.game import AGENT_STREAM, Observation, from_board
from paperlib.tictactoe.llm import LLM_AGENT, make_llm_agent
from paperlib.tictactoe.opponents import PLAYERS, ScriptedPlayer

AGENTS = (*PLAYERS, LLM_AGENT)


class Agent(Protocol):
    name: str
    model: str
    cot: bool

    def reset(self, seeds: Sequence[int]) -> None: ...

    def act(self, observations: Sequence[Observation]) -> np.ndarray | Decisions: ...


class ScriptedAgent:
    """A scripted player (``random``, ``mcts``, ``noisy_mcts``) in the agent's seat."""

    cot = False

    def __init__(self, name: str):
        self.name = name
        self.player = ScriptedPlayer(name, AGENT_STREAM)

    @property
    def model(self) -> str:
        return f"baseline:{self.name}"

    def reset(self, seeds: Sequence[int]) -> None:
        self.player.reset(seeds)

    def act(self, observations: Sequence[Observation]) -> np.ndarray:
        return np.array([self.player.move(o.episode, from_board(o.board)) for o in observations], dtype=np.int64)


def make_agent(name: str, model: str | None = None, **llm) -> Agent:
    """An agent by name; ``model`` and the keywords in ``llm`` (backend, cot, decision,
    temperature, max_new_tokens) are for the LLM agent (``llm.make_llm_agent``) only."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; expected one of {', '.join(AGENTS)}")
    if name == LLM_AGENT:
        return make_llm_agent(model, **llm)
    if model is not None or llm:
        raise ValueError(
            f"{'a model' if model is not None else ', '.join(llm)} is for the LLM agent; the scripted {name} takes none"
        )
    return ScriptedAgent(name)
