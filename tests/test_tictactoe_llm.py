"""The LLM tic-tac-toe agent on the shared decision core, driven by a scripted backend."""

import numpy as np
from scripted_backend import ScriptedBackend

from paperlib.tictactoe.llm import LLMAgent
from paperlib.tictactoe.runner import run_games


def test_free_moves_are_parsed_and_an_illegal_or_missing_one_is_flagged_and_replaced():
    # game 0 always answers cell 4 (legal once, then occupied); game 1 never names a cell
    backend = ScriptedBackend(["I take the centre. ACTION=4", "no idea"] * 5)
    agent = LLMAgent(backend, cot=True, decision="free")
    games, steps = run_games(agent, "random", games=2, seed=3)
    first = steps[steps["episode"] == 0].sort_values("turn")
    assert first["proposed"].tolist()[0] == 4 and first["valid"].tolist()[0]
    assert not first["valid"].iloc[1:].any()  # 4 is taken from the second move on
    assert (first["action"].iloc[1:] != 4).all()  # replaced by a legal move
    assert (steps.loc[steps["episode"] == 1, "proposed"] == -1).all()
    assert games["invalid_moves"].tolist() == [len(first) - 1, int((steps["episode"] == 1).sum())]
    assert steps["prompt_version"].eq("tictactoe-v1/cot/legal").all()
    assert steps["raw_completion"].iloc[0] == "I take the centre. ACTION=4"
    assert games["decision"].eq("free").all() and games["max_new_tokens"].eq(256).all()


def test_constrained_plays_the_best_scored_cell_and_the_prompt_can_hide_the_legal_moves():
    class Scores(dict):
        def __missing__(self, prompt):  # prefers cell 8, then 7, ...
            return list(np.arange(9, dtype=float) - 9)

    backend = ScriptedBackend(scores=Scores())
    agent = LLMAgent(backend, cot=False, decision="constrained")
    games, steps = run_games(agent, "random", games=1, seed=0, legal_in_prompt=False)
    assert steps["proposed"].tolist()[0] == 8 and steps["raw_completion"].iloc[0] == "ACTION=8"
    assert steps["proposed"].eq(8).all()  # the scores never change: 8 again, flagged once taken
    assert steps["valid"].tolist() == [True] + [False] * (len(steps) - 1)
    assert "Legal actions" not in steps["prompt"].iloc[0] and steps["candidate_logprobs"].map(len).eq(9).all()
