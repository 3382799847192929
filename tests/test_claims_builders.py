"""Notebooks 14 and 16's claims under the verdict rule, on hand-made held-out games and episodes:
the gates on moves that were the fallback's, effects tested paired on the seeds both sides
played, and an adapter trained with several seeds (``train_seed``) pooled per seed."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from paperlib.reports import n14_rlft_bandits, n16_tictactoe

SETTINGS = SimpleNamespace(model="tiny-lm", cot=False, max_new_tokens=16)
CELLS = {"random": "random/legal/no_cot/16", "mcts": "mcts/legal/no_cot/16", "no_legal": "random/no_legal/no_cot/16"}


def _games(returns: dict, invalid: dict, train_seeds=(None,)):
    """Games of run "main": per (cell, adapter) its returns by game seed, and its invalid moves per game
    (of 4 moves each); the RLFT rows once per training seed (its returns shifted by the seed)."""
    rows = []
    for (cell, adapter), values in returns.items():
        for train_seed in train_seeds if adapter == "RLFT" else (None,):
            shift = 0.0 if train_seed is None else 0.1 * (train_seed - 1)
            for seed, value in enumerate(values):
                rows.append(
                    {
                        "run": "main",
                        "cell": CELLS[cell],
                        "adapter": adapter,
                        "seed": seed,
                        "return": value + (shift if adapter == "RLFT" else 0.0),
                        "moves": 4,
                        "invalid_moves": invalid[(cell, adapter)],
                        **({} if train_seed is None else {"train_seed": train_seed}),
                    }
                )
    return pd.DataFrame(rows)


def _table(games):
    """``table`` as notebook 16's (one row per run, cell, adapter and metric): only what the claims read."""
    rows = games.groupby(["run", "cell", "adapter"])["return"].agg(mean="mean", n="size").reset_index()
    return rows.assign(metric="return")


BASE = [1.0, -1.0, 0.0, 1.0, 0.0, -1.0, 1.0, 0.0] * 3  # 24 games against random


def test_the_base_model_s_games_played_by_the_fallback_cannot_be_tested():
    returns = {
        ("random", "base"): BASE,
        ("random", "RLFT"): [min(r + 1.0, 1.0) for r in BASE],  # every game one step better, where it can be
        ("mcts", "base"): [-1.0] * 24,
        ("mcts", "RLFT"): [-1.0] * 23 + [0.0],
        ("no_legal", "RLFT"): BASE,
    }
    invalid = {key: 0 for key in returns} | {("random", "base"): 4, ("mcts", "base"): 4}  # every base move invalid
    games = _games(returns, invalid)
    claims = n16_tictactoe.tictactoe_claims_table(_table(games), games, "main", SETTINGS, "x", "cpu")
    by_id = claims.set_index("reported")
    # the base model's every move was the random fallback's: B24 to B27 read the fallback, not the model
    for id_ in ("B24", "B25", "B26", "B27"):
        assert by_id.loc[id_, "verdict"] == "cannot test"
        assert "gate 'own decisions': base model's valid moves 0.00, needs at least 0.8" in by_id.loc[id_, "note"]
    # B28 reads the adapter's own moves on both sides: tested, paired by game seed
    with_legal = [min(r + 1.0, 1.0) for r in BASE]
    assert by_id.loc["B28", "ours"] == pytest.approx(round(np.mean(BASE) - np.mean(with_legal), 3))
    assert by_id.loc["B28", "p"] == pytest.approx(float(f"{st.ttest_rel(BASE, with_legal).pvalue:.2g}"))
    assert by_id.loc["B28", "test"].startswith("paired t, 24 pairs")
    assert by_id.loc["B28", "verdict"] == "supports"  # significantly lower without the legal moves
    # raw and Holm-adjusted p over the notebook's family of tests
    tested = claims["p"].notna() | claims["p_tost"].notna()
    assert (claims.loc[tested, "p_holm"] >= claims.loc[tested, "p"]).all()


def test_the_base_model_s_own_games_are_tested_and_the_paper_s_value_read_against_a_bounded_interval():
    returns = {
        ("random", "base"): BASE,
        ("random", "RLFT"): [min(r + 1.0, 1.0) for r in BASE],
        ("mcts", "base"): [-1.0] * 23 + [0.0],
        ("mcts", "RLFT"): [-1.0] * 24,
        ("no_legal", "RLFT"): [min(r + 1.0, 1.0) for r in BASE],
    }
    games = _games(returns, {key: 0 for key in returns})
    by_id = n16_tictactoe.tictactoe_claims_table(_table(games), games, "main", SETTINGS, "x", "cpu").set_index(
        "reported"
    )
    # B24: mean 0.125 of 24 games, its bootstrap interval inside [-1, 1]: the paper's 0.15 within it
    assert (
        by_id.loc["B24", "ours"] == 0.125 and -1 <= by_id.loc["B24", "ours_low"] < 0.15 < by_id.loc["B24", "ours_high"]
    )
    assert by_id.loc["B24", "verdict"] == "supports"
    # B26: -0.958, its interval within [-1, -0.875]: the paper's -0.95 inside
    assert -1.0 <= by_id.loc["B26", "ours_low"] and by_id.loc["B26", "ours_high"] <= -0.875
    assert by_id.loc["B25", "verdict"] == "supports"  # every game better or as good, paired
    assert by_id.loc["B27", "verdict"] == "inconclusive"  # one game worse of 24: not significant, not equivalent
    assert by_id.loc["B27", "note"].endswith("no standardised effect: the adapter's returns do not vary")
    assert by_id.loc["B28", "ours"] == 0 and by_id.loc["B28", "verdict"] == "inconclusive"  # no pair differs


def test_several_training_seeds_are_pooled_per_game_seed():
    returns = {
        ("random", "base"): BASE,
        ("random", "RLFT"): [min(r + 1.0, 1.0) for r in BASE],
        ("mcts", "base"): [-1.0] * 23 + [0.0],
        ("mcts", "RLFT"): [-1.0] * 24,
        ("no_legal", "RLFT"): BASE,
    }
    one = _games(returns, {key: 0 for key in returns})
    three = _games(returns, {key: 0 for key in returns}, train_seeds=(0, 1, 2))  # shifted -0.1, 0, +0.1
    assert set(three["train_seed"].dropna()) == {0, 2, 1}
    pooled = n16_tictactoe.tictactoe_claims_table(_table(three), three, "main", SETTINGS, "x", "cpu")
    single = n16_tictactoe.tictactoe_claims_table(_table(one), one, "main", SETTINGS, "x", "cpu")
    # the seeds' shifts cancel in the mean per game seed: the same pairs as one seed's
    assert pooled["ours"].tolist() == single["ours"].tolist() and pooled["p"].equals(single["p"])
    assert pooled.set_index("reported").loc["B25", "test"].startswith("paired t, 24 pairs")
    # beside the pooled test, each seed's own mean difference
    gain = single.set_index("reported").loc["B25", "ours"]
    assert (
        pooled.set_index("reported")
        .loc["B25", "note"]
        .endswith(f"per training seed: 0: {gain - 0.1:+.3f}, 1: {gain:+.3f}, 2: {gain + 0.1:+.3f}")
    )
    assert "per training seed" not in single.set_index("reported").loc["B25", "note"]


def _bandit_episodes(train_seeds=(None,)):
    rng = np.random.default_rng(3)
    instances = rng.uniform(0.2, 0.6, 16)  # instances that differ from one another
    rows = []
    for adapter, gain, invalid in (("base", 0.0, 1), ("RLFT", 0.1, 0), ("RLFT + bonus", 0.3, 0)):
        for train_seed in train_seeds if adapter != "base" else (None,):
            for seed, coverage in enumerate(instances):
                rows.append(
                    {
                        "adapter": adapter,
                        "seed": seed,
                        "coverage": min(coverage + gain + 0.01 * (seed % 3), 1.0),
                        "regret": 5 - 4 * coverage - gain,
                        "invalid_steps": invalid,
                        "horizon": 10,
                        **({} if train_seed is None else {"train_seed": train_seed}),
                    }
                )
    return pd.DataFrame(rows)


def test_rlft_on_the_bandits_is_tested_paired_by_instance_and_gated_on_own_actions():
    episodes = _bandit_episodes()
    claims = n14_rlft_bandits.rlft_claims_table(pd.DataFrame(), episodes, "x", "cpu", "tiny-lm").set_index("reported")
    assert claims.loc["B17", "ours"] == pytest.approx(0.1) and claims.loc["B17", "verdict"] == "supports"
    assert claims.loc["B30", "ours"] == pytest.approx(-0.1) and claims.loc["B30", "verdict"] == "supports"
    assert claims.loc["B22/B23", "ours"] == pytest.approx(0.2) and claims.loc["B22/B23", "verdict"] == "supports"
    assert all(test.startswith(("paired t, 16 pairs", "wilcoxon, 16 pairs")) for test in claims["test"])
    # the base model's actions mostly the fallback's: B17 and B30 read it, B22/B23 does not
    fallback = episodes.assign(invalid_steps=np.where(episodes["adapter"] == "base", 5, 0))
    gated = n14_rlft_bandits.rlft_claims_table(pd.DataFrame(), fallback, "x", "cpu", "m").set_index("reported")
    assert list(gated["verdict"]) == ["cannot test", "cannot test", "supports"]
    assert gated.loc["B17", "note"].startswith(
        "cannot test: gate 'own decisions': base's own actions 0.50, needs at least 0.8"
    )
    # three training seeds, each playing every instance: pooled per instance, the same 16 pairs
    seeds = n14_rlft_bandits.rlft_claims_table(pd.DataFrame(), _bandit_episodes((0, 1, 2)), "x", "cpu", "m")
    assert seeds.set_index("reported").loc["B17", "test"].startswith(claims.loc["B17", "test"][:18])
    assert seeds["ours"].tolist() == claims["ours"].tolist()


def test_paper_a_s_numbers_are_gated_on_the_model_s_own_calls_and_on_the_degenerate_maximum():
    from paperlib.philosophers import gap
    from paperlib.reports import n02_gap

    def cell(model, n, rewards, meals):
        return pd.DataFrame(
            {"model": model, "decision": "free", "n": n, "reward": rewards, "meals_total": meals, "deadlock": False}
        )

    episodes = pd.concat(
        [
            cell("qwen3-14b", 5, [0.1, 0.2, 0.1, 0.15] * 5, [1] * 20),  # acts, eats, scores low: A05's 0.128
            cell("mistral-small-24b", 5, [1.0] * 18 + [0.9, 0.8], [0] * 20),  # mostly idle at the maximum
        ]
    )
    table = gap.gap_table(episodes)
    rates = pd.DataFrame({"model": ["qwen3-14b", "mistral-small-24b"], "call_rate": [0.9, 0.95], "where": gap.GRID})
    claims = n02_gap.gap_claims_table(table, rates, "x", "paper", episodes=episodes).set_index("claim")
    a05 = claims.loc["02:A05:qwen3-14b (free)"]
    # the bootstrap interval of 20 rewards between 0.1 and 0.2, around 0.1375: the paper's 0.128 inside
    assert 0.1 <= a05["ours_low"] < 0.128 < a05["ours_high"] <= 0.2 and a05["verdict"] == "supports"
    a03 = claims.loc["02:A03:mistral-small-24b (free)"]
    assert a03["verdict"] == "cannot test"
    assert a03["note"].startswith(
        "cannot test: gate 'not at the degenerate maximum': share of episodes at 1.0 with no meal 0.90, needs at most 0.5"
    )
    # a paper model that mostly writes no call: its reward is the environment's, not its own
    quiet = rates.assign(call_rate=[0.3, 0.95])
    claims = n02_gap.gap_claims_table(table, quiet, "x", "paper", episodes=episodes).set_index("claim")
    assert claims.loc["02:A05:qwen3-14b (free)", "note"].startswith(
        "cannot test: gate 'own decisions': share of turns with a call 0.30, needs at least 0.8"
    )


def test_a_training_curve_of_several_seeds_is_read_on_their_pooled_episodes():
    from paperlib.reports.n03_grpo import curve_claims_table, pooled_over_seeds

    log = pd.DataFrame(
        {
            "step": [1, 2, 1, 2],
            "train_seed": [0, 0, 1, 1],
            "reward": "paper",
            "train_reward": [0.2, 0.5, 0.4, 0.3],
            "reward_std": [0.0, 0.1, 0.0, 0.1],
            "episodes": [2, 20, 2, 20],
            "meals": [1.0, 0.5, 0.0, 0.5],
        }
    )
    pooled = pooled_over_seeds(log).set_index("step")
    # step 1: episodes 0.2, 0.2, 0.4, 0.4 together: mean 0.3, sd sqrt(4 x 0.01 / 3)
    assert pooled.loc[1, "train_reward"] == pytest.approx(0.3)
    assert pooled.loc[1, "reward_std"] == pytest.approx(np.std([0.2, 0.2, 0.4, 0.4], ddof=1))
    assert pooled.loc[1, "episodes"] == 4 and pooled.loc[1, "meals"] == pytest.approx(0.5)
    assert pooled.loc[2, "train_reward"] == pytest.approx(0.4)
    claims = curve_claims_table(log, "x", "cpu", "m").set_index("reported")
    assert claims.loc["A14", "ours"] == pytest.approx(0.1)  # the mean curve rises: 0.3 then 0.4
    assert claims.loc["A14", "note"].endswith(
        "the mean curve of 2 training seeds, per training seed: 0: +0.300, 1: -0.100"
    )
    # each seed's own last step minus its highest earlier one: 0.5 - 0.2 and 0.3 - 0.4
    assert claims.loc["A14", ["seed_low", "seed_high"]].tolist() == [-0.1, 0.3]
    one = log[log["train_seed"] == 0]
    assert pooled_over_seeds(one) is one  # one seed: its own curve
