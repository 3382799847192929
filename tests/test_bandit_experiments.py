"""The runs behind notebooks 11-13: which runs a profile makes, resuming, summaries and claims."""

from dataclasses import replace

import pandas as pd
import pytest

from paperlib import profiles
from paperlib.bandits import experiments
from paperlib.bandits.experiments import Run


@pytest.mark.parametrize("name", ["smoke", "cpu", "paper"])
def test_every_profile_makes_distinct_runs(name):
    settings = profiles.get_profile(name)
    runs = experiments.greediness_runs(settings)
    assert len({run.id for run in runs}) == len(runs)
    llm = [run for run in runs if run.agent == "llm"]
    assert {run.model for run in llm} == set(settings.bandit_models)
    assert {run.decision for run in llm} == set(settings.bandit_decisions)
    assert all(run.instances == settings.bandit_llm_instances for run in llm)
    kd = experiments.knowing_doing_runs(settings)
    assert all(run.style == "knowing_doing" and run.max_new_tokens == settings.kd_tokens for run in kd)


def test_the_paper_profile_is_the_papers_setting():
    paper = profiles.get_profile("paper")
    runs = experiments.greediness_runs(paper)
    assert {run.model for run in runs if run.agent == "llm"} == {"gemma2-2b", "gemma2-9b", "gemma2-27b"}
    assert {run.instances for run in runs} == {64} and {run.horizon for run in runs} == {50}
    assert {run.max_new_tokens for run in runs if run.cot} == {256} and paper.kd_tokens == 2048
    assert paper.bandit_figure_decision == "free"


def test_run_ids_name_what_changes_the_rollouts():
    run = Run("llm", 10, "low", 8, 50, "gemma3-270m", cot=True, decision="constrained", max_new_tokens=8)
    assert run.id == "llm/gemma3-270m/cot/constrained/tokens8/k10/low/T50/M8"
    assert replace(run, cot=False, max_new_tokens=None).id == "llm/gemma3-270m/no_cot/constrained/tokens16/k10/low/T50/M8"
    assert Run("ucb", 5, "high", 64, 50).id == "ucb/k5/high/T50/M64"


def test_run_all_saves_and_resumes(tmp_path):
    runs = [Run(agent, 5, "low", 3, 10) for agent in ("random", "ucb")]
    episodes, steps = experiments.run_all(runs, tmp_path, backend_of=None)
    assert set(episodes["run"]) == {r.id for r in runs} and len(steps) == 2 * 3 * 10
    parts = sorted((tmp_path / "episodes").iterdir())
    again, _ = experiments.run_all(runs[:1], tmp_path, backend_of=None)  # nothing left to play
    assert sorted((tmp_path / "episodes").iterdir()) == parts and set(again["run"]) == {runs[0].id}
    pd.testing.assert_frame_equal(again, episodes[episodes["run"] == runs[0].id].reset_index(drop=True))


def test_summary_and_claims_on_baselines(tmp_path):
    settings = profiles.get_profile("smoke")
    runs = [Run(agent, 10, "low", 8, 50) for agent in ("random", "ucb", "greedy")]
    episodes, steps = experiments.run_all(runs, tmp_path, backend_of=None)
    summary = experiments.summarise(episodes, "constrained")
    assert summary.set_index("label").loc["ucb", "coverage"] == 1.0  # UCB tries every arm first
    assert summary["in_figure"].all() and (summary["valid"] == 1.0).all()
    steps = experiments.with_runs(steps, summary)
    assert experiments.stagnation_step(steps[steps["label"] == "ucb"].groupby("turn")["coverage"].mean()) == 9
    claims = experiments.greediness_claims(summary, steps, settings, experiments.paper_numbers())
    assert claims["ours"].isna().all() and claims["shown"].isna().all()  # no LLM run: nothing to compare, and said so
    assert set(claims["id"]) == {"B01/B02", "B03", "B04", "B05"}


def test_the_papers_knowing_doing_matrix():
    matrix = experiments.paper_knowing_doing(experiments.paper_numbers())
    assert matrix.loc["correct"].tolist() == [21.6, 58.1, 10.6] and matrix.loc["wrong"].tolist() == [0.6, 7.2, 2.0]
