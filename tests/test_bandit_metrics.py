"""Every bandit metric on hand-built cases whose answers are worked out in the comments."""

import math

import numpy as np
import pandas as pd
import pytest

from paperlib.bandits.env import BanditSpec
from paperlib.bandits.metrics import (
    classify_action,
    coverage,
    cumulative_regret,
    entropy_correlation,
    frequency_bias,
    frequency_bias_cases,
    knowing_doing,
    knowing_doing_matrix,
    parse_ucb_values,
    rationale_correct,
    strategy,
    strategy_shares,
    ucb_values,
)

INF = math.inf


def test_cumulative_regret_by_hand():
    # mu* = 0.9; the arms played lose 0.7, 0.4, 0, 0.7
    regret = cumulative_regret([[0.2, 0.5, 0.9]], [[0, 1, 2, 0]])
    np.testing.assert_allclose(regret, [[0.7, 1.1, 1.1, 1.8]])


def test_coverage_by_hand():
    np.testing.assert_allclose(
        coverage([[0, 0, 1, 0, 2], [3, 3, 3, 3, 3]], 4), [[0.25, 0.25, 0.5, 0.5, 0.75], [0.25] * 5]
    )


# -- frequency bias -----------------------------------------------------------------


def test_strategy_classes_by_hand():
    # counts (3, 1, 0): frequent = arm 0; means (0.2, 0.9): greedy = arm 1; arm 2 is other
    actions, rewards = [0, 0, 0, 1], [0.1, 0.2, 0.3, 0.9]
    assert [strategy(a, actions, rewards, 3) for a in range(3)] == ["frequent", "greedy", "other"]
    # arm 1 is both the most frequent and the best: greedy wins the tie
    assert strategy(1, [1, 1, 0], [0.8, 0.8, 0.1], 3) == "greedy"
    # no repetitions: arms 0 and 1 were played once each, both most frequent; arm 1 is greedy
    assert strategy(0, [0, 1], [0.1, 0.5], 3) == "frequent"


def test_frequency_bias_from_scores_by_hand():
    cases = pd.DataFrame(
        {"repetitions": [0, 1], "actions": [[0, 1], [0, 1, 1]], "rewards": [[0.9, 0.1], [0.9, 0.1, 0.2]]}
    )
    scores = np.log([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])
    result = frequency_bias(cases, scores, BanditSpec(3))
    # H(0.5, 0.25, 0.25) = 0.5 ln 2 + 2 * 0.25 ln 4 = 1.5 ln 2; H(uniform of 3) = ln 3
    np.testing.assert_allclose(result["entropy"], [1.5 * math.log(2), math.log(3)])
    # case 0 predicts arm 0: the best mean (0.9) -> greedy; case 1 ties -> argmax is arm 0 -> greedy too
    assert result["predicted"].tolist() == [0, 0] and result["strategy"].tolist() == ["greedy", "greedy"]
    np.testing.assert_allclose(result["probs"].iloc[0], [0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="shape"):
        frequency_bias(cases, scores[:, :2], BanditSpec(3))


def test_a_model_that_copies_the_last_action_is_all_frequent_and_certain():
    spec = BanditSpec(4)
    cases = frequency_bias_cases(spec, seed=5, lengths=[2, 3], repetitions=[0, 4])
    # a model with pure frequency bias: log-prob 0 for the last action, -50 for the others
    scores = np.array([[0.0 if a == actions[-1] else -50.0 for a in range(4)] for actions in cases["actions"]])
    result = frequency_bias(cases, scores, spec)
    assert result["predicted"].tolist() == [a[-1] for a in cases["actions"]]
    assert set(result["strategy"]) <= {"frequent", "greedy"}
    np.testing.assert_allclose(result["entropy"], 0.0, atol=1e-18)


def test_frequency_bias_cases_repeat_the_last_action():
    cases = frequency_bias_cases(BanditSpec(5), seed=0, histories=2)
    assert len(cases) == 9 * 2 * 101
    assert sorted(set(cases["length"])) == list(range(2, 11)) and cases["repetitions"].max() == 100
    for (length, _), group in cases.groupby(["length", "history"]):
        longest = group.iloc[-1]
        start, tail = longest["actions"][:length], longest["actions"][length:]
        assert len(tail) == 100 and set(tail) == {start[-1]}
        for _, case in group.iterrows():  # every r shares the same first steps and rewards
            assert case["actions"] == longest["actions"][: length + case["repetitions"]]
            assert case["rewards"] == longest["rewards"][: length + case["repetitions"]]


def test_strategy_shares_by_hand():
    result = pd.DataFrame(
        {"repetitions": [0, 5, 10, 95, 100], "strategy": ["frequent", "other", "greedy", "frequent", "frequent"]}
    )
    shares = strategy_shares(result)
    # 0-10 holds r = 0, 5; 10-20 holds r = 10; 90-100 holds r = 95 and 100 (the last window is closed)
    assert shares.index.tolist() == ["0-10", "10-20", "90-100", "all"]
    assert shares.loc["0-10"].tolist() == [0.5, 0.0, 0.5]
    assert shares.loc["10-20"].tolist() == [0.0, 1.0, 0.0]
    assert shares.loc["90-100"].tolist() == [1.0, 0.0, 0.0]
    assert shares.loc["all"].tolist() == pytest.approx([0.6, 0.2, 0.2])


def test_entropy_correlation_sign():
    result = pd.DataFrame({"repetitions": [0, 10, 20, 30], "entropy": [1.6, 1.2, 0.8, 0.4]})
    assert entropy_correlation(result)[0] == pytest.approx(-1.0)
    result["entropy"] = [0.1, 0.5, 0.4, 0.9]
    # Pearson: x centred (-15, -5, 5, 15), y centred (-0.375, 0.025, -0.075, 0.425):
    # Sxy = 5.625 - 0.125 - 0.375 + 6.375 = 11.5, Sxx = 500, Syy = 0.3275, r = 11.5 / sqrt(163.75) = 0.8987
    r, _ = entropy_correlation(result)
    assert r == pytest.approx(11.5 / math.sqrt(500 * 0.3275), rel=1e-9)


# -- knowing-doing ------------------------------------------------------------------


def test_ucb_values_by_hand():
    # counts (2, 1, 0), means (0.5, 0.9, -), t = 3, c = 0.5:
    # ln 3 = 1.098612: 0.5 + sqrt(0.274653) = 0.5 + 0.524074; 0.9 + sqrt(0.549306) = 0.9 + 0.741152; untried: inf
    np.testing.assert_allclose(ucb_values([2, 1, 0], [0.5, 0.9, 0.0], 3), [1.024074, 1.641152, INF], rtol=1e-6)


def test_classify_action_by_hand():
    counts, means = [2, 1, 0], [0.5, 0.9, 0.0]  # UCB (1.024, 1.641, inf), t = 3
    assert [classify_action(counts, means, a, 3) for a in range(3)] == ["other", "greedy", "optimal"]
    # Paper B's greedy is the tried arm with the highest UCB, not the highest mean: counts (10, 1, 0),
    # means (0.8, 0.7), t = 11: UCB0 = 0.8 + sqrt(0.5 ln 11 / 10) = 1.146, UCB1 = 0.7 + sqrt(0.5 ln 11) = 1.795
    assert classify_action([10, 1, 0], [0.8, 0.7, 0], 1, 11) == "greedy"
    assert classify_action([10, 1, 0], [0.8, 0.7, 0], 0, 11) == "other"
    # all tried, t = 2: UCB = 0.2 + 0.5887 = 0.789 and 0.6 + 0.5887 = 1.189; greedy = optimal counts optimal
    assert classify_action([1, 1], [0.2, 0.6], 1, 2) == "optimal"
    assert classify_action([1, 1], [0.2, 0.6], 0, 2) == "other"
    # nothing tried: every arm is infinite, so every action is optimal
    assert classify_action([0, 0], [0, 0], 1, 0) == "optimal"
    # a bigger c raises the bonus of the rarely tried arm: c = 0 makes it plain means
    assert classify_action([10, 1, 0], [0.8, 0.7, 0], 0, 11, c=0.0) == "greedy"


def test_parse_ucb_values():
    names = ("blue", "green", "red")
    text = (
        "UCB(a) = mean + bonus. <ucb_values>\n- **blue**: 0.5 + sqrt(0.5*ln(4)/2) = 1.09\n"
        "- green: inf (never pressed)\n* UCB(red) = 0.75\n</ucb_values>\nACTION=green"
    )
    np.testing.assert_array_equal(parse_ucb_values(text, names), [1.09, INF, 0.75])
    two_blocks = "<ucb_values>blue: 1</ucb_values> on second thought <ucb_values>blue: 2, red: infinity</ucb_values>"
    np.testing.assert_array_equal(parse_ucb_values(two_blocks, names), [2.0, np.nan, INF])
    truncated = "<UCB_VALUES> Blue=0.3; green=∞; red: 0.91 (pressed 2 times)"
    np.testing.assert_array_equal(parse_ucb_values(truncated, names), [0.3, INF, 0.91])
    table = "<ucb_values>\n| blue | 1.2e-1 |\n| green | infinite |\n</ucb_values>"
    np.testing.assert_array_equal(parse_ucb_values(table, names), [0.12, INF, np.nan])
    assert np.isnan(parse_ucb_values("blue: 0.4, no tags", names)).all()
    numbers = tuple(str(a) for a in range(11))
    values = parse_ucb_values("<ucb_values>arm 1: 0.2\narm 10: 0.9\n0: inf</ucb_values>", numbers)
    assert values[[0, 1, 10]].tolist() == [INF, 0.2, 0.9] and np.isnan(values[2:10]).all()


def test_rationale_correct_by_hand():
    counts, means = [2, 1, 0], [0.5, 0.9, 0.0]  # true UCB (1.024, 1.641, inf): arm 2 is best
    assert rationale_correct([1.02, 1.64, INF], counts, means, 3)
    assert not rationale_correct([1.02, 1.64, 0.9], counts, means, 3)  # ranks arm 1 first
    assert rationale_correct([np.nan, np.nan, INF], counts, means, 3)  # only the best arm given
    assert not rationale_correct([np.nan] * 3, counts, means, 3)  # no rationale
    # two untried arms share the top; inf for both is right, inf for a tried arm too is not
    assert rationale_correct([INF, INF, 0.5], [0, 0, 1], [0, 0, 0.5], 1)
    assert not rationale_correct([INF, INF, INF], [0, 0, 1], [0, 0, 0.5], 1)


def test_knowing_doing_walk_and_matrix_by_hand():
    # one instance, arms blue/green/red:
    # step 1, t=0: all untried; the rationale says inf for all (correct); blue is optimal
    # step 2, t=1, counts (1,0,0): true UCB (0.5, inf, inf); rationale tops green and red (correct);
    #   blue is the best tried arm -> greedy
    # step 3, t=2, counts (2,0,0): no tags -> wrong; red is untried -> optimal
    # step 4, t=3, counts (2,0,1), means (0.6, -, 0.2): UCB blue = 0.6 + 0.524 = 1.124, red = 0.2 + 0.741 = 0.941,
    #   green inf; the rationale tops blue (wrong); red is neither -> other
    steps = pd.DataFrame(
        {
            "episode": [0, 0, 0, 0],
            "turn": [1, 2, 3, 4],
            "action": [0, 0, 2, 2],
            "reward": [0.5, 0.7, 0.2, 0.3],
            "raw_completion": [
                "<ucb_values>blue: inf\ngreen: inf\nred: inf</ucb_values> ACTION=blue",
                "<ucb_values>blue: 0.5\ngreen: inf\nred: inf</ucb_values> ACTION=blue",
                "ACTION=red",
                "<ucb_values>blue: 1.12, green: 0.9, red: 0.94</ucb_values> ACTION=red",
            ],
        }
    )
    judged = knowing_doing(steps.iloc[::-1], ("blue", "green", "red"))  # any row order
    assert judged["rationale_correct"].tolist() == [True, True, False, False]
    assert judged["action_class"].tolist() == ["optimal", "greedy", "optimal", "other"]
    matrix = knowing_doing_matrix(judged)
    assert matrix.loc["correct"].tolist() == [25.0, 25.0, 0.0] and matrix.loc["wrong"].tolist() == [25.0, 0.0, 25.0]
    assert matrix.to_numpy().sum() == pytest.approx(100)
