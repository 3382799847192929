"""Paper B's tic-tac-toe prompt: task instructions, output instructions, the board, the question.

The paper's structure, shared with its bandit prompts: task instructions, output
instructions, the observation, then "What do you predict next?". The observation is
the board as nine digits (0 empty, 1 you, 2 the opponent) and, by default, the legal
actions (the paper's ablation drops them: ``legal_in_prompt``). With CoT the model is
told to think briefly and answer ``ACTION=X``, without CoT to output only ``ACTION=X``.
Every sentence below is our wording **[ours]**, and so is showing only the current
board rather than the moves that led to it: the paper prints neither.

A prompt is named ``tictactoe-v1/<style>/<legal|no_legal>`` (``prompt_name``); change
the wording only under a new ``VERSION`` so old rollouts stay attributable.
"""

from __future__ import annotations

from paperlib.tictactoe.game import Observation

VERSION = "tictactoe-v1"
STYLES = ("cot", "no_cot")
# Generation budgets from the paper (its experimental setup): 256 tokens with CoT, 16 without.
MAX_NEW_TOKENS = {"cot": 256, "no_cot": 16}
ACTION_PREFIX = "ACTION="
QUESTION = "What do you predict next?"

TASK = (
    "You are playing tic-tac-toe on a 3x3 board as player 1; your opponent is player 2. The board "
    "is shown as nine digits, one per cell, row by row from the top left: cells 0, 1, 2 are the "
    "top row, 3, 4, 5 the middle row and 6, 7, 8 the bottom row. A 0 is an empty cell, a 1 is your "
    "mark and a 2 is your opponent's. You move first, then the players take turns, each putting "
    "a mark in an empty cell. Whoever first has three marks in a row, a column or a diagonal wins; "
    "if the board fills up first, the game is a draw. You get a reward of +1 for a win, 0 for a "
    "draw and -1 for a loss. Your goal is to maximize your reward."
)
CHOICES = "where X is the number (0-8) of an empty cell"


def _check_style(style: str) -> None:
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(STYLES)}")


def prompt_name(style: str, legal_in_prompt: bool = True) -> str:
    _check_style(style)
    return f"{VERSION}/{style}/{'legal' if legal_in_prompt else 'no_legal'}"


def output_instructions(style: str) -> str:
    _check_style(style)
    if style == "no_cot":
        return f"Output only ACTION=X, {CHOICES}. Do not write anything else."
    return f"Think briefly about your next move. Then give your answer on the last line as ACTION=X, {CHOICES}."


def observation_text(obs: Observation) -> str:
    """The board, and the legal actions where the prompt lists them."""
    lines = [f"Current board: {obs.board}"]
    if obs.legal_in_prompt:
        lines.append(f"Legal actions: {', '.join(map(str, obs.legal))}")
    return "\n".join(lines)


def build_prompt(obs: Observation, style: str = "cot") -> str:
    """The user message for the agent's move in one game."""
    return "\n\n".join([TASK, output_instructions(style), observation_text(obs), QUESTION])
