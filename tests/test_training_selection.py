"""Checkpoint selection rules on hand-made training logs and validation tables, and the
null-result statistics (Welch's t-test, Hedges' g) against cases worked by hand."""

import math

import pandas as pd
import pytest

from paperlib import paths, stats
from paperlib.training.selection import RULES, best_train, best_val, last, select


def log(*rewards):
    return pd.DataFrame({"step": range(1, len(rewards) + 1), "train_reward": rewards})


def validation(table: dict[int, list[float]], column="reward"):
    return pd.DataFrame([{"step": step, column: value} for step, values in table.items() for value in values])


# The paper's shape: training reward peaks at step 9 of 16, then declines.
PAPER_SHAPE = log(*[0.10, 0.12, 0.15, 0.14, 0.18, 0.20, 0.22, 0.21, 0.30, 0.25, 0.24, 0.20, 0.19, 0.18, 0.15, 0.12])


def test_each_rule_on_the_papers_shape():
    val = validation({s: [0.1 * (s == 7) + 0.05, 0.1 * (s == 7) + 0.15] for s in range(1, 17)})
    assert last(PAPER_SHAPE) == 16
    assert best_train(PAPER_SHAPE) == 8  # the peak of row 9 was played by the adapter of step 8
    assert best_val(PAPER_SHAPE, val) == 7  # means 0.2 at step 7, 0.1 elsewhere
    assert [select(rule, PAPER_SHAPE, val) for rule in RULES] == [16, 8, 7]


def test_best_train_credits_each_rows_reward_to_the_adapter_that_played_it():
    # row 1 is the base model's rollout (highest here, but no saved adapter played it); row 3 was
    # played by the adapter of step 2; the last adapter (step 4) never played in training
    assert best_train(log(0.9, 0.1, 0.6, 0.2)) == 2
    assert best_train(log(0.1, 0.2, 0.3, 0.4)) == 3


def test_ties_go_to_the_earliest_step():
    assert best_train(log(0.2, 0.5, 0.1, 0.5)) == 1  # adapters 1 and 3 earned 0.5
    val = validation({1: [0.0, 1.0], 2: [0.5, 0.5], 3: [1.0, 0.0], 4: [0.2, 0.2]})  # means 0.5, 0.5, 0.5, 0.2
    assert best_val(log(0.1, 0.2, 0.3, 0.4), val) == 1


def test_one_step():
    one = log(0.3)
    assert last(one) == best_val(one, validation({1: [0.4]})) == 1
    with pytest.raises(ValueError, match="best_train needs two steps at least"):
        best_train(one)


def test_unordered_rows_and_another_column():
    shuffled = log(0.1, 0.9, 0.4).iloc[[2, 0, 1]]
    assert last(shuffled) == 3 and best_train(shuffled) == 1
    val = validation({1: [0.9], 2: [0.1], 3: [0.5]}, column="reward_shaped")
    assert best_val(shuffled, val, column="reward_shaped") == 1


def test_missing_training_rewards_are_skipped():
    assert best_train(log(0.4, math.nan, 0.2)) == 2
    with pytest.raises(ValueError, match="all missing"):
        best_train(log(math.nan, math.nan))


def test_a_log_with_missing_or_repeated_steps_is_refused():
    gap = pd.DataFrame({"step": [1, 2, 4], "train_reward": [0.1, 0.2, 0.3]})
    for rule in RULES:
        with pytest.raises(ValueError, match=r"not 1\.\.4 once each \(missing 3\)"):
            select(rule, gap, validation({1: [0.1], 2: [0.1], 4: [0.1]}))
    with pytest.raises(ValueError, match="a step repeats"):
        last(pd.DataFrame({"step": [1, 2, 2], "train_reward": [0.1, 0.2, 0.3]}))
    with pytest.raises(ValueError, match="empty"):
        last(log())


def test_best_val_needs_every_saved_step_and_only_those():
    with pytest.raises(ValueError, match="steps without validation episodes: 2, 3"):
        best_val(log(0.1, 0.2, 0.3), validation({1: [0.5]}))
    with pytest.raises(ValueError, match="steps the training log does not have: 4"):
        best_val(log(0.1, 0.2, 0.3), validation({1: [0.5], 2: [0.5], 3: [0.5], 4: [0.9]}))
    with pytest.raises(ValueError, match="needs a validation table"):
        best_val(log(0.1))
    with pytest.raises(ValueError, match="unknown selection rule 'best'"):
        select("best", log(0.1))


def test_hedges_g_worked_by_hand():
    # [1, 2, 3] vs [3, 4, 5]: means 2 and 4, both variances 1, pooled sd 1, d = -2,
    # correction 1 - 3 / (4 * 6 - 9) = 0.8, so g = -1.6
    assert stats.hedges_g([1, 2, 3], [3, 4, 5]) == pytest.approx(-1.6)
    # [0, 2] vs [1, 1, 4]: means 1 and 2, variances 2 and 3, pooled sd sqrt((2 + 2 * 3) / 3),
    # correction 1 - 3 / 11
    d = -1 / math.sqrt(8 / 3)
    assert stats.hedges_g([0, 2], [1, 1, 4]) == pytest.approx(d * (1 - 3 / 11))


def test_welch_worked_by_hand():
    # t = (2 - 4) / sqrt(1/3 + 1/3) = -sqrt(6), Welch's df = 4; Student's t CDF at 4 df is
    # 1/2 + t (t^2 + 6) / (2 (t^2 + 4)^(3/2))
    t, p = stats.welch([1, 2, 3], [3, 4, 5])
    assert t == pytest.approx(-math.sqrt(6))
    tail = 0.5 + t * (t * t + 6) / (2 * (t * t + 4) ** 1.5)
    assert p == pytest.approx(2 * tail)


def test_hedges_g_interval_worked_by_hand():
    """g = -1.6 for [1,2,3] vs [3,4,5] (n = 3 + 3): SE = sqrt(6/9 + 2.56/12) = sqrt(0.88)
    = 0.93808, so the 95% interval is -1.6 -+ 1.95996 * 0.93808 = [-3.43861, 0.23861]."""
    g, low, high = stats.hedges_g_ci([1, 2, 3], [3, 4, 5])
    assert g == pytest.approx(-1.6)
    assert (low, high) == (pytest.approx(-3.43861, abs=1e-4), pytest.approx(0.23861, abs=1e-4))


def test_compare_sets_each_adapter_against_the_base_on_the_same_seeds():
    from paperlib.philosophers.training import compare_by_n as compare
    from paperlib.training.selection import by_selection

    played = pd.DataFrame(
        {
            "adapter": ["base"] * 3 + ["step-2"] * 3,
            "step": [0] * 3 + [2] * 3,
            "n": 5,
            "seed": [0, 1, 2] * 2,
            "reward": [3, 4, 5, 1, 2, 3],
        }
    )
    episodes = by_selection(played, {"last": 2, "best_train": 2})
    table = compare(episodes)
    assert table["selection"].tolist() == ["last", "best_train"] and (table["step"] == 2).all()
    row = table.iloc[0]
    assert (row["mean"], row["base_mean"], row["difference"]) == (2, 4, -2)
    assert row["g"] == pytest.approx(-1.6) and row["p"] == pytest.approx(stats.welch([1, 2, 3], [3, 4, 5])[1])
    with pytest.raises(ValueError, match="'last' was not played on the base model's held-out seeds in n 5"):
        compare(episodes.drop(index=5))
    with pytest.raises(ValueError, match="no evaluation episodes of step 7"):
        by_selection(played, {"best_val": 7})


def test_the_curve_finds_the_peak_and_the_earlier_steps_that_beat_the_last():
    from paperlib.reports.n03_grpo import curve

    log = pd.DataFrame(
        {
            "step": [1, 2, 3, 4],
            "reward": "paper",
            "train_reward": [0.2, 0.5, 0.5, 0.3],
            "reward_std": [0.1, 0.2, 0.2, 0.1],
            "episodes": 4,
        }
    )
    c = curve(log)
    assert (c["peak_step"], c["last_step"], c["earlier_better"]) == (2, 4, [2, 3])
    assert c["drop_se"] == pytest.approx((0.2**2 / 4 + 0.1**2 / 4) ** 0.5)


def test_the_behaviour_sentence_names_the_degenerate_maximum_only_when_reached():
    from paperlib.reports.n03_grpo import behaviour_sentence

    log = pd.DataFrame(
        {
            "step": [2, 1],
            "train_reward": [1.0, 0.83],
            "valid_call_rate": [0.07, 0.94],
            "valid_share_mean": [0.0, 0.3],
            "invalid_action_rate": [0.2, 0.5],
            "meals": [0.0, 0.0],
            "deadlock_rate": [0.0, 0.17],
        }
    )
    sentence = behaviour_sentence(log)
    assert "From step 1 to step 2 the share of completions holding a tool call went 0.94 → 0.07" in sentence
    assert "the share of decisions with a valid action 0.30 → 0.00" in sentence
    assert "the deadlock rate 0.17 → 0.00: at the last step the training reward is the degenerate maximum" in sentence
    assert sentence.endswith("reached with no valid action: it calls few.")
    refused = behaviour_sentence(log.assign(valid_call_rate=[0.9, 0.94], invalid_action_rate=[1.0, 0.5]))
    assert refused.endswith("reached with no valid action: the rules refuse most of the actions it calls.")
    assert behaviour_sentence(log.assign(valid_share_mean=[0.2, 0.3])).endswith("reached without a meal.")
    assert "degenerate" not in behaviour_sentence(log.assign(meals=[0.4, 0.0]))


def test_the_curve_and_the_null_result_become_claims():
    from paperlib.philosophers.training import compare_by_n as compare
    from paperlib.reports.n03_grpo import curve_claims_table
    from paperlib.reports.n04_null_result import null_result_claims_table

    log = pd.DataFrame(
        {
            "step": [1, 2, 3, 4],
            "reward": "paper",
            "train_reward": [0.2, 0.5, 0.5, 0.3],
            "reward_std": [0.1, 0.2, 0.2, 0.1],
            "episodes": 40,
            "meals": 0.5,
        }
    )
    curve_claims = curve_claims_table(log, "data/03_training_log.parquet", "cpu", "m").set_index("reported")
    # last 0.3 against the best earlier step's 0.5: Welch t = -0.2 / sqrt(0.01/40 + 0.04/40) = -5.7
    assert curve_claims.loc["A14", "ours"] == -0.2 and curve_claims.loc["A14", "p"] < 1e-5
    assert curve_claims.loc["A14", "verdict"] == "supports"
    assert curve_claims.loc["A15", "ours"] == 2 and curve_claims.loc["A15", "note"] == "steps 2, 3"
    assert curve_claims.loc["A15", "verdict"] == "supports"
    rising = curve_claims_table(log.assign(train_reward=[0.1, 0.2, 0.3, 0.4]), "x", "cpu", "m").set_index("reported")
    assert list(rising["verdict"]) == ["contradicts", "contradicts"]  # the last step is significantly the highest
    plateau = curve_claims_table(log.assign(train_reward=[0.8, 1.0, 1.0, 1.0]), "x", "cpu", "m").set_index("reported")
    assert plateau.loc["A14", "ours"] == 0 and plateau.loc["A14", "verdict"] == "inconclusive"  # no decline, no test
    # a run that has stopped acting: at 1.0 with no meal in 3 of 4 steps
    idle = curve_claims_table(log.assign(train_reward=[0.8, 1.0, 1.0, 1.0], meals=0.0), "x", "cpu", "m")
    assert list(idle["verdict"]) == ["cannot test", "cannot test"]
    assert (
        idle["note"]
        .iloc[0]
        .startswith(
            "cannot test: gate 'not at the degenerate maximum': share of steps at 1.0 with no meal 0.75, needs at most 0.5"
        )
    )

    episodes = pd.DataFrame(
        {
            "selection": ["base"] * 3 + ["last"] * 3,
            "step": [0] * 3 + [16] * 3,
            "n": 5,
            "seed": [0, 1, 2] * 2,
            "reward": [0.1, 0.2, 0.3, 0.1, 0.25, 0.3],
            "meals_total": [1, 2, 0, 1, 1, 1],
            "valid_call_rate": 0.9,
            "decisions": 10,
        }
    )
    claims_of = null_result_claims_table(compare(episodes), "data/04_episodes.parquet", "cpu", "m").set_index(
        "reported"
    )
    # not significant is not no effect: without an equivalence test the null result is inconclusive
    assert claims_of.loc["A09", "p"] > 0.05 and claims_of.loc["A09", "verdict"] == "inconclusive"
    assert claims_of.loc["A10", "verdict"] == "supports"  # the paper's g = -0.11 within our g's interval
    assert claims_of.loc["A10", "ours_low"] < -0.11 < claims_of.loc["A10", "ours_high"]
    assert list(claims_of.loc[["A11", "A12"], "verdict"]) == ["cannot test", "cannot test"]  # no N = 10, 15 here
    fed = null_result_claims_table(compare(episodes), "x", "cpu", "m", episodes=episodes).set_index("reported")
    assert fed.loc["A09", "test"].startswith("paired t, 3 pairs") and fed.loc["A09", "verdict"] == "inconclusive"
    assert fed.loc["A09", "note"].endswith("meals per episode: base 1.00, adapter 1.00")
    # the adapter at the reward's maximum with no meal and almost no call: gated, on both counts
    idle = episodes.assign(
        reward=[0.1, 0.2, 0.3, 1.0, 1.0, 1.0],
        meals_total=[1, 2, 0, 0, 0, 0],
        valid_call_rate=[0.9] * 3 + [0.02] * 3,
    )
    gated = null_result_claims_table(compare(idle), "x", "cpu", "m", episodes=idle).set_index("reported")
    assert list(gated.loc[["A09", "A10"], "verdict"]) == ["cannot test", "cannot test"]
    assert gated.loc["A09", "note"].startswith(
        "cannot test: gate 'own decisions': adapter's turns with a call 0.02, needs at least 0.8; "
        "gate 'not at the degenerate maximum': adapter's episodes at 1.0 with no meal 1.00, needs at most 0.5"
    )
    assert "no standardised effect: the adapter's rewards do not vary" in gated.loc["A10", "note"]


def test_difference_p_falls_back_to_mann_whitney_only_where_welch_is_undefined():
    from scipy.stats import mannwhitneyu, ttest_ind

    from paperlib.stats import difference_p

    a, b = [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.5]
    assert difference_p(a, b) == (pytest.approx(ttest_ind(a, b, equal_var=False).pvalue), "welch")
    p, test = difference_p([1.0] * 30, [0.0] * 30)  # every move invalid before, none after
    assert test == "mann-whitney" and p == pytest.approx(mannwhitneyu([1.0] * 30, [0.0] * 30).pvalue) and p < 1e-10
    p, test = difference_p([1.0] * 3, [1.0] * 3)
    assert math.isnan(p) and test == "none: no variation"


def test_against_gives_the_difference_its_test_and_hedges_g():
    from paperlib.stats import against, hedges_g_ci

    a, b = [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.5]
    row = against(a, b)
    assert row["difference"] == pytest.approx(0.5 - 0.875) and row["test"] == "welch"
    assert (row["g"], row["g_low"], row["g_high"]) == pytest.approx(hedges_g_ci(a, b))
    separated = against([0.0] * 5, [1.0] * 5)  # a complete separation: Mann-Whitney, no g
    assert separated["test"] == "mann-whitney" and math.isnan(separated["g"]) and math.isnan(separated["g_low"])
    one_side = against([1.0] * 4, b)  # the adapter at a constant: a test, but no standardised effect
    assert one_side["test"] == "welch" and all(math.isnan(one_side[k]) for k in ("g", "g_low", "g_high"))


def test_the_null_result_sentence_names_a_mealless_higher_reward_and_the_test_used():
    from paperlib.philosophers.training import compare_by_n as compare
    from paperlib.reports.n03_grpo import control_sentence
    from paperlib.reports.n04_null_result import null_result_sentence

    reported = pd.read_csv(paths.PAPER_REPORTED)
    base = {"selection": "base", "step": 0, "n": 5, "reward": [0.6, 0.8, 0.7, 0.9], "meals_total": [1, 0, 2, 1]}
    stopped = {"selection": "last", "step": 16, "n": 5, "reward": [1.0] * 4, "meals_total": 0}  # acts no more
    episodes = pd.concat([pd.DataFrame(base), pd.DataFrame(stopped)], ignore_index=True).assign(seed=[0, 1, 2, 3] * 2)
    control = compare(episodes.assign(valid_share=[0.2, 0.3, 0.2, 0.3, 1.0, 1.0, 1.0, 1.0]), column="valid_share")
    sentence = null_result_sentence(compare(episodes), reported, "m", control, episodes)
    assert "N = 5: 0.750 → 1.000 (Welch p = " in sentence and "significantly higher" in sentence
    assert (
        "No philosopher ate in any episode of `last` at N = 5: a higher reward there is the paper reward's "
        "degenerate maximum" in sentence
    )
    eating = episodes.assign(meals_total=1)
    assert "degenerate" not in null_result_sentence(compare(eating), reported, "m", control, eating)
    separated = compare(episodes.assign(valid_share=[0.0] * 4 + [1.0] * 4), column="valid_share")
    assert "(Mann-Whitney, as neither side varies, p = " in control_sentence(separated)
    assert "no Hedges' g: a side's scores do not vary): significantly higher" in control_sentence(separated)
