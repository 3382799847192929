"""The tables of notebook 02, on rows worked out by hand."""

import numpy as np
import pandas as pd
import pytest

from paperlib import paths
from paperlib.philosophers import gap
from paperlib.philosophers.analysis import call_rates
from paperlib.philosophers.gap import GRID, PROBE, call_rate_table, gap_table, no_call_effect
from paperlib.reports import n02_gap
from paperlib.reports.n02_gap import action_shares, behaviour, paper_rows, what_this_shows


def test_paper_rows_are_the_reported_rewards_and_deadlock_rates_per_n():
    rows = paper_rows(pd.read_csv(paths.PAPER_REPORTED))
    by_id = rows.groupby("id")["n"].apply(tuple).to_dict()
    assert by_id == {
        "A01": (5,),
        "A02": (5,),
        "A03": (5,),
        "A04": (10, 15),
        "A05": (5,),
        "A06": (5,),
        "A07": (5, 10, 15),
        "A08": (5,),
        "A13": (5, 10, 15),
    }
    assert rows.set_index(["id", "n"]).loc[("A05", 5), "value"] == 0.128
    assert rows.set_index(["id", "n"]).loc[("A01", 5), ["low", "high"]].tolist() == [0.45, 0.87]


def test_call_rates_count_free_steps_with_a_tool():
    steps = pd.DataFrame(
        {
            "model": ["m"] * 5,
            "prompt_version": ["a", "a", "a", "b", "b"],
            "decision_mode": ["free", "free", "free", "free", "constrained"],
            "action": ["eat", "none", "think", "none", "eat"],
        }
    )
    rates = call_rates(steps).set_index("prompt_version")
    assert rates.loc["a", ["steps", "calls"]].tolist() == [3, 2] and rates.loc["a", "call_rate"] == pytest.approx(2 / 3)
    assert rates.loc["b", ["steps", "calls", "call_rate"]].tolist() == [1, 0, 0.0]  # the constrained step is left out
    assert rates.loc["a", "call_low"] < 2 / 3 < rates.loc["a", "call_high"]


def test_no_call_effect_splits_silent_episodes_from_the_rest():
    episodes = pd.DataFrame(
        {
            "model": ["m", "m", "m", "policy:no_action"],
            "policy": ["m", "m", "m", "no_action"],
            "decision": ["free", "free", "free", "scripted"],
            "n": [5, 5, 5, 5],
            "actions_total": [0, 3, 1, 0],
            "no_actions": [25, 22, 24, 25],
            "reward": [1.0, 0.5, 0.7, 1.0],
            "meals_total": [0, 1, 0, 0],
        }
    )
    table = no_call_effect(episodes).set_index("model")
    assert table.loc["m", ["episodes", "no_call_episodes"]].tolist() == [3, 1]
    assert table.loc["m", "no_action_share"] == pytest.approx(71 / 75)
    assert table.loc["m", ["reward_no_call", "reward_with_calls", "meals_with_calls"]].tolist() == pytest.approx(
        [1.0, 0.6, 0.5]
    )
    assert table.loc["policy:no_action", "reward_no_call"] == 1.0


# -- the closing paragraph of notebook 02, on hand-made grids ------------------------------


def _cell(model, decision, n, episodes=2, **values):
    """Episode rows of one cell; a list value gives each episode its own."""
    base = (
        dict(
            reward=1.0,
            meals_total=0,
            deadlock=False,
            deadlock_round=np.nan,
            actions_total=0,
            no_actions=5 * n,
            invalid_actions=0,
        )
        | values
    )
    return [
        {
            "model": model,
            "policy": model.removeprefix("policy:"),
            "decision": decision,
            "n": n,
            "episode": e,
            **{k: v[e] if isinstance(v, list) else v for k, v in base.items()},
        }
        for e in range(episodes)
    ]


def _steps(model, decision, actions, valid):
    return [
        {"model": model, "decision_mode": decision, "prompt_version": "p", "action": a, "valid": v}
        for a, v in zip(actions, valid)
    ]


def _shows(cells, steps, probe=None):
    episodes, steps = pd.DataFrame([row for cell in cells for row in cell]), pd.DataFrame(steps)
    rates = call_rate_table(steps if probe is None else pd.DataFrame(probe), steps)
    return what_this_shows(gap_table(episodes), episodes, steps, rates, paper_rows(pd.read_csv(paths.PAPER_REPORTED)))


def test_behaviour_counts_calls_valid_and_invalid_actions_and_degenerate_episodes():
    episodes = pd.DataFrame(
        _cell(
            "m",
            "free",
            5,
            reward=[1.0, 0.7],
            meals_total=[0, 1],
            actions_total=[4, 6],
            no_actions=[21, 19],
            invalid_actions=[1, 2],
        )
        + _cell("z", "free", 5, episodes=1)
        + _cell("policy:waiter", "scripted", 5)
    )
    table = behaviour(episodes).set_index("model")
    assert list(table.index) == ["m", "z"]  # scripted rows are left out
    assert table.loc["m", ["completions", "calls", "valid_actions", "with_meals", "degenerate"]].tolist() == [
        50,
        10,
        7,
        1,
        1,
    ]
    assert table.loc["m", ["call_rate", "valid_rate", "invalid_rate", "meals", "reward"]].tolist() == pytest.approx(
        [0.2, 0.14, 0.3, 0.5, 0.85]
    )
    assert np.isnan(table.loc["z", "invalid_rate"]) and table.loc["z", "degenerate"] == 1


def test_action_shares_and_call_rate_table():
    steps = pd.DataFrame(
        _steps("m", "constrained", ["eat", "think", "think", "eat", "think"], [True] * 5)
        + _steps("m", "free", ["none", "eat"], [False, True])
    )
    shares = action_shares(steps, "constrained")
    assert shares[["action", "share"]].values.tolist() == [["think", 0.6], ["eat", 0.4]]
    rates = call_rate_table(steps.iloc[5:6], steps)
    assert rates[["where", "calls", "steps"]].values.tolist() == [[PROBE, 0, 1], [GRID, 1, 2]]


def test_what_this_shows_a_degenerate_free_mode_and_deadlocking_constrained_mode():
    cells = [_cell("policy:no_action", "scripted", n) for n in (5, 10)]
    cells += [_cell("policy:waiter", "scripted", n, reward=0.9, meals_total=1, actions_total=20) for n in (5, 10)]
    cells += [_cell("small", "free", n, actions_total=1, no_actions=5 * n - 1, invalid_actions=1) for n in (5, 10)]
    cells += [
        _cell("small", "constrained", 5, reward=0.0, deadlock=True, deadlock_round=1, actions_total=5, no_actions=0),
        _cell(
            "small",
            "constrained",
            10,
            reward=[0.0, 1.0],
            deadlock=[True, False],
            deadlock_round=[2, np.nan],
            actions_total=50,
            no_actions=0,
            invalid_actions=30,
        ),
    ]
    cells += [
        _cell(
            "qwen-low",
            "free",
            n,
            reward=0.1,
            deadlock=True,
            deadlock_round=3,
            actions_total=15,
            no_actions=0,
            invalid_actions=10,
        )
        for n in (5, 10)
    ]
    steps = (
        _steps("small", "free", ["eat", "none"], [False, False])
        + _steps("small", "constrained", ["pick_up_left"] * 3 + ["pick_up_right"], [True, False, False, True])
        + _steps("qwen-low", "free", ["eat", "eat", "think"], [False, False, True])
    )
    text = _shows(cells, steps)
    assert text.startswith("**What this shows**")
    assert "`small` wrote a parseable call in 4 of its 150 grid completions (2.7%; probe: 50.0% with `p`)" in text
    assert "0.0% of its completions were valid actions and 100.0% of its calls were invalid" in text
    assert "Every episode scores the maximum 1.00 with zero meals: the paper's DeepSeek-R1-Distill case (A13" in text
    assert "`pick_up_left` 75%, `pick_up_right` 25% of its actions" in text and "never eats" in text
    assert (
        "deadlock rate 1.00 / 0.50, mean reward 0.000 / 0.500; 2 of its 3 deadlocks come in round 1; "
        "the deadlock rate falls as N grows." in text
    )
    assert "`qwen-low` plays free mode only." in text
    assert "It eats nothing, and 0 of its 4 episodes (0%) score the maximum 1.00" in text
    assert "66.7% of its calls invalid, most often `eat` (100% of them), 0.00 meals per episode" in text
    assert "scores 0.100 with deadlock rate 1.00, at or below the paper's Qwen3-14B (0.128, deadlock 0.87" in text
    assert "The paper reports 0.45–0.87 for the frontier models at N = 5 (deadlock 0.10–0.53" in text
    assert (
        "Our models do not show a coordination gap of the paper's shape: no cell eats in most episodes at the "
        "frontier's level (reward ≥ 0.45, deadlock ≤ 0.53); `small` (constrained) and `qwen-low` (free) deadlock "
        "like Qwen3-14B"
    ) in text
    assert "`small` (free) reaches the frontier's level while eating nothing in most episodes" in text
    assert (
        "(`waiter`: 1.00 meals per episode) score 0.900, below `no_action`'s 1.000: the degenerate maximum again."
        in text
    )


def test_what_this_shows_a_gap_of_the_papers_shape():
    cells = [
        _cell("policy:no_action", "scripted", 5),
        *(_cell("policy:waiter", "scripted", n, reward=1.0, meals_total=n // 5, actions_total=20) for n in (5, 10)),
        _cell("good", "free", 5, reward=0.8, meals_total=3, actions_total=25, no_actions=0),
        _cell("good", "constrained", 5, reward=0.9, meals_total=2, actions_total=25, no_actions=0),
        _cell(
            "weak",
            "free",
            5,
            reward=0.0,
            deadlock=True,
            deadlock_round=2,
            actions_total=10,
            no_actions=0,
            invalid_actions=5,
        ),
        _cell(
            "qwen-mini",
            "free",
            5,
            reward=[1.0, 0.98],
            meals_total=[0, 1],
            actions_total=9,
            no_actions=1,
            invalid_actions=6,
        ),
    ]
    steps = _steps("good", "constrained", ["eat", "think", "pick_up_left"], [True] * 3) + _steps(
        "qwen-mini", "free", ["eat", "eat", "pick_up_left", "think", "none"], [False, False, False, True, False]
    )
    text = _shows(cells, steps)
    assert "It eats in 2 of its 2 episodes; 0 (0%) score the maximum 1.00 with zero meals" in text
    assert "`good` acts on its own scores" in text and "`eat` 33%, `think` 33%, `pick_up_left` 33%" in text
    assert "eats 2.00 meals per episode" in text and "no episode deadlocks." in text
    assert "`weak` and `qwen-mini` play free mode only." in text
    assert "It eats in 1 of its 2 episodes; 1 (50%) score the maximum" in text
    assert (
        "`qwen-mini`, in free mode: a parseable call in 90.0% of its completions (18 of 20), 66.7% of its calls "
        "invalid, most often `eat` (67% of them), 0.50 meals per episode. At N = 5 it scores 0.990 with deadlock "
        "rate 0.00, above the paper's Qwen3-14B"
    ) in text
    assert (
        "Our models show a coordination gap of the paper's shape: `good` (free) and `good` (constrained) eat in "
        "most episodes at the frontier's level"
    ) in text and "; `weak` (free) deadlocks like Qwen3-14B" in text
    assert "`qwen-mini` (free) reaches the frontier's level while eating nothing" in text
    assert "(`waiter`: 1.00–2.00 meals per episode) score 1.000, not below `no_action`'s 1.000." in text


def test_what_this_shows_without_free_mode_n5_or_scripted_baselines():
    cells = [
        _cell(
            "solo", "constrained", n, reward=0.5, deadlock=d, deadlock_round=[1, 2], actions_total=3 * n, no_actions=0
        )
        for n, d in ((3, [True, False]), (4, True), (6, [False, True]))
    ]
    cells += [
        _cell("rising", "constrained", n, deadlock=d, deadlock_round=[4, np.nan], actions_total=3 * n, no_actions=0)
        for n, d in ((3, False), (4, [True, False]))
    ]
    steps = _steps("solo", "constrained", ["think"], [True]) + _steps("rising", "constrained", ["eat"], [False])
    text = _shows(cells, steps)
    assert "- *Free mode, the paper's protocol.* No model plays it in this run." in text
    assert "the deadlock rate does not move one way with N." in text
    assert "its one deadlock comes in round 4; the deadlock rate rises as N grows." in text
    assert "This run has no LLM cell at N = 5 to set beside them." in text and "scripted" not in text
    assert "free mode only" not in text and "Qwen-family" not in text


def test_what_this_shows_a_qwen_model_without_calls_and_no_constrained_mode():
    steps = _steps("qwen-zero", "free", ["none"], [False]) + _steps("idle", "free", ["none"], [False])
    text = _shows([_cell("qwen-zero", "free", 3), _cell("idle", "free", 5)], steps, probe=steps[:1])
    assert (
        "`qwen-zero` wrote a parseable call in 0 of its 30 grid completions (0.0%; probe: 0.0% with `p`); "
        "it took no action." in text
    )
    assert "`idle` wrote a parseable call in 0 of its 50 grid completions (0.0%); it took no action." in text
    assert "- *Constrained mode, ours.* No model plays it in this run." in text
    assert "(0 of 30), no call to judge, 0.00 meals per episode.\n- *Against the paper.*" in text
    assert text.endswith(
        "Ours at N = 5: `idle` (free) 1.000, deadlock 0.00, meals 0.00. Our models do not show a "
        "coordination gap of the paper's shape: no cell eats in most episodes at the frontier's level "
        "(reward ≥ 0.45, deadlock ≤ 0.53); no cell deadlocks like Qwen3-14B (reward below 0.45, "
        "deadlock above 0.53). `idle` (free) reaches the frontier's level while eating nothing in most "
        "episodes: the no-deadlock credit, not coordination."
    )


def _summary_row(model, n, reward, low, high, deadlock=0.0, meals=1.0, decision="free"):
    return {
        "model": model,
        "decision": decision,
        "n": n,
        "episodes": 30,
        "reward": reward,
        "reward_low": low,
        "reward_high": high,
        "deadlock_rate": deadlock,
        "deadlock_low": max(deadlock - 0.1, 0),
        "deadlock_high": min(deadlock + 0.1, 1),
        "meals": meals,
        "zero_meal_share": float(meals == 0),
    }


def test_gap_claims_test_the_paper_models_present_and_list_the_absent_ones():
    table = pd.DataFrame(
        [
            _summary_row("qwen3-14b", 5, 0.20, 0.10, 0.30, deadlock=0.5),  # A05: 0.128 inside; A06: 0.87 outside
            _summary_row("qwen3-14b", 10, 0.30, 0.20, 0.40),
            _summary_row("qwen3-14b", 15, 0.50, 0.40, 0.60),  # A07: outside 0.13-0.35
            _summary_row("qwen3-14b", 5, 0.90, 0.80, 1.00, decision="constrained"),  # not the paper's protocol
            _summary_row("gpt-5.4", 5, 0.60, 0.50, 0.70, deadlock=0.2),  # A01, A02 inside their ranges
            _summary_row("tiny-lm", 5, 1.0, 1.0, 1.0, meals=0.0),
            _summary_row("tiny-lm", 10, 1.0, 1.0, 1.0, meals=0.0),
            _summary_row("chatty-lm", 5, 1.0, 1.0, 1.0, meals=0.0),
        ]
    )
    rates = pd.DataFrame(
        {
            "model": ["qwen3-14b", "gpt-5.4", "tiny-lm", "chatty-lm"],
            "call_rate": [0.9, 1.0, 0.004, 0.5],
            "where": gap.GRID,
        }
    )
    claims = n02_gap.gap_claims_table(table, rates, "02_summary.parquet", "smoke").set_index("claim")
    verdicts = claims["verdict"].to_dict()
    assert verdicts["02:A05:qwen3-14b (free)"] == "supports"
    assert claims.loc["02:A05:qwen3-14b (free)", ["ours", "ours_low", "ours_high"]].tolist() == [0.20, 0.10, 0.30]
    assert verdicts["02:A06:qwen3-14b (free)"] == "contradicts"
    assert verdicts["02:A07:qwen3-14b (free)"] == "contradicts"
    assert claims.loc["02:A07:qwen3-14b (free)", ["ours", "ours_low", "ours_high"]].tolist() == [0.5, 0.4, 0.6]
    assert verdicts["02:A01:gpt-5.4 (free)"] == verdicts["02:A02:gpt-5.4 (free)"] == "supports"
    for absent in ("02:A01:grok-4.2", "02:A03:mistral-small-24b", "02:A13:deepseek-r1-distill-qwen-7b"):
        assert verdicts[absent] == "cannot test"
        assert "qwen3-14b, gpt-5.4, tiny-lm, chatty-lm" in claims.loc[absent, "note"]
    # A13's mechanism on every model below the call-rate threshold, and only on those
    assert verdicts["02:A13:tiny-lm (free)"] == "supports"
    assert "0.0040" in claims.loc["02:A13:tiny-lm (free)", "note"]
    assert "02:A13:chatty-lm (free)" not in verdicts


def test_a_silent_model_whose_interval_excludes_one_contradicts_a13():
    table = pd.DataFrame(
        [_summary_row("tiny-lm", 5, 1.0, 1.0, 1.0, meals=0.0), _summary_row("tiny-lm", 10, 0.9, 0.8, 0.95, meals=0.0)]
    )
    rates = pd.DataFrame({"model": ["tiny-lm"], "call_rate": [0.0], "where": gap.GRID})
    claims = n02_gap.gap_claims_table(table, rates, "02_summary.parquet", "smoke").set_index("claim")
    assert claims.loc["02:A13:tiny-lm (free)", ["ours", "verdict"]].tolist() == [0.9, "contradicts"]
    # the lowest cell's interval reaches 1.0: compatible with the paper's 1.0
    reaching = table.assign(reward_high=[1.0, 1.0])
    claims = n02_gap.gap_claims_table(reaching, rates, "02_summary.parquet", "smoke").set_index("claim")
    assert claims.loc["02:A13:tiny-lm (free)", "verdict"] == "supports"


def test_a_model_plays_only_the_table_sizes_the_profile_names_for_it(tmp_path, monkeypatch):
    from dataclasses import replace

    from scripted_backend import ScriptedBackend

    import paperlib.backends as backends
    from paperlib import profiles

    class Silent(ScriptedBackend):  # writes no call, every turn
        def generate(self, prompts, **options):
            self.texts = ["I think."] * len(prompts)
            return super().generate(prompts, **options)

    monkeypatch.setattr(backends, "make_backend", lambda kind, model, **options: Silent())
    settings = replace(
        profiles.get_profile("smoke"),
        gap_models=(("every-n", "hf"), ("five-only", "hf")),
        gap_policies=("no_action",),
        gap_ns=(5, 6),
        gap_decisions=("free",),
        gap_model_ns={"five-only": (5,)},
    )
    assert settings.gap_ns_of("five-only") == (5,) and settings.gap_ns_of("every-n") == (5, 6)
    result = gap.run_gap(settings, 0, tmp_path, log=lambda line: None)
    played = result["episodes"].groupby("model")["n"].unique().map(sorted)
    assert played.to_dict() == {"every-n": [5, 6], "five-only": [5], "policy:no_action": [5, 6]}
    assert sorted(result["steps"].loc[result["steps"]["model"] == "five-only", "n"].unique()) == [5]


def test_the_gap_figure_names_a_model_that_played_fewer_table_sizes():
    import matplotlib.pyplot as plt

    from paperlib import plots

    rows = [("policy:waiter", "scripted", n) for n in (5, 10)] + [("big-lm", "free", 5), ("small-lm", "free", 5)]
    rows += [("small-lm", "free", 10)]
    table = pd.DataFrame(rows, columns=["model", "decision", "n"]).assign(
        reward=0.5, reward_low=0.4, reward_high=0.6, deadlock_rate=0.1, deadlock_low=0.0, deadlock_high=0.3, meals=1.0
    )
    fig = plots.coordination_gap(table, paper_rows(pd.read_csv(paths.PAPER_REPORTED)).iloc[:0])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("big-lm" in label and label.endswith("(N = 5 only)") for label in labels), labels
    assert not any("only" in label for label in labels if "big-lm" not in label), labels
    plt.close(fig)
