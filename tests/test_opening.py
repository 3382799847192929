"""How a notebook opens: the paper's numbers read from data/paper_reported.csv, the models that
stand in for the paper's with their sizes, the knobs it reads beside the paper profile's."""

import pandas as pd

from paperlib import paths, profiles
from paperlib.reports import opening


def test_the_paper_s_numbers_come_from_the_csv_with_their_ranges():
    reported = pd.read_csv(paths.PAPER_REPORTED)
    table = opening.paper_numbers(reported, ["A05", "A01"])
    assert table.index.tolist() == ["A05", "A01"]
    assert table.loc["A05", "value"] == "0.128" and table.loc["A01", "value"] == "0.45 to 0.87"
    assert table.loc["A05", "the paper reports"] == "Qwen3-14B base mean reward"


def test_stand_ins_name_each_model_with_its_size():
    cpu = profiles.get_profile("cpu")
    sentence = opening.stand_ins(cpu, "bandit_models")
    assert "gemma2-27b (27B)" in sentence and "stand in for the paper's" in sentence
    gap = opening.stand_ins(cpu, "gap_models")
    assert "smollm2-135m (135M)" in gap and "claude-opus-4.7 (unpublished)" in gap
    assert opening.stand_ins(profiles.get_profile("paper"), "bandit_models").startswith("`bandit_models`: the paper's")
    assert opening.size("qwen2.5-coder-0.5b") == "0.5B" and opening.size("policy:waiter") == "scripted"


def test_knobs_are_shown_beside_the_paper_profile_s():
    table = opening.knobs(profiles.get_profile("cpu"), ["env_ns", "gap_models"])
    assert table.loc["env_ns", "differs"] == "" and table.loc["gap_models", "differs"] == "yes"
    assert table.loc["gap_models", "paper"].startswith("claude-opus-4.7 (openai)")
    assert opening.knobs(profiles.get_profile("paper"), ["freq_repetitions"]).iloc[0, 0] == "0 to 100"
