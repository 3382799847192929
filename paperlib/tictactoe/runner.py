"""The tic-tac-toe runner: G games against one opponent, one batched agent call per turn.

Every turn the agent gets the observations of all games still being played at once
(``agents.Agent``; an agent's optional ``columns`` dict, read after ``reset``, goes into
its game rows). Where its move is -1 (no move in its output) or not legal (an occupied
cell), the runner plays a uniformly random legal move instead, drawn from the game's
own fallback stream, and flags the step invalid; then the opponent replies if the game
goes on. The agent moves first, so it makes at most five moves.

The result is a pair of pandas frames, ready for ``paperlib.data.write_parquet`` or
``RolloutStore.append``:

- game rows: labels, agent, model, cot, opponent, legal_in_prompt, the agent's columns,
  episode, seed, return (+1 / 0 / -1), outcome (win / draw / loss), moves (the agent's),
  invalid_moves;
- step rows, one per agent move: episode, seed, seat (0: the agent), turn (1..5),
  board (nine digits before the move), proposed (the agent's cell, -1 for none), action
  (the cell played), valid, opponent_action (its reply, -1 where the move ended the game),
  board_after (after the reply), reward (the return on the game's last step, else 0),
  raw_completion, and the agent's extra columns.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from paperlib.decisions import Decisions
from paperlib.tictactoe.agents import Agent
from paperlib.tictactoe.game import (
    AGENT,
    CELLS,
    FALLBACK_STREAM,
    OPPONENT_STREAM,
    OUTCOMES,
    Observation,
    agent_return,
    board_digits,
    game_seeds,
    generator,
    legal_moves,
    new_state,
)
from paperlib.tictactoe.opponents import ScriptedPlayer


def run_games(
    agent: Agent,
    opponent: str,
    games: int,
    seed: int = 0,
    legal_in_prompt: bool = True,
    labels: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play ``games`` games (seeds S, S+1, ...) of ``agent`` against the scripted ``opponent``.

    Returns (game rows, step rows); ``labels`` (profile, ...) go into every game row.
    """
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    player = ScriptedPlayer(opponent, OPPONENT_STREAM)
    seeds = game_seeds(seed, games)
    states = [new_state() for _ in seeds]
    fallback = [generator(FALLBACK_STREAM, s) for s in seeds]
    agent.reset(seeds)
    player.reset(seeds)
    steps: list[dict] = []
    for turn in itertools.count(1):
        live = [g for g, state in enumerate(states) if not state.is_terminal()]
        if not live:
            break
        observations = [
            Observation(g, seeds[g], turn, board_digits(states[g]), legal_moves(states[g]), legal_in_prompt)
            for g in live
        ]
        decisions = agent.act(observations)
        if not isinstance(decisions, Decisions):
            decisions = Decisions(actions=decisions)
        proposed = np.asarray(decisions.actions, dtype=np.int64)
        if proposed.shape != (len(live),) or proposed.min() < -1 or proposed.max() >= CELLS:
            raise ValueError(f"{agent.name} returned {proposed!r}; expected {len(live)} cells in 0..8 or -1")
        for j, obs in enumerate(observations):
            state = states[obs.episode]
            valid = int(proposed[j]) in obs.legal
            action = int(proposed[j]) if valid else int(fallback[obs.episode].choice(obs.legal))
            state.apply_action(action)
            reply = -1
            if not state.is_terminal():
                reply = player.move(obs.episode, state)
                state.apply_action(reply)
            steps.append(
                {
                    "episode": obs.episode,
                    "seed": obs.seed,
                    "seat": AGENT,
                    "turn": turn,
                    "board": obs.board,
                    "proposed": int(proposed[j]),
                    "action": action,
                    "valid": valid,
                    "opponent_action": reply,
                    "board_after": board_digits(state),
                    "reward": agent_return(state) if state.is_terminal() else 0.0,
                    "raw_completion": "" if decisions.texts is None else decisions.texts[j],
                    **{key: values[j] for key, values in decisions.extra.items()},
                }
            )
    step_frame = pd.DataFrame(steps).sort_values(["episode", "turn"], ignore_index=True)
    returns = [agent_return(state) for state in states]
    moves = step_frame.groupby("episode").size().to_numpy()
    valid_moves = step_frame.groupby("episode")["valid"].sum().to_numpy()
    game_frame = pd.DataFrame(
        {
            **(labels or {}),
            "agent": agent.name,
            "model": agent.model,
            "cot": agent.cot,
            "opponent": opponent,
            "legal_in_prompt": legal_in_prompt,
            **getattr(agent, "columns", {}),
            "episode": np.arange(games),
            "seed": seeds,
            "return": returns,
            "outcome": [OUTCOMES[r] for r in returns],
            "moves": moves,
            "invalid_moves": moves - valid_moves,
        }
    )
    return game_frame, step_frame
