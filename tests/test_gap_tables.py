"""The tables of notebook 02, on rows worked out by hand."""

import pandas as pd
import pytest

from paperlib import paths
from paperlib.philosophers.analysis import call_rates
from paperlib.philosophers.gap import no_call_effect, paper_rows


def test_paper_rows_are_the_reported_rewards_and_deadlock_rates_per_n():
    rows = paper_rows(pd.read_csv(paths.PAPER_REPORTED))
    by_id = rows.groupby("id")["n"].apply(tuple).to_dict()
    assert by_id == {"A01": (5,), "A02": (5,), "A03": (5,), "A04": (10, 15), "A05": (5,), "A06": (5,),
                     "A07": (5, 10, 15), "A08": (5,), "A13": (5, 10, 15)}
    assert rows.set_index(["id", "n"]).loc[("A05", 5), "value"] == 0.128
    assert rows.set_index(["id", "n"]).loc[("A01", 5), ["low", "high"]].tolist() == [0.45, 0.87]


def test_call_rates_count_free_steps_with_a_tool():
    steps = pd.DataFrame({"model": ["m"] * 5, "prompt_version": ["a", "a", "a", "b", "b"],
                          "decision_mode": ["free", "free", "free", "free", "constrained"],
                          "action": ["eat", "none", "think", "none", "eat"]})
    rates = call_rates(steps).set_index("prompt_version")
    assert rates.loc["a", ["steps", "calls"]].tolist() == [3, 2] and rates.loc["a", "call_rate"] == pytest.approx(2 / 3)
    assert rates.loc["b", ["steps", "calls", "call_rate"]].tolist() == [1, 0, 0.0]  # the constrained step is left out
    assert rates.loc["a", "call_low"] < 2 / 3 < rates.loc["a", "call_high"]


def test_no_call_effect_splits_silent_episodes_from_the_rest():
    episodes = pd.DataFrame({
        "model": ["m", "m", "m", "policy:no_action"], "policy": ["m", "m", "m", "no_action"],
        "decision": ["free", "free", "free", "scripted"], "n": [5, 5, 5, 5],
        "actions_total": [0, 3, 1, 0], "no_actions": [25, 22, 24, 25], "reward": [1.0, 0.5, 0.7, 1.0],
        "meals_total": [0, 1, 0, 0]})
    table = no_call_effect(episodes).set_index("model")
    assert table.loc["m", ["episodes", "no_call_episodes"]].tolist() == [3, 1]
    assert table.loc["m", "no_action_share"] == pytest.approx(71 / 75)
    assert table.loc["m", ["reward_no_call", "reward_with_calls", "meals_with_calls"]].tolist() == pytest.approx([1.0, 0.6, 0.5])
    assert table.loc["policy:no_action", "reward_no_call"] == 1.0
