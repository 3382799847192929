"""RLFT on tic-tac-toe: settings and refusals, GAE on hand-worked games, the returns table, and a
smoke run of the real loop (SmolLM2, a value head, two updates) with its held-out evaluation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from paperlib import cli
from paperlib.reports.n16_tictactoe import control_sentence, cot_sentence, returns_sentence
from paperlib.tictactoe.training import (
    HELD_OUT_SEEDS,
    TRAIN_SEEDS,
    Cell,
    TicTacToeSettings,
    advantages_of,
    evaluate,
    evaluation_cells,
    recipe,
    recipes,
    references,
    returns_table,
)
from paperlib.training.checkpoints import file_hash
from paperlib.training.precision import LOGPROB_GAP_TOLERANCE
from paperlib.training.rlft import loop
from paperlib.training.rlft.loop import train
from paperlib.training.settings import settings_table


# -- settings --------------------------------------------------------------------------------
def test_recipes_and_the_settings_table():
    cpu = recipe("cpu")
    assert (cpu.model, cpu.cot, cpu.max_new_tokens, cpu.micro_batch, cpu.opponent, cpu.legal_in_prompt) == (
        "qwen2.5-coder-0.5b",
        False,
        16,
        20,
        "random",
        True,
    )
    assert TicTacToeSettings.value_head and recipe("paper").cot
    assert recipe("paper") == TicTacToeSettings(profile="paper", updates=2_000, micro_batch=16)  # the paper's CoT
    assert (recipe("cpu", True).max_new_tokens, recipe("paper", False).max_new_tokens) == (64, 16)
    table = settings_table(cpu).set_index("setting")
    assert table.loc["penalty", "value"] == "-5.0" and table.loc["penalty", "source"].startswith("paper")
    assert table.loc["gae", "value"] == "gamma 1, lambda 0.95" and table.loc["baseline", "source"].startswith("paper")
    assert (table["source"] != "run").sum() >= len(table) - 3  # every setting but model, seed, profile has a source
    assert list(table.index[-5:]) == ["reward", "baseline", "gae", "value_head", "kl_estimator"]


def test_each_profiles_runs_flip_only_the_cot_and_its_budget():
    paper, cpu = recipes("paper", 0), recipes("cpu", 3)
    assert (
        list(paper) == ["CoT", "no CoT"] and list(cpu) == ["no CoT", "CoT"] and list(recipes("smoke", 0)) == ["no CoT"]
    )
    assert (paper["CoT"].max_new_tokens, paper["no CoT"].max_new_tokens) == (256, 16)
    assert paper["CoT"] == recipe("paper", seed=0) and cpu["no CoT"] == recipe("cpu", seed=3)
    assert (cpu["CoT"].cot, cpu["CoT"].max_new_tokens, cpu["CoT"].micro_batch, cpu["CoT"].seed) == (True, 64, 10, 3)
    assert (cpu["no CoT"].max_new_tokens, cpu["no CoT"].micro_batch) == (16, 20)
    assert cpu["CoT"] == replace(cpu["no CoT"], cot=True, max_new_tokens=64, micro_batch=10)
    assert (recipes("smoke", 0)["no CoT"].max_new_tokens, recipes("smoke", 0)["no CoT"].micro_batch) == (4, 0)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"opponent": "minimax"}, "unknown opponent 'minimax'"),
        ({"games": 0}, "games must be at least 1"),
        ({"updates": 100_000, "games": 16}, "exceed the 1000000 training games"),
        ({"model": "gpt-5.4"}, "gateway model"),
        ({"temperature": 0.0}, "training temperature must be positive"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message):
        recipe("smoke", **overrides)


def test_training_games_never_meet_the_held_out_ones():
    s = recipe("cpu", seed=3)
    first, last = s.game_seed(1), s.game_seed(s.updates) + s.games - 1
    assert TRAIN_SEEDS <= first < last and first > HELD_OUT_SEEDS + 1_000_000
    assert recipe("cpu", seed=4).game_seed(1) > last  # run seeds draw disjoint games


def test_the_cli_refuses_bad_runs_before_any_model_loads(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "rlft-tictactoe", "--profile", "smoke", "--out", str(tmp_path), "--opponent", "minimax"])
    assert "invalid choice: 'minimax'" in capsys.readouterr().err


# -- advantages ------------------------------------------------------------------------------
def test_gae_on_two_hand_worked_games():
    # game 0: three moves, the second invalid, won; game 1: one move, lost
    steps = pd.DataFrame(
        {
            "episode": [0, 0, 0, 1],
            "turn": [1, 2, 3, 1],
            "reward": [0.0, 0.0, 1.0, -1.0],
            "valid": [True, False, True, True],
        }
    )
    values = np.array([0.5, 0.2, 0.8, 0.1])
    advantages, targets, arrays = advantages_of(steps, values, recipe("smoke"))
    # shaped rewards 0, -5, +1 and -1; gamma 1, lambda 0.95
    a3 = 1 - 0.8
    a2 = -5 + 0.8 - 0.2 + 0.95 * a3
    a1 = 0 + 0.2 - 0.5 + 0.95 * a2
    b1 = -1 - 0.1
    raw = np.array([a1, a2, a3, b1])
    mask = arrays["mask"]
    assert mask.tolist() == [[True, True, True, False, False], [True, False, False, False, False]]
    np.testing.assert_allclose(targets[mask], raw + values)
    np.testing.assert_allclose(advantages[mask], (raw - raw.mean()) / raw.std(), rtol=1e-6)
    assert (advantages[~mask] == 0).all() and (targets[~mask] == 0).all()


def test_the_settings_advantages_read_each_rows_value_in_row_order():
    steps = pd.DataFrame(
        {"episode": [0, 0, 1], "turn": [1, 2, 1], "reward": [0.0, 1.0, 0.0], "valid": [True, True, False]}
    )
    # the values the trainer's value head gives the rows (the real one runs in the smoke run)
    advantages, targets, stats = recipe("smoke").advantages(steps, np.array([0.0, 0.5, 0.0]))
    assert targets.tolist() == pytest.approx([0.5 + 0.95 * 0.5, 1.0, -5.0])  # lambda 0.95 (A + V)
    assert advantages[2] < advantages[1] < advantages[0]
    assert stats == pytest.approx(
        {"mean_return": 0.5, "wins": 0.5, "losses": 0.0, "invalid_rate": 1 / 3, "value_mean": 1 / 6}
    )


def test_the_returns_table_tests_each_adapter_against_the_base_model_in_its_cell():
    games = pd.DataFrame(
        {
            "adapter": ["base"] * 4 + ["last"] * 4 + ["base"] * 2 + ["last"] * 2,
            "update": [0] * 4 + [3] * 4 + [0] * 2 + [3] * 2,
            "cell": ["random/legal/no_cot/16"] * 8 + ["mcts/legal/no_cot/16"] * 4,
            "return": [-1.0, 0, -1, 0, 1, 1, 0, 1, -1, -1, -1, -1],
            "invalid_moves": [2, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0],
            "moves": 4,
            "seed": [5, 6, 7, 8] * 2 + [5, 6] * 2,
            "model": "m",
        }
    )
    table = returns_table(games).set_index(["cell", "adapter", "metric"])
    row = table.loc[("random/legal/no_cot/16", "last", "return")]
    assert row["mean"] == 0.75 and row["g"] > 0 and row["p"] < 0.05
    assert table.loc[("random/legal/no_cot/16", "base", "invalid_share"), "mean"] == 0.25
    assert np.isnan(table.loc[("mcts/legal/no_cot/16", "last", "return"), "p"])  # no variation on either side
    with pytest.raises(ValueError, match="not played on the base model's held-out seeds in cell mcts"):
        returns_table(games.assign(seed=[5, 6, 7, 8] * 2 + [5, 6, 1, 2]))


# -- on SmolLM2 ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_smoke_run_trains_the_adapter_and_the_value_head(tictactoe_smoke_run):
    import torch

    settings, run, log = tictactoe_smoke_run
    assert list(log["step"]) == [1, 2] and run.steps_saved() == [1, 2]
    head = torch.load(run.checkpoint(2) / loop.VALUE_HEAD_FILE, weights_only=True)
    assert head["linear.weight"].abs().max() > 0  # zero-initialised, then fitted to the GAE targets
    steps, games = run.rollouts("steps"), run.rollouts("episodes")
    for update, rows in games.groupby("update"):
        row = log[log["step"] == update].iloc[0]
        assert sorted(rows["seed"]) == list(range(settings.game_seed(update), settings.game_seed(update) + 2))
        assert row["mean_return"] == pytest.approx(rows["return"].mean())
        assert row["invalid_rate"] == pytest.approx(1 - steps[steps["update"] == update]["valid"].mean())
    assert log.loc[log["step"] == 1, "value_mean"].item() == 0.0  # the untrained head says 0 everywhere
    assert np.isfinite(log[["loss", "kl", "grad_norm", "value_loss", "seconds"]].to_numpy()).all()
    by_update = log.set_index("step")
    assert by_update.loc[2, "rollout_adapter_hash"] == by_update.loc[1, "adapter_hash"] == file_hash(run.checkpoint(1))
    tolerance = log["precision"].map(LOGPROB_GAP_TOLERANCE)  # float32's noise, or bfloat16's rounding
    assert (log["rollout_logprob_gap"] < tolerance).all()


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_log(tictactoe_smoke_run, resumes_to_the_same_log):
    settings, _, uninterrupted = tictactoe_smoke_run
    resumes_to_the_same_log(settings, train, uninterrupted)


@pytest.mark.slow
def test_held_out_games_of_each_adapter_in_each_cell_resume(tictactoe_smoke_run, tmp_path):
    settings, run, _ = tictactoe_smoke_run
    cells = [Cell("random"), Cell("random", legal_in_prompt=False, cot=True, max_new_tokens=8)]
    games, steps = evaluate(run.path, {"base": None, "last": 2}, cells, games=2, rollouts_dir=tmp_path, progress=False)
    assert sorted(games.groupby(["adapter", "cell"]).groups) == [
        ("base", "random/legal/no_cot/4"),
        ("base", "random/no_legal/cot/8"),
        ("last", "random/legal/no_cot/4"),
        ("last", "random/no_legal/cot/8"),
    ]
    assert (games["seed"] < HELD_OUT_SEEDS + 2).all() and (games["seed"] >= HELD_OUT_SEEDS).all()
    assert set(games.loc[games["cell"] == "random/no_legal/cot/8", "legal_in_prompt"]) == {False}
    assert set(steps["cell"]) == set(games["cell"])
    again, _ = evaluate(run.path, {"base": None, "last": 2}, cells, games=2, rollouts_dir=tmp_path, progress=False)
    pd.testing.assert_frame_equal(
        again.sort_values(["adapter", "cell", "episode"], ignore_index=True),
        games.sort_values(["adapter", "cell", "episode"], ignore_index=True),
        check_like=True,
    )
    table = returns_table(pd.concat([games, references(settings, cells, 2)], ignore_index=True))
    assert {"base", "last", "random", "mcts", "noisy_mcts"} == set(table["adapter"])


@pytest.mark.slow
def test_the_base_models_games_are_played_once_for_every_run_that_shares_them(tictactoe_smoke_run, tmp_path):
    from paperlib.training import held_out

    _, run, _ = tictactoe_smoke_run
    cells = [Cell("random")]
    first, _ = evaluate(
        run.path, {"base": None}, cells, 2, tmp_path / "one", progress=False, shared_base=tmp_path / "b"
    )

    def no_model(*args, **kwargs):
        raise AssertionError("the base model's games were played again")

    with pytest.MonkeyPatch.context() as patch:  # another run's evaluation: the base model's stores are read back
        patch.setattr(held_out, "each_adapter", no_model)
        again, _ = evaluate(
            run.path, {"base": None}, cells, 2, tmp_path / "two", progress=False, shared_base=tmp_path / "b"
        )
    pd.testing.assert_frame_equal(again, first)
    assert not (tmp_path / "two").exists() and len(list((tmp_path / "b").iterdir())) == 1


def test_the_benchmark_refuses_the_other_games_sizes(capsys):
    assert cli.main(["bench", "rlft", "--game", "tictactoe", "--instances", "3"]) == 2
    assert "--instances and --horizon are for --game bandits" in capsys.readouterr().err


def test_a_complete_separation_passes_the_positive_control():
    s = recipe("cpu")
    cell = Cell("random").name(s)
    games = pd.DataFrame(
        {
            "run": "no CoT",
            "adapter": ["base"] * 5 + ["RLFT"] * 5,
            "update": [0] * 5 + [12] * 5,
            "cell": cell,
            "return": [0.0, 1, -1, 1, 0] * 2,
            "invalid_moves": [3] * 5 + [0] * 5,
            "moves": 3,
            "seed": list(range(5)) * 2,
            "model": "m",
        }
    )
    table = returns_table(games, within=("run", "cell"))
    row = table[(table["adapter"] == "RLFT") & (table["metric"] == "invalid_share")].iloc[0]
    assert row["test"] == "mann-whitney" and row["p"] < 0.05 and row["difference"] == -1.0
    sentence = control_sentence(table, {"no CoT": s})
    assert "from 1.000 [1.000, 1.000] to 0.000 [0.000, 0.000] over 5 games (lower, p = " in sentence
    assert "mann-whitney: neither side varies" in sentence and "learns what the penalty asks for" in sentence


def test_the_cot_sentence_says_which_style_raised_the_return():
    runs = recipes("cpu", 0)
    rows = []
    for name, trained in (("CoT", [1.0, 1, 0, 1, 1, 1]), ("no CoT", [0.0, -1, 0, 1, 0, 0])):
        cell = Cell("random").name(runs[name])
        rows += [
            {
                "run": name,
                "adapter": adapter,
                "update": update,
                "cell": cell,
                "return": r,
                "invalid_moves": 0,
                "moves": 3,
                "seed": seed,
                "model": "m",
            }
            for adapter, update, returns in (("base", 0, [0.0, -1, 0, 1, 0, -1]), ("RLFT", 12, trained))
            for seed, r in enumerate(returns)
        ]
    games = pd.DataFrame(rows)
    log = pd.DataFrame(
        {
            "run": ["CoT", "CoT", "no CoT"],
            "step": [2, 1, 1],
            "completion_tokens": [80, 3000, 60],
            "decisions": [40, 60, 60],
        }
    )
    with_cot, without, paper = cot_sentence(returns_table(games, within=("run", "cell")), log, runs).split("\n\n")
    assert with_cot.startswith(
        "RLFT with CoT (64 new tokens), held-out return against random: -0.17 → 0.83 (higher, p = "
    )
    assert with_cot.endswith(
        "its completions averaged 50 tokens per decision at update 1 and 2 at update 2, of 64 allowed."
    )
    assert without.startswith("RLFT without CoT (16 new tokens)") and "(no significant change" in without
    assert "Fig. 9b" in paper and paper.endswith(
        "Ours show that direction: RLFT raises the return significantly with CoT and not without it."
    )
    swapped = games.assign(
        run=games["run"].map({"CoT": "no CoT", "no CoT": "CoT"}),
        cell=lambda d: d["run"].map({name: Cell("random").name(r) for name, r in runs.items()}),
    )
    assert cot_sentence(returns_table(swapped, within=("run", "cell")), log, runs).endswith(
        "Ours show the opposite: RLFT raises the return significantly without CoT and not with it."
    )


def test_the_returns_sentence_gives_each_cell_and_says_when_the_base_model_played_at_random():
    s = recipe("cpu")
    cells = evaluation_cells(s, (16, 64))
    rows = [
        {
            "run": "no CoT",
            "adapter": adapter,
            "update": update,
            "cell": cell.name(s),
            "return": r,
            "invalid_moves": invalid,
            "moves": 4,
            "seed": seed,
            "model": "m",
        }
        for cell in cells
        for adapter, update, invalid in (("base", 0, 3), ("RLFT", 12, 0))
        for seed, r in enumerate([1.0, 0, -1, 1] if adapter == "base" else [1.0, 1, 0, 1])
    ]
    table = returns_table(pd.DataFrame(rows), within=("run", "cell"))
    reported = pd.DataFrame(
        {"id": ["B24", "B25", "B26", "B27", "B28"], "value": ["0.15", "0.75", "-0.95", "0.0", "0.45"]}
    )
    paper, ours, budgets, caveat = returns_sentence(table, reported, {"no CoT": s}, (16, 64)).split("\n\n")
    assert paper.startswith(
        "Paper B (Gemma2 2B, all weights tuned, CoT): against random 0.15 → 0.75, against MCTS -0.95"
    )
    assert "against random 0.25 → 0.75 (no significant change (p = " in ours
    assert ours.endswith(
        "The base model's moves against random were 75% invalid, each played as a random legal move: "
        "its returns are mostly a random player's."
    )
    assert (
        budgets == "Thinking budget with CoT against random, no CoT (base model / adapter): 16 tokens 0.25 / 0.75; "
        "64 tokens 0.25 / 0.75."
    )
    assert "LoRA" in caveat
    valid = returns_table(pd.DataFrame(rows).assign(invalid_moves=0), within=("run", "cell"))
    assert "played as a random legal move" not in returns_sentence(valid, reported, {"no CoT": s})


@pytest.mark.slow
def test_the_old_log_probabilities_come_from_the_value_heads_pass_where_not_from_the_rollout(monkeypatch):
    from paperlib.training.bench import RLFT_VARIANTS, bench_update

    adapter_passes = []
    score = loop.Trainer._scored_once

    def counted(self, prompts, completions, rows, adapter):
        adapter_passes.append(adapter)
        return score(self, prompts, completions, rows, adapter)

    monkeypatch.setattr(loop.Trainer, "_scored_once", counted)
    table = bench_update(recipe("smoke"), RLFT_VARIANTS["old"], log=lambda line: None)
    # the value head scores every move under the adapter that played it: no pass of its own
    assert table["old_logprobs_from"].tolist() == ["the value head's pass", "the rollout"] and not any(adapter_passes)
    assert table["same_rollout"].all()
    assert table["loss"].iloc[1] == pytest.approx(table["loss"].iloc[0], abs=1e-5)
    assert table["grad_norm"].iloc[1] == pytest.approx(table["grad_norm"].iloc[0], rel=1e-4)
