"""Tic-tac-toe: the board encoding, returns, the opponents, the text layer, the runner and its command.

Expected values come from rules written here from scratch (lines, threats, exact
minimax and exact random-play probabilities over every reachable position), not from
open_spiel or from the package.
"""

import math
from functools import cache

import numpy as np
import pandas as pd
import pytest

import paperlib.cli
from paperlib.decisions import Decisions
from paperlib.tictactoe import cli as tictactoe_cli
from paperlib.tictactoe.agents import ScriptedAgent, make_agent
from paperlib.tictactoe.game import (
    OPPONENT_STREAM,
    Observation,
    agent_return,
    board_digits,
    from_board,
    legal_moves,
    new_state,
)
from paperlib.tictactoe.opponents import PLAYERS, ScriptedPlayer
from paperlib.tictactoe.parsing import parse_action
from paperlib.tictactoe.prompts import build_prompt, observation_text, output_instructions, prompt_name
from paperlib.tictactoe.runner import run_games

# -- independent rules on nine-digit strings ------------------------------------------------

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def winner(board):
    for a, b, c in LINES:
        if board[a] != "0" and board[a] == board[b] == board[c]:
            return board[a]
    return None


def mover(board):
    return "1" if board.count("1") == board.count("2") else "2"


def play(board, cell, mark):
    return board[:cell] + mark + board[cell + 1 :]


def empties(board):
    return [c for c in range(9) if board[c] == "0"]


def threats(board, mark):
    """Empty cells that complete a line of ``mark``."""
    return [c for c in empties(board) if winner(play(board, c, mark)) == mark]


def over(board):
    return winner(board) is not None or "0" not in board


@cache
def value(board):
    """Exact value for the player to move: +1 a forced win, 0 a draw, -1 a forced loss."""
    if winner(board):
        return -1
    if "0" not in board:
        return 0
    return max(-value(play(board, c, mover(board))) for c in empties(board))


@cache
def random_play(board):
    """Exact (P(first player wins), P(draw), P(second player wins)) under uniform random moves."""
    if winner(board):
        return (1.0, 0.0, 0.0) if winner(board) == "1" else (0.0, 0.0, 1.0)
    if "0" not in board:
        return (0.0, 1.0, 0.0)
    children = [random_play(play(board, c, mover(board))) for c in empties(board)]
    return tuple(sum(p) / len(children) for p in zip(*children))


def reachable():
    seen, frontier = {"0" * 9}, ["0" * 9]
    while frontier:
        board = frontier.pop()
        if not over(board):
            for c in empties(board):
                child = play(board, c, mover(board))
                if child not in seen:
                    seen.add(child)
                    frontier.append(child)
    return sorted(seen)


def blocking_positions():
    """Live positions where the mover cannot win at once, the other side threatens exactly
    one cell, and blocking it does not lose by force: (board, the block)."""
    out = []
    for board in reachable():
        me = mover(board)
        them = "2" if me == "1" else "1"
        if over(board) or threats(board, me):
            continue
        cells = threats(board, them)
        if len(cells) == 1 and value(play(board, cells[0], me)) <= 0:
            out.append((board, cells[0]))
    return out


# -- the board encoding and returns ------------------------------------------------------------


def test_the_independent_rules_see_the_known_game():
    # 5478 legal positions, 958 of them finished: the textbook counts for tic-tac-toe
    positions = reachable()
    assert len(positions) == 5478 and sum(map(over, positions)) == 958
    assert value("0" * 9) == 0


def test_the_board_encoding_round_trips_against_open_spiel_on_random_positions():
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(300):
        state = new_state()
        for _ in range(rng.integers(0, 10)):
            if state.is_terminal():
                break
            state.apply_action(int(rng.choice(state.legal_actions())))
        digits = board_digits(state)
        assert digits == str(state).replace("\n", "").translate(str.maketrans(".xo", "012"))
        rebuilt = from_board(digits)
        assert str(rebuilt) == str(state) and rebuilt.is_terminal() == state.is_terminal()
        assert rebuilt.current_player() == state.current_player()
        assert legal_moves(rebuilt) == legal_moves(state) == (() if over(digits) else tuple(empties(digits)))
        if state.is_terminal():
            assert rebuilt.returns() == state.returns()
            checked += 1
    assert checked > 30


@pytest.mark.parametrize(
    "board, expected",
    [
        ("111220000", 1.0),  # a row, the agent's third mark
        ("120120100", 1.0),  # a column
        ("122010001", 1.0),  # a diagonal
        ("110222100", -1.0),  # the opponent's middle row
        ("112021200", -1.0),  # the opponent's anti-diagonal
        ("121122211", 0.0),  # a full board without a line
        ("121212211", 1.0),  # a full board, the agent's last mark completing a diagonal
    ],
)
def test_returns_are_from_the_agents_view(board, expected):
    assert {"1": 1.0, "2": -1.0, None: 0.0}[winner(board)] == expected
    state = from_board(board)
    assert state.is_terminal() and agent_return(state) == expected


def test_a_live_game_has_no_return_yet():
    with pytest.raises(ValueError, match="not over"):
        agent_return(from_board("100020000"))


@pytest.mark.parametrize(
    "board, message",
    [
        ("10002000", "nine digits"),
        ("100020003", "nine digits"),
        ("x00000000", "nine digits"),
        ("200000000", "as many marks as the opponent or one more"),
        ("110000000", "as many marks as the opponent or one more"),
        ("111222000", "cannot be reached"),  # both have a row
        ("111220020", "cannot be reached"),  # the opponent marked after the agent had won
    ],
)
def test_bad_boards_are_refused_with_one_line(board, message):
    with pytest.raises(ValueError, match=message) as error:
        from_board(board)
    assert "\n" not in str(error.value)


# -- the opponents ----------------------------------------------------------------------------


def test_mcts_never_loses_to_random_in_either_seat():
    games, _ = run_games(make_agent("mcts"), "random", 50, seed=100)
    assert (games["return"] >= 0).all() and (games["outcome"] != "loss").all()
    games, _ = run_games(make_agent("random"), "mcts", 50, seed=200)
    assert (games["return"] <= 0).all()


def test_mcts_always_blocks_an_immediate_loss():
    cases = blocking_positions()
    assert ("110020000", 2) in cases and ("210020100", 8) in cases  # two hand-checked ones
    rng = np.random.default_rng(5)
    sample = [cases[i] for i in rng.choice(len(cases), 40, replace=False)]
    for seed, (board, block) in enumerate([("110020000", 2), ("210020100", 8), *sample]):
        if mover(board) == "1":  # the agent's seat, through its observation
            agent = ScriptedAgent("mcts")
            agent.reset([seed])
            obs = Observation(0, seed, 1, board, tuple(empties(board)), True)
            move = int(agent.act([obs])[0])
        else:
            player = ScriptedPlayer("mcts", OPPONENT_STREAM)
            player.reset([seed])
            move = player.move(0, from_board(board))
        assert move == block, (board, move)


def test_mcts_never_answers_a_first_move_with_a_losing_reply():
    # games 0-2 answer each of the nine first moves in turn; with open_spiel's example
    # default of 1000 simulations, game 1 answers a corner opening with a losing corner
    firsts = ["0" * c + "1" + "0" * (8 - c) for c in range(9)]
    player = ScriptedPlayer("mcts", OPPONENT_STREAM)
    player.reset([0, 1, 2])
    for g in range(3):
        for board in firsts:
            reply = player.move(g, from_board(board))
            assert board[reply] == "0" and value(play(board, reply, "2")) <= 0, (g, board, reply)


def test_noisy_mcts_plays_randomly_half_the_time():
    # six legal moves, one block: MCTS always blocks, a random move blocks 1 time in 6,
    # so noisy MCTS blocks with probability 0.5 + 0.5 / 6
    state = from_board("110020000")
    player = ScriptedPlayer("noisy_mcts", OPPONENT_STREAM)
    n = 120
    player.reset(list(range(n)))
    share = np.mean([player.move(g, state) == 2 for g in range(n)])
    p = 0.5 + 0.5 / 6
    assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_random_against_random_matches_the_exact_outcome_probabilities():
    p_win, p_draw, p_loss = random_play("0" * 9)
    assert (round(p_win, 4), round(p_draw, 4), round(p_loss, 4)) == (0.5849, 0.127, 0.2881)
    n = 3000
    games, _ = run_games(make_agent("random"), "random", n, seed=9)
    for outcome, p in (("win", p_win), ("draw", p_draw), ("loss", p_loss)):
        share = (games["outcome"] == outcome).mean()
        assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n), (outcome, share, p)


def test_players_are_named_once():
    assert tictactoe_cli.PLAYERS == PLAYERS


# -- the text layer --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ACTION=4", 4),
        ("I could play ACTION=0, but the centre is better.\nACTION=4", 4),
        ("ACTION=4 ... no, action = 8.", 8),
        ("**Action=**[3]**", 3),
        ("final_action='7'", 7),
        ("ACTION=5 then ACTION=9", 5),  # 9 names no cell: the one before counts
        ("ACTION=2 then ACTION=12", 2),  # neither does 12
        ("ACTION=04", None),
        ("ACTION=4.5", None),
        ("ACTION=4a", None),
        ("ACTION: 4", None),
        ("REACTION=4", None),
        ("ACTION=X", None),
        ("ACTION=\u0664", None),  # an Arabic-Indic four is not a cell number
        ("I play the centre.", None),
        ("", None),
    ],
)
def test_the_parser_takes_the_last_action_naming_a_cell(text, expected):
    assert parse_action(text) == expected


def test_the_prompt_shows_the_board_and_by_default_the_legal_moves():
    obs = Observation(0, 0, 2, "100020000", (1, 2, 3, 5, 6, 7, 8), True)
    assert observation_text(obs) == "Current board: 100020000\nLegal actions: 1, 2, 3, 5, 6, 7, 8"
    hidden = Observation(0, 0, 2, "100020000", (1, 2, 3, 5, 6, 7, 8), False)
    assert observation_text(hidden) == "Current board: 100020000"
    cot, no_cot = build_prompt(obs, "cot"), build_prompt(hidden, "no_cot")
    assert cot.endswith("Legal actions: 1, 2, 3, 5, 6, 7, 8\n\nWhat do you predict next?")
    assert output_instructions("cot") in cot and "Think briefly" in cot and "Output only ACTION=X" in no_cot
    assert "Legal actions" not in no_cot and "player 1" in cot and "nine digits" in cot
    assert parse_action(cot) is None and parse_action(no_cot) is None  # the prompt holds no answer
    assert prompt_name("cot") == "tictactoe-v1/cot/legal"
    assert prompt_name("no_cot", False) == "tictactoe-v1/no_cot/no_legal"
    with pytest.raises(ValueError, match="unknown prompt style 'cot2'"):
        build_prompt(obs, "cot2")


# -- the runner ---------------------------------------------------------------------------------------


class TextAgent:
    """Stands in for the LLM agent: writes a text per game from its prompt and parses it.

    Game 0 answers the first legal cell at turn 1 and an occupied cell after; game 1
    writes no ACTION=; game 2 answers ``ACTION=X``; game 3 always answers a legal cell."""

    name, model, cot = "scripted_text", "test:text", True

    def reset(self, seeds):
        self.columns = {"prompt": prompt_name("cot")}

    def act(self, observations):
        texts, lengths = [], []
        for obs in observations:
            lengths.append(len(build_prompt(obs)))
            occupied = [c for c in range(9) if obs.board[c] != "0"]
            texts.append(
                {
                    0: f"ACTION={occupied[0] if occupied else obs.legal[0]}",
                    1: "I take the centre.",
                    2: "ACTION=X",
                    3: f"Thinking... ACTION={obs.legal[-1]}",
                }[obs.episode]
            )
        actions = [parse_action(t) for t in texts]
        return Decisions(np.array([-1 if a is None else a for a in actions]), texts, {"prompt_chars": lengths})


def test_illegal_and_missing_moves_are_flagged_and_replaced_by_a_legal_move():
    games, steps = run_games(TextAgent(), "random", 4, seed=3)
    for _, row in steps.iterrows():
        assert row["board"][row["action"]] == "0"  # the move played is always legal
        assert (
            row["valid"]
            == (row["proposed"] == row["action"])
            == (row["board"][row["proposed"]] == "0" if row["proposed"] >= 0 else False)
        )
    by_game = steps.groupby("episode")
    assert by_game.get_group(0)["valid"].tolist() == [True] + [False] * (len(by_game.get_group(0)) - 1)
    assert (by_game.get_group(0)["proposed"].iloc[1:] >= 0).all()  # occupied cells, not missing answers
    assert not by_game.get_group(1)["valid"].any() and (by_game.get_group(1)["proposed"] == -1).all()
    assert not by_game.get_group(2)["valid"].any() and (by_game.get_group(2)["proposed"] == -1).all()
    assert by_game.get_group(3)["valid"].all()
    assert games["invalid_moves"].tolist() == [
        len(by_game.get_group(0)) - 1,
        len(by_game.get_group(1)),
        len(by_game.get_group(2)),
        0,
    ]
    assert (games["prompt"] == "tictactoe-v1/cot/legal").all() and (games["cot"]).all()
    assert by_game.get_group(1)["raw_completion"].eq("I take the centre.").all()
    assert (steps["prompt_chars"] > 500).all()
    # the fallback moves come from each game's own seeded stream
    pd.testing.assert_frame_equal(steps, run_games(TextAgent(), "random", 4, seed=3)[1])


def test_step_rows_replay_every_game_and_add_up_to_the_game_rows():
    games, steps = run_games(make_agent("noisy_mcts"), "noisy_mcts", 8, seed=40)
    for g, rows in steps.groupby("episode"):
        board = "0" * 9
        for _, row in rows.iterrows():
            assert row["board"] == board and row["seat"] == 0
            board = play(board, row["action"], "1")
            if row["opponent_action"] >= 0:
                assert not over(board)
                board = play(board, row["opponent_action"], "2")
            assert row["board_after"] == board
        assert over(board) and rows["turn"].tolist() == list(range(1, len(rows) + 1))
        expected = {"1": 1.0, "2": -1.0, None: 0.0}[winner(board)]
        game = games.loc[g]
        assert game["return"] == expected == rows["reward"].iloc[-1] and (rows["reward"].iloc[:-1] == 0).all()
        assert game["outcome"] == {1.0: "win", 0.0: "draw", -1.0: "loss"}[expected]
        assert game["moves"] == len(rows) == board.count("1") and game["seed"] == 40 + g
    assert set(games.columns) >= {
        "agent",
        "model",
        "cot",
        "opponent",
        "legal_in_prompt",
        "episode",
        "seed",
        "return",
        "outcome",
        "moves",
        "invalid_moves",
    }


def test_the_same_seed_gives_the_same_games_and_a_game_reruns_alone():
    agent = make_agent("noisy_mcts")
    games, steps = run_games(agent, "noisy_mcts", 5, seed=70)
    again_games, again_steps = run_games(agent, "noisy_mcts", 5, seed=70)
    pd.testing.assert_frame_equal(games, again_games)
    pd.testing.assert_frame_equal(steps, again_steps)
    _, alone = run_games(agent, "noisy_mcts", 1, seed=73)
    mine = steps[steps["episode"] == 3].drop(columns="episode").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, alone.drop(columns="episode"))
    _, other = run_games(agent, "noisy_mcts", 5, seed=71)
    assert not steps["board_after"].equals(other["board_after"])


class Broken:
    name, model, cot = "broken", "test:broken", False

    def __init__(self, answer):
        self.answer = answer

    def reset(self, seeds):
        pass

    def act(self, observations):
        return np.full(len(observations), self.answer)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: run_games(make_agent("random"), "random", 0), "games must be at least 1, got 0"),
        (lambda: run_games(make_agent("random"), "alphazero", 2), "unknown player 'alphazero'"),
        (lambda: run_games(Broken(9), "random", 2), "expected 2 cells in 0..8 or -1"),
        (lambda: run_games(Broken(-2), "random", 2), "expected 2 cells in 0..8 or -1"),
        (lambda: make_agent("llm"), "the LLM agent needs a model name"),
        (lambda: make_agent("mcts", model="x"), "a model is for the LLM agent"),
    ],
)
def test_bad_arguments_raise_one_line(call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


# -- the command ------------------------------------------------------------------------------------------


@pytest.fixture
def paperlib_main(monkeypatch):
    """``paperlib.cli.main`` with the tictactoe group registered (however the package registers it)."""

    def build_parser():
        parser = paperlib.cli._Parser(prog="paperlib")
        groups = parser.add_subparsers(dest="group", required=True, parser_class=paperlib.cli._Parser)
        tictactoe_cli.add_commands(groups)
        return parser

    monkeypatch.setattr(paperlib.cli, "build_parser", build_parser)
    return paperlib.cli.main


def test_run_writes_game_and_step_rows(tmp_path, capsys, paperlib_main):
    out, steps_out = tmp_path / "games.parquet", tmp_path / "steps.parquet"
    assert (
        paperlib_main(
            [
                "tictactoe",
                "run",
                "--agent",
                "random",
                "--opponent",
                "noisy_mcts",
                "--games",
                "4",
                "--seed",
                "12",
                "--no-legal-actions",
                "--out",
                str(out),
                "--steps-out",
                str(steps_out),
            ]
        )
        == 0
    )
    games, steps = pd.read_parquet(out), pd.read_parquet(steps_out)
    assert len(games) == 4 and games["seed"].tolist() == [12, 13, 14, 15] and len(steps) == games["moves"].sum()
    assert not games["legal_in_prompt"].any() and (games["opponent"] == "noisy_mcts").all()
    counts = games["outcome"].value_counts()
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and f"mean return {games['return'].mean():.2f}" in printed
    assert f"({counts.get('win', 0)} wins, {counts.get('draw', 0)} draws, {counts.get('loss', 0)} losses)" in printed


@pytest.mark.parametrize(
    "args, message",
    [
        (["--agent", "random", "--opponent", "random", "--games", "0"], "--games: must be a positive integer, got 0"),
        (["--agent", "random", "--opponent", "random", "--seed", "-1"], "--seed: must be zero or more, got -1"),
        (["--agent", "llm", "--opponent", "random"], "--agent llm needs --model"),
        (["--agent", "random", "--opponent", "random", "--cot"], "are for --agent llm"),
        (["--agent", "random", "--opponent", "minimax"], "invalid choice: 'minimax'"),
        (["--agent", "random", "--opponent", "random", "--steps-out", "{out}"], "must be different files"),
        (["--agent", "random", "--opponent", "random", "--out", "{tmp}"], "is a directory"),
    ],
)
def test_bad_arguments_fail_with_one_line(tmp_path, capsys, paperlib_main, args, message):
    out = str(tmp_path / "games.parquet")
    args = [a.format(out=out, tmp=tmp_path) for a in args]
    if "--out" not in args:
        args += ["--out", out]
    try:
        status = paperlib_main(["tictactoe", "run", *args])
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "games.parquet").exists()
