"""Notebook 05's pieces on hand-made tables: paper B's penalty on paper A's scale, the curriculum's
schedule and rows, the share of groups with a learning signal, and the verdict per prescription."""

import json

import pandas as pd
import pytest
from scripted_backend import ScriptedBackend
from test_grpo import FakeTrainer

from paperlib.philosophers.reward import invalid_penalty
from paperlib.philosophers.training import REWARDS, TableSettings, add_outcomes, recipe, signal_share
from paperlib.training.checkpoints import RunDir
from paperlib.training.grpo import Rollout


# -- paper B's penalty -----------------------------------------------------------------------
def test_each_failed_call_costs_five_over_the_episodes_decisions():
    assert invalid_penalty(1, 5, 5) == pytest.approx(-0.2)  # -5 / (N R)
    assert invalid_penalty(25, 5, 5) == pytest.approx(-5.0)  # every call failed: five times the reward's range
    assert invalid_penalty(0, 15, 5) == 0.0
    assert invalid_penalty(3, 15, 5) == pytest.approx(-0.2)


def test_the_penalised_reward_is_the_shaped_one_minus_the_failed_calls():
    episodes = pd.DataFrame(
        {
            "n": [5, 5, 10],
            "rounds": [5, 5, 5],
            "actions_total": [25, 20, 0],
            "no_actions": [0, 5, 50],
            "invalid_actions": [0, 10, 0],
            "reward_shaped": [0.7, 0.0, 0.0],
        }
    )
    rows = add_outcomes(episodes)
    # 0 failed; 10 invalid + 5 missing of 25; 50 missing of 50
    assert rows["reward_shaped_penalty"].tolist() == pytest.approx([0.7, -3.0, -5.0])
    assert REWARDS["shaped_penalty"] == "reward_shaped_penalty"


# -- the curriculum ----------------------------------------------------------------------------
def test_the_curriculum_runs_its_tables_in_blocks_the_longer_first():
    s = recipe("paper", reward="shaped", curriculum=(5, 10, 15))
    assert [s.n_at(step) for step in range(1, 17)] == [5] * 6 + [10] * 5 + [15] * 5
    assert [recipe("paper").n_at(step) for step in (1, 16)] == [5, 5]
    assert recipe("paper", curriculum=(5, 10), steps=3).n_at(2) == 5


def test_the_curriculum_keeps_the_recipes_rows_per_step():
    plain, s = recipe("paper"), recipe("paper", reward="shaped", curriculum=(5, 10, 15))
    assert s.row_count == plain.row_count == 150  # 5 seats x 5 turns x 2 groups x 3 episodes
    assert s.batch_size == 15 * 6  # every philosopher of the six episodes at N = 15 decides at once
    rows = [json.loads(r) for r in s.dataset_rows()]
    per_step = s.row_count // s.group_size  # trl repeats each row G times
    assert len(rows) == per_step * s.steps
    for step in range(1, s.steps + 1):
        keys = rows[(step - 1) * per_step : step * per_step]
        assert [k["seed"] for k in keys[:: per_step // s.groups]] == s.step_seeds(step)  # seed-major
        for seed in s.step_seeds(step):
            seats = sorted({k["seat"] for k in keys if k["seed"] == seed})
            assert len(seats) == 5 and set(seats) <= set(range(s.n_at(step)))
            assert seats == s.trained_seats(seed, s.n_at(step))
    assert s.trained_seats(7, 5) == [0, 1, 2, 3, 4]
    assert s.trained_seats(7, 15) == s.trained_seats(7, 15) != s.trained_seats(8, 15)  # drawn from the seed


def test_a_curriculum_is_recorded_only_where_a_run_has_one(tmp_path):
    assert "curriculum" not in recipe("smoke").config()  # runs recorded before the field still resume
    s = recipe("smoke", curriculum=(2, 3))
    RunDir(tmp_path).claim(s.config())
    assert TableSettings.of_run(tmp_path) == s
    with pytest.raises(ValueError, match="at least 2 philosophers"):
        recipe("smoke", curriculum=(1, 3))
    with pytest.raises(ValueError, match="a curriculum of 3 tables needs as many steps"):
        recipe("smoke", curriculum=(2, 3, 4))  # smoke: 2 steps


def test_a_curriculum_step_plays_its_n_and_trains_the_drawn_seats(tmp_path):
    settings = recipe("smoke", curriculum=(2, 3), rounds=1, groups=1, group_size=2, reward="shaped")
    rollout = Rollout(settings, type("Tokenizer", (), {"eos_token_id": 0})(), RunDir(tmp_path))
    rollout.backend = ScriptedBackend(["no call"] * 6)  # step 2: 2 episodes x 3 philosophers x 1 round
    trainer = FakeTrainer()
    trainer.state.global_step = 1
    dataset = settings.dataset_rows()
    half = len(dataset) // 2
    prompts = [row for row in dataset[half:] for _ in range(2)]  # step 2's rows, each repeated G times
    out = rollout(prompts, trainer)
    (seed,) = settings.step_seeds(2)
    seats = settings.trained_seats(seed, 3)
    assert len(out["prompt_ids"]) == len(prompts) == 2 * 2  # the recipe's row count: 2 seats x 2 episodes
    for prompt, ids in zip(prompts, out["prompt_ids"]):
        assert f"You are philosopher {json.loads(prompt)['seat']}." in "".join(map(chr, ids))
    assert {json.loads(p)["seat"] for p in prompts} == set(seats)
    assert rollout.last["n"] == 3 and rollout.last["episodes"] == 2
    assert rollout.last["signal_share"] == 0.0  # nobody acted: both episodes score the same
    assert set(RunDir(tmp_path).rollouts("episodes")["n"]) == {3}


def test_the_signal_share_counts_groups_whose_episodes_differ():
    episodes = pd.DataFrame({"seed": [1, 1, 1, 2, 2, 2], "reward_shaped": [0.0, 0.0, 0.0, 0.0, 0.4, 0.0]})
    assert signal_share(episodes, "reward_shaped") == 0.5
    assert signal_share(episodes.assign(reward_shaped=0.0), "reward_shaped") == 0.0
