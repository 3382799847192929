"""The claims schema: verdicts computed by one rule (its outcomes and gates: test_claims_rule.py),
one-line refusals of a bad table, the claims of notebooks 01, 11, 12 and 13 in the schema, and the
table notebook 99 collects."""

import pandas as pd
import pytest

from paperlib import claims
from paperlib.claims import COLUMNS, OURS, check_claims, claims_table, collect_claims, read_claims, write_claims
from paperlib.reports import n11_greediness, n12_frequency_bias, n13_knowing_doing, n99_claims


def rows(**changes):
    """Two claims on paper A's A18 and A05: one supported, one without a run of ours."""
    base = {
        "reported": ["A18", "A05"],
        "what": ["reward of a zero-action episode", "mean reward, N = 5"],
        "model": ["policy:no_action", "tiny-lm (free)"],
        "ours": [1.0, float("nan")],
        "effect_if": ["1.0", "below 0.5"],
        "rule": ["value", "below"],
        "reference": [1.0, 0.5],
        "source": "01_scripted_episodes.parquet",
    }
    return pd.DataFrame({**base, **changes})


def test_the_verdict_follows_from_the_rule_and_whether_we_have_a_number():
    assert claims.verdict("below", 0.3, reference=0.5) == "supports"
    assert claims.verdict("below", 0.7, reference=0.5) == "contradicts"
    assert claims.verdict("below", 0.45, 0.3, 0.6, reference=0.5) == "inconclusive"
    assert claims.verdict(None, 0.3) == "cannot test"
    assert claims.verdict("below", float("nan"), reference=0.5) == "cannot test"


def test_a_claims_table_has_the_schema_its_ids_and_the_paper_s_numbers():
    table = claims_table(rows(), "01_environment_and_reward", "smoke")
    assert list(table.columns) == list(COLUMNS)
    assert table["claim"].tolist() == ["01:A18:policy:no_action", "01:A05:tiny-lm (free)"]
    assert table["verdict"].tolist() == ["supports", "cannot test"]
    assert table["paper"].tolist() == ["A", "A"] and table["paper_value"].tolist() == ["1.0", "0.128"]
    assert table["ours_low"].isna().all() and table["note"].tolist() == ["", claims.NOT_RUN]
    assert table["rule"].tolist() == ["value", "below"] and table["p_holm"].isna().all()
    assert set(table["notebook"]) == {"01_environment_and_reward"} and set(table["profile"]) == {"smoke"}


def test_the_paper_s_value_defaults_to_its_range_and_joins_several_ids():
    table = claims_table(rows(reported=["A01", "B01/B02"], ours=[0.5, 0.3]), "11_x", "cpu")
    assert table["paper_value"].tolist() == ["0.45 to 0.87", "0.40 / 0.65"]
    assert table["paper"].tolist() == ["A", "B"]
    given = claims_table(rows(paper_value=["about 1", None]), "01_x", "cpu")
    assert given["paper_value"].tolist() == ["about 1", "0.128"]


@pytest.mark.parametrize(
    "fault, message",
    [
        (lambda t: t.drop(columns="verdict"), r"^claims table lacks the column 'verdict' \(a claims table has claim, "),
        (
            lambda t: t.assign(reported=["A18", "A99"]),
            r"^claims table: claim '01:A05:tiny-lm \(free\)' cites 'A99', "
            r"not an id of paper_reported.csv$",
        ),
        (lambda t: t.assign(reported=["A18", "B01/Z9"]), r"cites 'Z9'"),
        (
            lambda t: t.assign(claim=["01:A18:x", "01:A18:x"]),
            r"^claims table: the claim id '01:A18:x' appears more than once$",
        ),
        (lambda t: t.assign(verdict=["supports", "maybe"]), r"^claims table: verdict 'maybe' is not one of supports, "),
        (lambda t: t.assign(rule=["value", "roughly"]), r"^claims table: rule 'roughly' is not one of value, above, "),
    ],
)
def test_a_bad_table_is_refused_in_one_line(fault, message):
    table = claims_table(rows(), "01_environment_and_reward", "smoke")
    with pytest.raises(ValueError, match=message) as refused:
        check_claims(fault(table))
    assert "\n" not in str(refused.value)


def test_a_table_citing_an_unknown_id_is_refused_before_it_is_built():
    with pytest.raises(ValueError, match=r"cites 'B99', not an id of paper_reported.csv$"):
        claims_table(rows(reported=["A18", "B99"]), "11_x", "cpu")


def test_each_notebook_writes_its_own_file_and_reads_it_back(tmp_path):
    table = claims_table(rows(), "01_environment_and_reward", "smoke")
    assert write_claims(table, tmp_path) == tmp_path / "01_claims.parquet"
    pd.testing.assert_frame_equal(read_claims(tmp_path / "01_claims.parquet"), table)
    mixed = pd.concat([table, claims_table(rows(), "02_other", "smoke")], ignore_index=True)
    with pytest.raises(ValueError, match="^a claims file holds one notebook's claims, not 2 notebooks'$"):
        write_claims(mixed, tmp_path)
    table.drop(columns="note").to_parquet(tmp_path / "03_claims.parquet")
    with pytest.raises(ValueError, match=r"03_claims.parquet lacks the column 'note'"):
        read_claims(tmp_path / "03_claims.parquet")


def test_notebook_99_s_table_stacks_every_file_paper_a_first_and_counts_the_verdicts(tmp_path):
    write_claims(
        claims_table(
            rows(reported=["B03", "B04"], ours=[0.8, 0.45], ours_low=[0.7, 0.3], ours_high=[0.85, 0.6]),
            "11_bandit_greediness",
            "smoke",
        ),
        tmp_path,
    )
    write_claims(claims_table(rows(), "01_environment_and_reward", "smoke"), tmp_path)
    table = collect_claims(tmp_path)
    compared = table[table["notebook"] != "99_claims"]
    assert compared["claim"].tolist() == [
        "01:A18:policy:no_action",
        "01:A05:tiny-lm (free)",
        "11:B03:policy:no_action",
        "11:B04:tiny-lm (free)",
    ]
    # every other reported number is listed, with no number of ours, as cannot test
    left = table[table["notebook"] == "99_claims"]
    assert len(left) == 18 + 30 - 4 and set(left["verdict"]) == {"cannot test"} and left["ours"].isna().all()
    assert "A01" in set(left["reported"]) and not {"A05", "A18", "B03", "B04"} & set(left["reported"])
    assert table["paper"].tolist() == sorted(table["paper"])  # paper A first
    assert pd.read_csv(tmp_path / "claims.csv")["verdict"].tolist() == table["verdict"].tolist()
    assert n99_claims.contributors_sentence(table) == (
        "4 claims from 2 notebooks: `01_environment_and_reward` (2), "
        "`11_bandit_greediness` (2). Notebooks that wrote no claims file "
        "have none in the table; the 44 reported numbers that no notebook "
        "addresses are listed as cannot test."
    )
    assert n99_claims.paper_sentences(table).splitlines() == [
        "- **Paper A**: 2 claims on 2 of its 18 reported numbers; our run supports 1, contradicts 0, "
        "leaves 0 inconclusive and cannot test 1.",
        "- **Paper B**: 2 claims on 2 of its 30 reported numbers; our run supports 0, contradicts 1, "
        "leaves 1 inconclusive and cannot test 0.",
    ]
    assert n99_claims.paper_sentences(table[table["paper"] == "B"]).splitlines()[0] == (
        "- **Paper A**: no notebook has set our numbers beside its 18 reported numbers yet."
    )
    ours = compared.iloc[:1].assign(reported=OURS, verdict="inconclusive", notebook="05_interventions")
    assert n99_claims.paper_sentences(pd.concat([table, ours], ignore_index=True)).splitlines()[:2] == [
        "- **Paper A**: 2 claims on 2 of its 18 reported numbers; our run supports 1, contradicts 0, "
        "leaves 0 inconclusive and cannot test 1.",  # our own claims are not the paper's numbers
        "- **Ours, on what paper A proposes and did not run**: 1 claim; our run supports 0, contradicts 0, "
        "leaves 1 inconclusive and cannot test 0.",
    ]


def test_two_files_giving_one_claim_id_and_no_file_at_all_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^no claims file \(\[0-9\]\[0-9\]_claims.parquet\) under "):
        collect_claims(tmp_path)
    table = claims_table(rows(), "01_environment_and_reward", "smoke")
    write_claims(table, tmp_path)
    table.to_parquet(tmp_path / "02_claims.parquet")  # a copy under another notebook's name
    with pytest.raises(ValueError, match=r"the claim id '01:A18:policy:no_action' appears more than once$"):
        collect_claims(tmp_path)
    assert not (tmp_path / "claims.csv").exists()


def _bandit_steps(model, decision, cot, finals, valid):
    """Two-step runs on 10 arms, one per final coverage of ``finals``; ``valid``: every step's, or per step."""
    return pd.DataFrame(
        [
            {
                "agent": "llm",
                "model": model,
                "decision": decision,
                "noise": "low",
                "in_figure": True,
                "arms": 10,
                "cot": cot,
                "episode": episode,
                "turn": turn,
                "coverage": final if turn == 2 else 0.1,
                "valid": valid[turn - 1] if isinstance(valid, list) else valid,
            }
            for episode, final in enumerate(finals)
            for turn in (1, 2)
        ]
    )


def test_notebook_11_s_table_in_the_schema_keeps_every_row_and_gates_the_fallback_s_runs(tmp_path):
    greediness = pd.DataFrame(
        {
            "model": ["tiny-lm", "tiny-lm", "coder-lm"],
            "decision": ["constrained", "constrained", "free"],
            "id": ["B01/B02", "B04", "B03"],
            "claim": ["coverage after 50 steps, 10 arms, CoT", "coverage, 20 arms", "coverage without CoT, 10 arms"],
            "paper": ["0.40 (2B), 0.65 (9B, 27B)", "0.45", "0.25"],
            "ours": [0.4, float("nan"), 0.9],
            "the effect, if": ["below UCB's 1.00"] * 3,
            "shown": pd.array([True, pd.NA, True], dtype="boolean"),
        }
    )
    steps = pd.concat(
        [
            _bandit_steps("tiny-lm", "constrained", True, [0.3, 0.5, 0.3, 0.5], True),
            _bandit_steps("coder-lm", "free", False, [0.9, 0.9, 0.8, 1.0], [True, False]),
        ]
    )
    (tmp_path / "11_bandit_runs").mkdir()
    table = n11_greediness.greediness_claims_table(greediness, tmp_path / "11_bandit_runs", "smoke", steps=steps)
    assert table["claim"].tolist() == [
        "11:B01/B02:tiny-lm (constrained)",
        "11:B04:tiny-lm (constrained)",
        "11:B03:coder-lm (free)",
    ]
    assert table["what"].tolist() == greediness["claim"].tolist()
    assert table["paper_value"].tolist() == greediness["paper"].tolist()
    # the mean final coverage with its bootstrap interval over instances, against the paper's range 0.40-0.65
    first = table.iloc[0]
    assert first["ours"] == 0.4 and 0.3 <= first["ours_low"] < 0.4 < first["ours_high"] <= 0.5
    assert (first["reference"], first["reference_high"], first["verdict"]) == (0.4, 0.65, "supports")
    assert table["verdict"].tolist() == ["supports", "cannot test", "cannot test"]
    assert table["note"].iloc[1] == claims.NOT_RUN
    # half its steps the random fallback's: the free run is not the model's
    assert (
        table["note"]
        .iloc[2]
        .startswith("cannot test: gate 'own decisions': share of steps with a valid ACTION= 0.50, needs at least 0.8")
    )
    assert set(table["source"]) == {"11_bandit_runs/"} and set(table["notebook"]) == {"11_bandit_greediness"}


def test_notebook_12_s_table_becomes_three_claims_per_model(tmp_path):
    frequency_bias = pd.DataFrame(
        [
            {
                "model": "tiny-lm",
                "r": -0.3,
                "p": 0.0123,
                "paper r (2B / 27B)": "-0.67 / 0.61",
                "frequent": 0.4,
                "greedy": 0.35,
                "other": 0.25,
                "paper frequent (2B / 27B)": "0.96 / 0.14",
                "frequent, 0-10 repetitions": 0.6,
                "paper frequent 0-10 (2B)": "0.70",
                "cases": 100,
                "cases, 0-10 repetitions": 10,
                "shown: r < 0 and frequent > 0.5": False,
            }
        ]
    )
    (tmp_path / "12_frequency_bias_runs").mkdir()
    table = n12_frequency_bias.frequency_bias_claims_table(frequency_bias, tmp_path / "12_frequency_bias_runs", "smoke")
    assert table["reported"].tolist() == ["B06", "B07", "B18"]
    assert table["ours"].tolist() == [-0.3, 0.4, 0.6] and table["paper_value"].tolist() == ["-0.67", "0.96", "0.70"]
    assert table["rule"].tolist() == ["lower", "above", "above"]
    # B06: p 0.0123 adjusted alone (the only p of the family): 0.012, r < 0: supported.
    # B07: 40 of 100, Wilson [0.309, 0.498], wholly below 0.5. B18: 6 of 10, Wilson [0.313, 0.832], across it.
    assert table["p_holm"].iloc[0] == 0.012
    assert table[["ours_low", "ours_high"]].iloc[1].tolist() == [0.309, 0.498]
    assert table[["ours_low", "ours_high"]].iloc[2].tolist() == [0.313, 0.832]
    assert table["verdict"].tolist() == ["supports", "contradicts", "inconclusive"]
    assert table["note"].tolist() == [
        "paper 2B / 27B: -0.67 / 0.61",
        "100 cases; greedy 0.35, other 0.25; paper 2B / 27B: 0.96 / 0.14",
        "10 cases",
    ]
    assert set(table["source"]) == {"12_frequency_bias_runs/"}


def test_notebook_01_s_degenerate_maximum_is_one_claim_over_every_n():
    from paperlib.reports.n01_environment import degenerate_claims_table

    summary = pd.DataFrame(
        {"policy": ["no_action"] * 2 + ["waiter"], "n": [5, 10, 5], "reward": [1.0, 1.0, 0.4], "episodes": [30, 30, 30]}
    )
    table = degenerate_claims_table(summary, "data/01_scripted_episodes.parquet", "cpu")
    (row,) = table.to_dict("records")
    assert (row["reported"], row["ours"], row["verdict"]) == ("A18", 1.0, "supports")
    assert "N = 10: 1.000 over 30 episodes" in row["note"]
    short = degenerate_claims_table(summary.assign(reward=[1.0, 0.9, 0.4]), "x.parquet", "cpu")
    assert (short["ours"].item(), short["verdict"].item()) == (0.9, "contradicts")


def test_notebook_01_s_sentence_ranks_no_action_against_the_best_policy_that_eats():
    from paperlib.reports.n01_environment import degenerate_sentence

    summary = pd.DataFrame(
        {
            "policy": ["no_action", "waiter", "left_first"] * 2,
            "n": [5, 5, 5, 10, 10, 10],
            "reward": [1.0, 0.9, 0.0, 0.8, 0.9, 0.0],
            "reward_shaped": [0.0, 0.9, 0.0, 0.0, 0.9, 0.0],
            "meals": [0.0, 1.0, 0.0, 0.0, 1.0, 0.0],
        }
    )
    sentence = degenerate_sentence(summary)
    paper, shaped = sentence.split("Under the shaped reward")
    assert "N = 5: 1.000, the top score (the best policy that eats, `waiter`, 0.900)" in paper
    assert "N = 10: 0.800, below 1 of the 2 other policies" in paper
    assert "N = 5: 0.000, below 1 of the 2 other policies" in shaped


def test_notebook_13_s_runs_become_two_claims_each_gated_on_what_the_model_wrote():
    matrix = pd.DataFrame(
        {"optimal": [10.0, 5.0], "greedy": [60.0, 20.0], "other": [2.0, 3.0]},
        index=pd.Index(["correct", "wrong"], name="rationale"),
    )
    run = "llm/gemma2-27b/knowing_doing/free/tokens2048/k10/low/T50/M64"
    table = pd.DataFrame(
        [{"run": run, "steps": 3200, "wrote any UCB value": 0.95, "correct rationale": 0.72, "valid action": 1.0}]
    )
    claims_of = n13_knowing_doing.knowing_doing_claims_table(
        table, {run: matrix}, "data/13_knowing_doing_runs", "paper"
    )
    by_id = claims_of.set_index("reported")
    assert by_id.loc["B16", "ours"] == pytest.approx(72.0) and by_id.loc["B16", "verdict"] == "supports"
    assert by_id.loc["B16", "ours_low"] > 50  # 2304 of 3200 steps: the Wilson interval is far above half
    # with a correct rationale: greedy 60% of 3200 steps against optimal 10%: 1920 against 320
    assert by_id.loc["B10", "ours"] == 50.0 and by_id.loc["B10", "verdict"] == "supports"
    assert by_id.loc["B10", "test"] == "binomial, 2240 steps" and by_id.loc["B10", "p"] < 1e-100
    assert set(claims_of["model"]) == {"gemma2-27b (free)"}
    flipped = n13_knowing_doing.knowing_doing_claims_table(
        table.assign(**{"correct rationale": 0.0}),
        {run: matrix[["greedy", "optimal", "other"]].rename(columns={"greedy": "optimal", "optimal": "greedy"})},
        "x",
        "cpu",
    ).set_index("reported")
    assert list(flipped["verdict"]) == ["contradicts", "contradicts"]
    # a model that wrote no UCB value: nothing to read, whatever its shares say
    silent = n13_knowing_doing.knowing_doing_claims_table(
        table.assign(**{"wrote any UCB value": 0.0}), {run: matrix}, "x", "cpu"
    ).set_index("reported")
    assert list(silent["verdict"]) == ["cannot test", "cannot test"]
    assert silent.loc["B16", "note"].startswith(
        "cannot test: gate 'wrote what is measured': share of steps with a UCB value 0.00, needs at least 0.8"
    )
