"""The verdict rule (paperlib.claims.verdict), written once: each of its four outcomes under each
kind of claim, each competence gate, the family adjustment, the equivalence test a claim of no
effect needs, paired designs tested paired, and intervals that stay within the possible range;
all on hand-made numbers whose answer is worked out by hand or by an independent method."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from paperlib import claims, stats
from paperlib.claims import GATES, NOT_DEGENERATE, OWN_DECISIONS, WROTE_MEASURED, claims_table, effect, verdict

NAN = math.nan


# -- the rule, outcome by outcome ------------------------------------------------------------


@pytest.mark.parametrize(
    "args, outcome",
    [
        # a paper's single number against our interval
        (dict(rule="value", ours=0.3, low=0.2, high=0.4, reference=0.25), "supports"),
        (dict(rule="value", ours=0.3, low=0.28, high=0.4, reference=0.25), "contradicts"),
        (dict(rule="value", ours=1.0, reference=1.0), "supports"),  # an exact number: equal
        (dict(rule="value", ours=0.9, reference=1.0), "contradicts"),
        # a paper's range against our interval: they meet, or they do not
        (dict(rule="value", ours=0.7, low=0.6, high=0.8, reference=0.4, reference_high=0.65), "supports"),
        (dict(rule="value", ours=0.1, low=0.05, high=0.15, reference=0.4, reference_high=0.65), "contradicts"),
        # a threshold: our interval wholly on the paper's side, wholly on the other, or across it
        (dict(rule="above", ours=0.7, low=0.6, high=0.8, reference=0.5), "supports"),
        (dict(rule="above", ours=0.3, low=0.2, high=0.4, reference=0.5), "contradicts"),
        (dict(rule="above", ours=0.55, low=0.4, high=0.7, reference=0.5), "inconclusive"),
        (dict(rule="below", ours=0.3, low=0.2, high=0.4, reference=0.5), "supports"),
        (dict(rule="below", ours=0.55, low=0.4, high=0.7, reference=0.5), "inconclusive"),
        (dict(rule="above", ours=2, reference=1.5), "supports"),  # an exact count
        (dict(rule="above", ours=1, reference=1.5), "contradicts"),
        # an effect: the sign and the test
        (dict(rule="higher", ours=0.2, p=0.01), "supports"),
        (dict(rule="higher", ours=-0.2, p=0.01), "contradicts"),  # significant, the other way
        (dict(rule="lower", ours=-0.2, p=0.01), "supports"),
        (dict(rule="higher", ours=0.01, p=0.6, p_tost=0.01), "contradicts"),  # equivalent: no effect of that size
        (dict(rule="higher", ours=0.2, p=0.2, p_tost=0.4), "inconclusive"),  # compatible with both
        (dict(rule="higher", ours=0.2, p=NAN), "inconclusive"),  # no test possible
        # a claim of no effect: only an equivalence test supports it
        (dict(rule="no effect", ours=0.01, p=0.7, p_tost=0.01), "supports"),
        (dict(rule="no effect", ours=0.01, p=0.7, p_tost=0.3), "inconclusive"),  # merely not significant
        (dict(rule="no effect", ours=0.01, p=0.7, p_tost=NAN), "inconclusive"),
        (dict(rule="no effect", ours=0.3, p=0.001, p_tost=0.9), "contradicts"),
        # several training seeds: a significant pooled difference counts only where every seed's has its sign
        (dict(rule="higher", ours=0.3, p=0.001, seed_low=0.1, seed_high=0.6), "supports"),
        (dict(rule="higher", ours=0.3, p=0.001, seed_low=0.0, seed_high=0.6), "inconclusive"),  # one seed flat
        (dict(rule="higher", ours=-0.2, p=0.001, seed_low=-0.28, seed_high=-0.08), "contradicts"),
        (dict(rule="higher", ours=-0.2, p=0.001, seed_low=-0.28, seed_high=0.05), "inconclusive"),
        (dict(rule="lower", ours=-0.2, p=0.001, seed_low=-0.3, seed_high=-0.1), "supports"),
        (dict(rule="no effect", ours=0.3, p=0.001, p_tost=0.9, seed_low=-0.1, seed_high=0.5), "inconclusive"),
        (dict(rule="no effect", ours=0.01, p=0.7, p_tost=0.01, seed_low=-0.1, seed_high=0.1), "supports"),
        (dict(rule="higher", ours=0.01, p=0.6, p_tost=0.01, seed_low=-0.1, seed_high=0.1), "contradicts"),
        # cannot test: no number, no rule, or a gate
        (dict(rule="value", ours=NAN, reference=0.25), "cannot test"),
        (dict(rule=None, ours=0.3), "cannot test"),
        (dict(rule="higher", ours=0.2, p=0.001, gate="gate 'own decisions': 0.00, needs at least 0.8"), "cannot test"),
    ],
)
def test_each_rule_reaches_each_of_its_outcomes(args, outcome):
    assert verdict(**args) == outcome


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="rule 'maybe' is not one of value, above, below, higher, lower, no effect"):
        verdict("maybe", 0.3)


# -- the gates -----------------------------------------------------------------------------------


def test_every_gate_is_named_with_a_threshold_and_its_source():
    assert {gate.name for gate in GATES} == {"own decisions", "wrote what is measured", "not at the degenerate maximum"}
    for gate in GATES:
        assert 0 < gate.threshold < 1 and len(gate.source) > 80  # a sentence on where the number comes from


@pytest.mark.parametrize(
    "gate, passing, failing, message",
    [
        (OWN_DECISIONS, 0.8, 0.0, "gate 'own decisions': base model's moves 0.00, needs at least 0.8"),
        (WROTE_MEASURED, 0.95, 0.79, "gate 'wrote what is measured': base model's moves 0.79, needs at least 0.8"),
        (NOT_DEGENERATE, 0.5, 1.0, "gate 'not at the degenerate maximum': base model's moves 1.00, needs at most 0.5"),
    ],
)
def test_a_gate_passes_at_its_threshold_and_names_itself_and_the_value_where_it_fails(gate, passing, failing, message):
    assert gate.check(passing, "base model's moves") == ""
    assert gate.check(failing, "base model's moves") == message
    assert gate.check(
        NAN
    ) == f"gate '{gate.name}': not measured, needs {'at least' if gate.at_least else 'at most'} " + (
        f"{gate.threshold:g}"
    )


def test_the_degenerate_share_counts_episodes_at_the_maximum_with_no_meal():
    episodes = pd.DataFrame({"reward": [1.0, 1.0, 0.999, 0.8, 1.0], "meals_total": [0, 2, 0, 0, 0]})
    assert claims.degenerate_share(episodes) == pytest.approx(3 / 5)  # rows 0, 2 and 4
    assert math.isnan(claims.degenerate_share(episodes.iloc[:0]))


def test_a_gated_row_cannot_be_tested_and_says_which_gate_and_the_value_first():
    rows = pd.DataFrame(
        {
            "reported": ["B24", "B26"],
            "what": "return",
            "model": ["m", "n"],
            "ours": [0.15, 0.15],
            "ours_low": [0.0, 0.0],
            "ours_high": [0.3, 0.3],
            "effect_if": "",
            "rule": "value",
            "reference": [0.15, -0.95],
            "gate": [OWN_DECISIONS.check(0.0, "base model's valid moves"), ""],
            "note": ["30 games", ""],
            "source": "x",
        }
    )
    table = claims_table(rows, "16_tictactoe", "cpu")
    assert table["verdict"].tolist() == ["cannot test", "contradicts"]
    assert table["note"].iloc[0] == (
        "cannot test: gate 'own decisions': base model's valid moves 0.00, needs at least 0.8; 30 games"
    )


def test_a_row_with_no_number_says_there_is_no_such_run():
    rows = pd.DataFrame(
        {
            "reported": ["A05"],
            "what": "w",
            "model": ["m"],
            "ours": [NAN],
            "effect_if": "",
            "rule": "value",
            "source": "",
        }
    )
    assert claims_table(rows, "02_x", "cpu")["note"].item() == claims.NOT_RUN


def test_seed_range_is_the_lowest_and_highest_seed_and_nothing_for_one_seed():
    assert claims.seed_range({0: 0.6, 1: 0.0, 2: 0.3}) == {"seed_low": 0.0, "seed_high": 0.6}
    assert all(math.isnan(v) for v in claims.seed_range({0: 0.6}).values())
    assert all(math.isnan(v) for v in claims.seed_range({}).values())


def test_a_row_whose_seeds_disagree_is_inconclusive_and_says_so_with_the_seeds_range_first():
    rows = pd.DataFrame(
        {
            "reported": ["B22/B23", "B17"],
            "what": "w",
            "model": ["m", "m"],
            "ours": [0.3, -0.215],
            "effect_if": "",
            "rule": ["higher", "higher"],
            "p": [1e-30, 1e-20],
            "seed_low": [0.0, -0.281],
            "seed_high": [0.6, -0.081],
            "note": ["RLFT 0.267, RLFT + bonus 0.567", ""],
            "source": "x",
        }
    )
    table = claims_table(rows, "14_rlft_bandits", "cpu")
    assert table["verdict"].tolist() == ["inconclusive", "contradicts"]
    assert table["note"].iloc[0] == (
        "inconclusive: the pooled difference is significant but not in every training seed "
        "(the seeds' own differences run from +0.000 to +0.600); RLFT 0.267, RLFT + bonus 0.567"
    )
    assert table["note"].iloc[1] == "" and table[["seed_low", "seed_high"]].iloc[1].tolist() == [-0.281, -0.081]


# -- the family, rounding -----------------------------------------------------------------------


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 of m = 3: 3 x 0.01 = 0.03; max(0.03, 2 x 0.03) = 0.06; max(0.06, 1 x 0.04) = 0.06
    assert np.allclose(stats.holm([0.01, 0.04, NAN, 0.03]), [0.03, 0.06, NAN, 0.06], equal_nan=True)


def test_a_notebook_s_tests_are_one_family_and_the_verdict_reads_the_adjusted_p():
    rows = pd.DataFrame(
        {
            "reported": ["B17", "B30", "B22/B23"],
            "what": "w",
            "model": ["m"] * 3,
            "ours": [0.2, -0.2, 0.1],
            "effect_if": "",
            "rule": ["higher", "lower", "higher"],
            "p": [0.03, 0.04, 0.001],
            "source": "x",
        }
    )
    table = claims_table(rows, "14_rlft_bandits", "cpu")
    assert table["p"].tolist() == [0.03, 0.04, 0.001]  # raw, kept
    assert table["p_holm"].tolist() == [0.06, 0.06, 0.003]
    # alone, 0.03 would support; adjusted over the notebook's three tests it does not
    assert table["verdict"].tolist() == ["inconclusive", "inconclusive", "supports"]
    alone = claims_table(rows.iloc[:1], "14_rlft_bandits", "cpu")
    assert alone["verdict"].item() == "supports" and alone["p_holm"].item() == 0.03


def test_stored_numbers_are_rounded_to_what_is_printed():
    rows = pd.DataFrame(
        {
            "reported": ["B17"],
            "what": "w",
            "model": ["m"],
            "ours": [0.123456789],
            "ours_low": [0.0123456],
            "ours_high": [0.98765],
            "effect_if": "",
            "rule": "higher",
            "p": [0.000123456],
            "p_tost": [0.55555],
            "source": "x",
        }
    )
    row = claims_table(rows, "14_x", "cpu").iloc[0]
    assert (row["ours"], row["ours_low"], row["ours_high"]) == (0.123, 0.012, 0.988)
    assert (row["p"], row["p_tost"], row["p_holm"], row["p_tost_holm"]) == (0.00012, 0.56, 0.00025, 0.56)


# -- effects: paired, equivalence, no variance ----------------------------------------------------


def test_a_paired_design_is_tested_paired():
    rng = np.random.default_rng(1)
    base = rng.normal(0, 1, 20)  # instances that differ a lot from one another
    adapter = base + 0.2 + rng.normal(0, 0.05, 20)  # the same instances, each a little higher
    paired, unpaired = effect(adapter, base, paired=True), effect(adapter, base, paired=False)
    assert paired["p"] == pytest.approx(st.ttest_rel(adapter, base).pvalue)
    assert paired["p"] < 1e-10 and unpaired["p"] > 0.2  # the pairing is what makes the gain visible
    assert paired["test"].startswith("paired t, 20 pairs") and unpaired["test"].startswith("welch, 20 and 20")
    assert paired["ours"] == pytest.approx(0.2, abs=0.05) and paired["ours_low"] > 0


def test_pairs_whose_differences_do_not_vary_fall_back_to_wilcoxon():
    p, test = stats.paired_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    assert test == "wilcoxon" and p == pytest.approx(2 / 2**6)  # every one of 6 signs positive, exact
    assert math.isnan(stats.paired_p([1.0, 2.0], [1.0, 2.0])[0])


def test_only_an_equivalence_test_supports_no_effect():
    x = np.tile([0.0, 1.0], 100)  # 200 pairs whose differences are tiny beside their spread
    y = x + np.tile([0.01, -0.01, 0.02, -0.02], 50)
    close = effect(y, x, paired=True)
    margin = claims.NULL_MARGIN_D * np.std(y - x, ddof=1)
    assert close["p_tost"] == pytest.approx(
        max(
            st.ttest_1samp(y - x, -margin, alternative="greater").pvalue,
            st.ttest_1samp(y - x, margin, alternative="less").pvalue,
        )
    )
    assert verdict("no effect", close["ours"], p=close["p"], p_tost=close["p_tost"]) == "supports"
    few = effect([0.1, 0.9, 0.4], [0.5, 0.2, 0.6], paired=True)  # three noisy pairs: nothing either way
    assert few["p"] > 0.05 and few["p_tost"] > 0.05
    assert verdict("no effect", few["ours"], p=few["p"], p_tost=few["p_tost"]) == "inconclusive"


def test_no_standardised_effect_where_a_side_does_not_vary():
    tested = effect([1.0] * 5, [0.8, 1.0, 0.9, 1.0, 0.7], paired=True, names=("adapter's rewards", "base's rewards"))
    assert tested["size"] == "no standardised effect: the adapter's rewards do not vary"
    assert effect([0.1, 0.3, 0.2], [0.1, 0.2, 0.0], paired=False)["size"].startswith("d = ")


# -- intervals within the possible range ------------------------------------------------------------


def test_intervals_never_leave_the_possible_range():
    almost_all = [1.0] * 29 + [0.9]  # a t interval would cross 1.0
    mean, low, high = stats.bootstrap_mean_ci(almost_all)
    assert 0.9 <= low <= mean <= high <= 1.0
    assert stats.bootstrap_mean_ci(almost_all) == (mean, low, high)  # seeded: the same every time
    share, low, high = stats.wilson_ci(30, 30)
    assert share == 1.0 and 0.8 < low < 1.0 and high == pytest.approx(1.0)
    returns = [-1.0] * 28 + [1.0, 0.0]
    _, low, high = stats.bootstrap_mean_ci(returns)
    assert -1.0 <= low and high <= 1.0
    difference, low, high = stats.bootstrap_difference_ci([1.0] * 10, [0.0] * 9 + [1.0])
    assert -1.0 <= low <= difference <= high <= 1.0


def test_mcnemar_reads_only_the_discordant_pairs():
    after = np.array([True] * 10 + [False] * 8 + [True] * 2)
    before = np.array([True] * 10 + [True] * 8 + [False] * 2)  # 8 pairs fell, 2 rose
    assert stats.mcnemar_p(after, before) == pytest.approx(st.binomtest(2, 10).pvalue)
    assert math.isnan(stats.mcnemar_p(after, after))


def test_paired_sides_pool_several_training_seeds_per_key():
    frame = pd.DataFrame(
        {
            "adapter": ["base"] * 3 + ["RLFT"] * 6,
            "seed": [0, 1, 2] * 3,
            "train_seed": [pd.NA] * 3 + [0] * 3 + [1] * 3,
            "coverage": [0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.7, 0.9, 0.3],
        }
    )
    treated, control = stats.paired_sides(frame, "adapter", "coverage", "RLFT", "base", ["seed"])
    assert treated.tolist() == pytest.approx([0.6, 0.7, 0.4]) and control.tolist() == [0.1, 0.2, 0.3]


def test_an_effect_with_no_games_on_a_side_is_no_number_and_cannot_be_tested():
    tested = effect([], [0.1, 0.2], paired=False)
    assert math.isnan(tested["ours"]) and math.isnan(tested["p"]) and tested["test"] == ""
    assert verdict("higher", tested["ours"], p=tested["p"]) == "cannot test"
