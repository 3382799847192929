"""bfloat16 autocast where the hardware multiplies it: the choice, refused settings, and each
trainer's loss and gradient norm in bfloat16 within the stated tolerance of float32's on the same
rollout (one smoke step of each, through the benchmark's own comparison; RLFT with one optimiser
step per update, so that both score the rollout with the same weights)."""

import pytest

from paperlib.training import precision
from paperlib.training.bench import PRECISION, bench_step, bench_update


def test_auto_takes_bfloat16_only_where_the_cpu_multiplies_it(monkeypatch):
    import warnings

    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # native: no warning
        assert precision.resolve("auto", "cpu") == "bfloat16" == precision.resolve("bfloat16", "cpu")
    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: False)
    assert precision.resolve("auto", "cpu") == "float32"
    with pytest.warns(UserWarning, match="emulated: a training step takes about 12x float32's"):
        assert precision.resolve("bfloat16", "cpu") == "bfloat16"
    assert precision.resolve("float32", "cpu") == "float32"
    assert precision.autocast("float32", "cpu") is precision.nullcontext


def test_an_unknown_precision_is_refused_in_one_line_before_any_model_loads():
    from paperlib.bandits.training import recipe

    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose one of auto, float32, bfloat16"):
        recipe("smoke", precision="fp16")


def within_tolerance(table):
    assert list(table["variant"]) == ["float32", "bfloat16"] and table["same_rollout"].all()
    bf16 = table.iloc[1]
    assert bf16["loss_difference"] <= precision.LOSS_TOLERANCE
    assert bf16["grad_norm_relative_difference"] <= precision.GRAD_NORM_TOLERANCE


@pytest.mark.slow
def test_a_grpo_step_in_bfloat16_is_float32s_within_the_tolerance():
    from paperlib.philosophers.training import recipe

    # [ours: CI time] where the CPU emulates bfloat16 (a smoke step's backward pass 28x float32's),
    # one round per episode: half the rows
    rounds = {} if precision.cpu_multiplies_bf16() else {"rounds": 1}
    within_tolerance(bench_step(recipe("smoke", reward="valid", **rounds), PRECISION, log=lambda line: None))


@pytest.mark.slow
@pytest.mark.parametrize("game", ["bandits", "tictactoe"])
def test_an_rlft_update_in_bfloat16_is_float32s_within_the_tolerance(game):
    from importlib import import_module

    recipe = import_module(f"paperlib.{game}.training").recipe
    # [ours: CI time] where the CPU emulates bfloat16, tic-tac-toe plays one game per update, not 2
    # (measured 102 s against 154); a bandit update keeps its two instances (with one, the logged
    # gradient norm was NaN: nothing to compare)
    smallest = {"games": 1} if game == "tictactoe" and not precision.cpu_multiplies_bf16() else {}
    # one optimiser step, so that both precisions score the rollout with the same weights
    table = bench_update(recipe("smoke", minibatch=0, ppo_epochs=1, **smallest), PRECISION, log=lambda line: None)
    within_tolerance(table)
    assert table["decisions"].nunique() == 1 and table["completion_tokens"].nunique() == 1
