"""RLFT on the bandits: settings refused before any model loads, the instances each update
draws, advantages of a hand-made rollout, and on SmolLM2: a smoke run's adapters and log, the
on-policy hashes and log-probabilities, resume, and held-out evaluation of saved adapters."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from paperlib import cli
from paperlib.bandits.training import (
    HELD_OUT_SEEDS,
    POOL_SEEDS,
    BanditSettings,
    advantages_of,
    before_after,
    cot_ablation,
    evaluate_adapters,
    recipe,
    reward_moments,
)
from paperlib.reports.n14_rlft_bandits import cot_ablation_sentence, harder_control_sentence
from paperlib.training.checkpoints import RunDir, file_hash
from paperlib.training.precision import LOGPROB_GAP_TOLERANCE
from paperlib.training.rlft import loop
from paperlib.training.rlft.loop import train
from paperlib.training.settings import settings_table


# -- settings --------------------------------------------------------------------------------
def test_the_default_is_the_papers_setup():
    s = BanditSettings()
    assert (s.instances, s.pool, s.horizon, s.style, s.max_new_tokens) == (16, 512, 50, "cot", 256)
    assert (s.epsilon, s.beta, s.penalty, s.temperature, s.eval_temperature) == (0.2, 0.05, -5.0, 1.0, 0.0)
    table = settings_table(s).set_index("setting")
    assert table.loc["instances", "source"].startswith("paper") and table.loc["lora_rank", "source"].startswith("ours")
    assert table.loc["reward_normalisation", "value"] == f"mean 0.500, std {math.sqrt(1 / 12 + 0.1**2):.3f}"
    assert set(table["source"]) - {"run"} and not (table["source"] == "").any()
    assert list(table.index[-3:]) == ["reward_normalisation", "baseline", "kl_estimator"]
    cpu = recipe("cpu")
    assert (cpu.model, cpu.profile, cpu.updates, cpu.style, cpu.micro_batch) == (
        "qwen2.5-coder-0.5b",
        "cpu",
        12,
        "no_cot",
        10,
    )
    assert cpu.minibatch == 20  # two passes per optimiser step
    assert recipe("paper") == BanditSettings(profile="paper", micro_batch=16)


@pytest.mark.parametrize("family, sigma", [("gaussian", 0.1), ("gaussian", 3.0), ("bernoulli", 0.0)])
def test_reward_moments_match_the_prior(family, sigma):
    mean, scale = reward_moments(sigma, family)
    if family == "gaussian":
        assert (mean, scale) == (0.5, pytest.approx(math.sqrt(1 / 12 + sigma**2)))  # Var U(0,1) = 1/12
    else:
        assert (mean, scale) == (0.5, 0.5)  # Bernoulli(p), p ~ U(0,1), is Bernoulli(1/2)
    # independently: draw means from the prior, then one reward each
    rng = np.random.default_rng(0)
    mu = rng.random(400_000)
    r = mu + sigma * rng.standard_normal(mu.size) if family == "gaussian" else (rng.random(mu.size) < mu) * 1.0
    assert r.mean() == pytest.approx(mean, abs=0.01) and r.std() == pytest.approx(scale, rel=0.01)
    with pytest.raises(ValueError):
        reward_moments(0.1, "poisson")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"updates": 0}, "updates must be at least 1"),
        ({"instances": 20, "pool": 8}, "the pool must be at least as large"),
        ({"temperature": 0.0}, "training temperature must be positive"),
        ({"style": "haiku"}, "unknown prompt style 'haiku'"),
        ({"arms": 1}, "at least 2 arms"),
        ({"noise": "loud"}, "unknown value 'loud'"),
        ({"model": "gpt-5.4"}, "gateway model"),
        ({"micro_batch": -1}, "micro_batch must be zero"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message) as error:
        recipe("smoke", **overrides)
    assert "\n" not in str(error.value)


def test_the_command_line_refuses_before_any_model_loads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("paperlib.models.load_local", lambda *a, **k: pytest.fail("a model was loaded"))
    out = ["train", "rlft", "--out", str(tmp_path / "run")]
    for argv, message in [(["--profile", "huge"], "invalid choice: 'huge'"), (["--updates", "0"], "got 0")]:
        with pytest.raises(SystemExit):
            cli.main(out + argv)
        assert message in capsys.readouterr().err
    assert cli.main(out + ["--profile", "smoke", "--model", "gpt-5.4"]) == 2
    assert "gateway model" in capsys.readouterr().err
    RunDir(tmp_path / "held").claim({"another": "run"})
    assert cli.main(["train", "rlft", "--profile", "smoke", "--out", str(tmp_path / "held")]) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and err.count("\n") == 1


def test_each_update_draws_distinct_pool_instances_from_its_seed():
    s = BanditSettings(seed=3)
    draws = [s.update_seeds(u) for u in range(1, 41)]
    for seeds in draws:
        assert len(set(seeds)) == s.instances and all(POOL_SEEDS <= x < POOL_SEEDS + s.pool for x in seeds)
    assert draws[0] == BanditSettings(seed=3).update_seeds(1)  # a function of (seed, update): a resume redraws them
    assert draws[0] != draws[1] and draws[0] != BanditSettings(seed=4).update_seeds(1)
    assert len({x for seeds in draws for x in seeds}) > s.pool / 2  # the pool is used, not a corner of it
    assert POOL_SEEDS + s.pool <= HELD_OUT_SEEDS  # held-out instances are never trained on
    assert s.sampling_seed(1) != s.sampling_seed(2)


def test_advantages_of_a_hand_made_rollout():
    # two instances, two steps, Bernoulli rewards (moments 0.5, 0.5: r = 1 -> +1, r = 0 -> -1)
    s = BanditSettings(instances=2, pool=2, arms=2, horizon=2, family="bernoulli")
    steps = pd.DataFrame(
        {
            "episode": [1, 0, 1, 0],
            "turn": [2, 1, 1, 2],
            "reward": [1.0, 1.0, 0.0, 1.0],
            "valid": [True, True, False, True],
            "action": [1, 0, 0, 1],
            "regret": 0.0,
            "coverage": 0.5,
        }
    )
    advantages, returns, arrays = advantages_of(steps, s)
    # shaped: episode 0 [+1, +1]; episode 1 [-1 - 5, +1] -> returns-to-go [[2, 1], [-5, 1]]
    np.testing.assert_allclose(returns, [[2, 1], [-5, 1]])
    # minus each step's batch mean ([-1.5, 1]): [[3.5, 0], [-3.5, 0]]; standardised (std 2.475)
    np.testing.assert_allclose(advantages, np.array([[3.5, 0], [-3.5, 0]]) / np.std([3.5, 0, -3.5, 0]), rtol=1e-6)
    with_bonus, _, _ = advantages_of(
        steps, BanditSettings(instances=2, pool=2, arms=2, horizon=2, family="bernoulli", bonus=True)
    )
    # the bonus pays each valid first play: shaped [[2, 2], [-6, 2]], returns [[4, 2], [-4, 2]]
    assert with_bonus[0, 0] > 0 > with_bonus[1, 0]
    with pytest.raises(ValueError, match="expected 2 x 2 step rows"):
        advantages_of(steps.iloc[:3], s)


def test_before_after_compares_each_adapter_with_the_base_model():
    episodes = pd.DataFrame(
        {
            "adapter": ["base"] * 4 + ["last"] * 4,
            "update": [0] * 4 + [2] * 4,
            "regret": [4.0, 5, 6, 5, 2, 3, 2, 3],
            "coverage": [0.2, 0.4, 0.2, 0.4] * 2,
            "invalid_steps": [2, 2, 0, 0, 0, 0, 0, 0],
            "horizon": 4,
            "seed": [7, 8, 9, 10] * 2,
            "model": "m",
        }
    )
    table = before_after(episodes).set_index(["adapter", "metric"])
    assert set(table["model"]) == {"m"}
    assert table.loc[("base", "regret"), "mean"] == 5.0 and math.isnan(table.loc[("base", "regret")].get("p", math.nan))
    assert table.loc[("last", "regret"), "mean"] == 2.5 and table.loc[("last", "regret"), "g"] < 0
    assert table.loc[("last", "regret"), "p"] < 0.01
    assert table.loc[("base", "invalid_share"), "mean"] == 0.25 and table.loc[("last", "invalid_share"), "mean"] == 0
    assert table.loc[("last", "coverage"), "p"] == pytest.approx(1.0) and table.loc[("last", "coverage"), "g"] == 0
    with pytest.raises(ValueError, match="'last' was not played on the base model's held-out seeds$"):
        before_after(episodes.assign(seed=[7, 8, 9, 10, 1, 2, 3, 4]))


def test_the_harder_control_says_why_nothing_moved():
    def played(base_invalid, trained_invalid):
        return pd.DataFrame(
            {
                "adapter": ["base"] * 4 + ["RLFT"] * 4,
                "update": [0] * 4 + [3] * 4,
                "regret": 5.0,
                "coverage": 0.2,
                "invalid_steps": base_invalid + trained_invalid,
                "horizon": 4,
                "seed": [7, 8, 9, 10] * 2,
                "model": "m",
            }
        )

    def log(*invalid):
        return pd.DataFrame({"step": range(1, len(invalid) + 1), "invalid_rate": invalid, "decisions": 8})

    lowered = harder_control_sentence("m", log(1.0, 0.5, 0.25), played([4, 4, 4, 3], [0, 1, 0, 0]))
    assert lowered.startswith("**m**: Positive control: the held-out invalid-action share went from 0.938")
    assert "learns what the penalty asks for within this budget." in lowered and "regret and coverage" not in lowered
    assert lowered.endswith("In training the invalid share went 1.000 → 0.250 over 3 updates.")
    stuck = harder_control_sentence("m", log(1.0, 1.0, 1.0), played([4] * 4, [4] * 4))
    assert (
        "did not lower it significantly within this budget." in stuck
        and "the penalty gave no signal about the format" in stuck
    )
    weak = harder_control_sentence("m", log(1.0, 0.75, 1.0), played([4, 4, 3, 4], [4, 3, 4, 4]))
    assert "Only 2 of its 24 training decisions were valid actions" in weak and "no signal" not in weak


def test_the_cot_ablation_flips_the_recipes_chain_of_thought():
    cpu = recipe("cpu")
    flipped = cot_ablation(cpu, 64)
    assert (cpu.style, flipped.style, flipped.max_new_tokens) == ("no_cot", "cot", 64)
    assert cot_ablation(flipped, 16).style == "no_cot" and cot_ablation(flipped, 16).model == cpu.model
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        cot_ablation(cpu, 0)
    # its passes: the profile's (smaller: the same gradient in more passes), else the recipe's
    assert (flipped.micro_batch, cot_ablation(cpu, 64, 10).micro_batch) == (cpu.micro_batch, 10)
    assert cot_ablation(cpu, 64, 10).minibatch == cpu.minibatch


def test_the_cot_ablation_sentence_gives_each_styles_change():
    rows = []
    for cot, trained in ((False, [3.0, 3.1, 2.9, 3.0]), (True, [1.0, 1.2, 0.9, 1.1])):
        rows += [
            {
                "adapter": "base",
                "update": 0,
                "cot": cot,
                "regret": r,
                "coverage": 0.2,
                "invalid_steps": 0,
                "horizon": 4,
                "seed": s,
                "model": "m",
            }
            for s, r in zip(range(4), [3.0, 3.2, 2.8, 3.0])
        ]
        rows += [
            {
                "adapter": "RLFT",
                "update": 2,
                "cot": cot,
                "regret": r,
                "coverage": 0.2,
                "invalid_steps": 0,
                "horizon": 4,
                "seed": s,
                "model": "m",
            }
            for s, r in zip(range(4), trained)
        ]
    sentence = cot_ablation_sentence(before_after(pd.DataFrame(rows), within=("cot",)))
    with_cot, without, paper = sentence.split("\n\n")
    assert with_cot.startswith("RLFT with CoT") and "regret 3.000 → 1.050 (lower, p = " in with_cot
    assert without.startswith("RLFT without CoT") and "regret 3.000 → 3.000 (no significant change" in without
    assert "Fig. 9b" in paper and paper.endswith(
        "Ours show that direction: RLFT lowers regret significantly with CoT and not without it."
    )
    flipped = cot_ablation_sentence(before_after(pd.DataFrame(rows).assign(cot=lambda d: ~d["cot"]), within=("cot",)))
    assert flipped.endswith("Ours show the opposite: RLFT lowers regret significantly without CoT and not with it.")


# -- on SmolLM2 ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_smoke_run_saves_an_adapter_and_a_log_row_per_update(bandit_smoke_run):
    from safetensors.torch import load_file

    settings, run, log = bandit_smoke_run
    assert list(log["step"]) == [1, 2] and run.steps_saved() == [1, 2]
    for update in (1, 2):
        assert file_hash(run.checkpoint(update)) == log.loc[log["step"] == update, "adapter_hash"].item()
        assert (run.checkpoint(update) / loop.OPTIMIZER_FILE).exists()
    tensors = load_file(run.checkpoint(2) / "adapter_model.safetensors")
    assert any(t.abs().max() > 0 for name, t in tensors.items() if "lora_B" in name)  # B starts at zero
    # the logged rollout summary, recomputed from the saved rows
    steps, episodes = run.rollouts("steps"), run.rollouts("episodes")
    for update, rows in steps.groupby("update"):
        row = log[log["step"] == update].iloc[0]
        assert len(rows) == settings.instances * settings.horizon
        assert row["invalid_rate"] == pytest.approx(1 - rows["valid"].mean())
        assert row["regret"] == pytest.approx(episodes[episodes["update"] == update]["regret"].mean())
        assert sorted(rows["seed"].unique()) == sorted(settings.update_seeds(update))
    assert np.isfinite(log[["loss", "kl", "grad_norm", "entropy", "clip_fraction", "seconds"]].to_numpy()).all()


@pytest.mark.slow
def test_rollouts_are_on_policy(bandit_smoke_run):
    _, run, log = bandit_smoke_run
    by_update = log.set_index("step")
    assert by_update.loc[2, "rollout_adapter_hash"] == by_update.loc[1, "adapter_hash"] == file_hash(run.checkpoint(1))
    episodes = run.rollouts("episodes")
    assert episodes.groupby("update")["adapter_hash"].unique().map(list).to_dict() == {
        u: [by_update.loc[u, "rollout_adapter_hash"]] for u in (1, 2)
    }
    # the trainer's log-probabilities of each sampled completion are the rollout's own
    tolerance = log["precision"].map(LOGPROB_GAP_TOLERANCE)  # float32's noise, or bfloat16's rounding
    assert (log["rollout_logprob_gap"] < tolerance).all()


def test_minibatches_cut_a_seeded_order_or_keep_the_rollout_whole():
    rows = list(range(10))
    cut = loop.minibatches(rows, 4, [0, 1, 0])
    assert [len(m) for m in cut] == [4, 4, 2] and sorted(sum(cut, [])) == rows
    assert cut == loop.minibatches(rows, 4, [0, 1, 0]) and cut != loop.minibatches(rows, 4, [0, 1, 1])
    assert loop.minibatches(rows, 0, [0, 1, 0]) == loop.minibatches(rows, 10, [0, 1, 0]) == [rows]


@pytest.mark.slow
def test_a_second_minibatch_of_the_same_rollout_clips(tmp_path, monkeypatch):
    # six decisions in minibatches of three: two optimiser steps; a large step makes the second
    # minibatch's ratio leave PPO's clip range (with one step per rollout the ratio is exactly 1).
    # The second step's old log-probabilities are the rollout's; without them, a pass before the
    # first step scores only the decisions the first step does not hold.
    scored, score = [], loop.Trainer._scored_once

    def counted(self, prompts, completions, rows, adapter):
        scored.append((len(rows), adapter))
        return score(self, prompts, completions, rows, adapter)

    monkeypatch.setattr(loop.Trainer, "_scored_once", counted)
    settings = recipe("smoke", learning_rate=0.05, updates=1)
    log = train(settings, tmp_path / "two", progress=False)
    assert log["optimizer_steps"].item() == 2 and log["clip_fraction"].item() > 0
    assert log["old_logprobs_from"].item() == ("the rollout" if log["precision"].item() == "float32" else "a pass")
    # the first step's own pass gives the rollout's log-probabilities, to the precision's noise
    assert log["rollout_logprob_gap"].item() <= LOGPROB_GAP_TOLERANCE[log["precision"].item()]
    assert [adapter for _, adapter in scored] == [False] + [True] * (log["old_logprobs_from"].item() == "a pass")
    scored.clear()
    passed = train(replace(settings, rollout_old_logprobs=False), tmp_path / "pass", progress=False)
    assert (passed["decisions"].item() - settings.minibatch, True) in scored
    assert passed["old_logprobs_from"].item() == "a pass"
    assert passed["clip_fraction"].item() == pytest.approx(log["clip_fraction"].item())
    scored.clear()
    whole = train(replace(settings, minibatch=0), tmp_path / "one", progress=False)
    assert whole["optimizer_steps"].item() == 1 and whole["clip_fraction"].item() == 0
    # one step takes every decision: nothing to score before it
    assert whole["old_logprobs_from"].item() == "none needed" and [adapter for _, adapter in scored] == [False]


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_log(bandit_smoke_run, resumes_to_the_same_log):
    settings, _, uninterrupted = bandit_smoke_run
    resumes_to_the_same_log(settings, train, uninterrupted)


@pytest.mark.slow
def test_a_record_without_checkpoints_replays_to_the_same_adapters(bandit_smoke_run, replays_to_the_same_adapters):
    replays_to_the_same_adapters(bandit_smoke_run, train)


@pytest.mark.slow
def test_held_out_evaluation_plays_each_adapter_on_the_same_instances(bandit_smoke_run):
    settings, run, log = bandit_smoke_run
    episodes, steps = evaluate_adapters(run.path, {"base": None, "last": 2}, instances=3, progress=False)
    assert sorted(episodes["adapter"].unique()) == ["base", "last"]
    for _, group in episodes.groupby("adapter"):
        assert list(group["seed"]) == [HELD_OUT_SEEDS + i for i in range(3)]
        assert (group["temperature"] == settings.eval_temperature).all()
    assert set(episodes.loc[episodes["adapter"] == "last", "adapter_hash"]) == {log["adapter_hash"].iloc[-1]}
    again, _ = evaluate_adapters(run.path, {"base": None, "last": 2}, instances=3, progress=False)  # from the stores
    pd.testing.assert_frame_equal(again.reset_index(drop=True), episodes.reset_index(drop=True))
    with pytest.raises(ValueError, match="holds 3 held-out episodes, not 4"):
        evaluate_adapters(run.path, {"base": None}, instances=4, progress=False)
    with pytest.raises(ValueError, match="no saved adapter of step 7"):
        evaluate_adapters(run.path, {"late": 7}, instances=3, progress=False)


@pytest.mark.slow
def test_the_benchmark_times_one_update_per_variant_with_the_same_loss():
    from paperlib.training.bench import RLFT_PHASES, RLFT_VARIANTS, bench_update, report_update

    settings = recipe("smoke")
    table = bench_update(settings, RLFT_VARIANTS["paths"], log=lambda line: None)
    assert list(table["variant"]) == ["every row whole", "shared prefix"]
    assert (table[list(RLFT_PHASES)] >= 0).all().all() and table["speedup"].iloc[0] == 1.0
    # the same seed, hence the same rollout; the shared prefix changes no number beyond rounding
    assert table["decisions"].nunique() == 1 and table["completion_tokens"].nunique() == 1
    assert table["loss"].iloc[1] == pytest.approx(table["loss"].iloc[0], abs=1e-5)
    assert table["grad_norm"].iloc[1] == pytest.approx(table["grad_norm"].iloc[0], rel=1e-4)
    assert "shared prefix" in report_update(settings, table)


@pytest.mark.slow
def test_the_passes_lever_cuts_a_minibatch_into_the_recipes_sorted_passes_with_the_same_gradient():
    from paperlib.training.bench import RLFT_VARIANTS, bench_update

    settings = recipe("smoke", micro_batch=1)  # minibatches of 3 decisions, one decision per pass
    table = bench_update(settings, RLFT_VARIANTS["passes"], log=lambda line: None)
    assert list(table["variant"]) == ["a pass per minibatch", "the recipe's passes"] and table["same_rollout"].all()
    assert table["loss"].iloc[1] == pytest.approx(table["loss"].iloc[0], abs=1e-5)
    assert table["grad_norm"].iloc[1] == pytest.approx(table["grad_norm"].iloc[0], rel=1e-4)


@pytest.mark.slow
def test_the_rollouts_own_log_probabilities_are_ppos_old_ones_with_the_same_loss_and_no_pass():
    from paperlib.training.bench import RLFT_VARIANTS, bench_update

    table = bench_update(recipe("smoke"), RLFT_VARIANTS["old"], log=lambda line: None)  # 2 minibatches an update
    assert list(table["variant"]) == ["not the rollout's", "the rollout's"] and table["same_rollout"].all()
    assert table["old_logprobs_from"].tolist() == ["a pass", "the rollout"]
    assert table["loss"].iloc[1] == pytest.approx(table["loss"].iloc[0], abs=1e-5)
    assert table["grad_norm"].iloc[1] == pytest.approx(table["grad_norm"].iloc[0], rel=1e-4)


def test_a_run_recorded_before_the_rollouts_old_log_probabilities_resumes_only_as_it_ran(tmp_path):
    s = recipe("smoke")
    assert s.rollout_old_logprobs
    RunDir(tmp_path).claim({k: v for k, v in s.config().items() if k != "rollout_old_logprobs"})  # as recorded then
    with pytest.raises(ValueError, match=r"holds another run \(its rollout_old_logprobs differ\)"):
        RunDir(tmp_path).claim(s.config(), s.defaults())
    assert type(s).of_run(tmp_path).rollout_old_logprobs is False  # what it ran with
    RunDir(tmp_path).claim(replace(s, rollout_old_logprobs=False).config(), s.defaults())
    assert RunDir(tmp_path).config()["rollout_old_logprobs"] is False
