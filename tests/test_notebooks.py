"""Each notebook runs under papermill on the smoke profile and writes what it promises;
what it prints names no directory of this machine's checkout."""

import pandas as pd
import pytest

from paperlib import paths, pipeline


def _assert_no_checkout_path(executed):
    for path in (executed, executed.with_suffix(".html")):
        assert str(paths.ROOT) not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.slow
def test_01_environment_and_reward(tmp_path, capsys):
    (notebook,) = pipeline.notebooks(["01"])
    parameters = {"data_dir": str(tmp_path / "data"), "figures_dir": str(tmp_path / "figures")}
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    assert executed.exists() and executed.with_suffix(".html").exists()
    _assert_no_checkout_path(executed)
    table = pd.read_parquet(tmp_path / "data" / "01_scripted_summary.parquet")
    no_action = table[table["policy"] == "no_action"]
    assert (no_action["reward"] == 1.0).all() and (no_action["reward_shaped"] == 0.0).all()
    assert (tmp_path / "figures" / "01_reward_vs_meals.png").stat().st_size > 10_000

    capsys.readouterr()
    pipeline.execute(notebook, "smoke", out_dir=tmp_path / "again", parameters=parameters, generate=False)
    assert "generate = False: reading " in capsys.readouterr().out
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "data" / "01_scripted_summary.parquet"), table)


def _run_smoke(number, tmp_path):
    (notebook,) = pipeline.notebooks([number])
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path,
                                parameters={"data_dir": str(tmp_path / "data"), "figures_dir": str(tmp_path / "figures"),
                                            "rollouts_dir": str(tmp_path / "rollouts")})
    assert executed.with_suffix(".html").exists()
    _assert_no_checkout_path(executed)
    return tmp_path / "data", tmp_path / "figures"


@pytest.mark.slow
def test_11_bandit_greediness(tmp_path):
    from paperlib.data import RolloutStore

    data, figures = _run_smoke("11", tmp_path)
    episodes = RolloutStore(data / "11_bandit_runs").episodes()
    llm = episodes[episodes["agent"] == "llm"]
    assert set(llm["decision"]) == {"free", "constrained"} and set(llm["cot"]) == {True, False}
    assert (llm.loc[llm["decision"] == "constrained", "invalid_steps"] == 0).all()
    assert {"random", "greedy", "epsilon_greedy", "ucb", "thompson"} <= set(episodes["agent"])
    claims = pd.read_parquet(data / "11_claims.parquet")
    assert set(claims["id"]) == {"B01/B02", "B03", "B04", "B05"}
    assert claims["shown"].isna().tolist() == claims["ours"].isna().tolist()  # no 20-arm run on smoke: <NA>
    for name in ("coverage", "coverage_vs_regret", "regret", "noise_levels", "free_vs_constrained"):
        assert (figures / f"11_{name}.png").stat().st_size > 10_000


@pytest.mark.slow
def test_12_frequency_bias(tmp_path):
    data, figures = _run_smoke("12", tmp_path)
    claims = pd.read_parquet(data / "12_frequency_bias_claims.parquet")
    assert claims["model"].tolist() == ["smollm2-135m"] and -1 <= claims["r"].iloc[0] <= 1
    assert claims[["frequent", "greedy", "other"]].sum(axis=1).iloc[0] == pytest.approx(1.0)
    assert (figures / "12_frequency_bias.png").stat().st_size > 10_000


@pytest.mark.slow
def test_13_knowing_doing_gap(tmp_path):
    data, figures = _run_smoke("13", tmp_path)  # the notebook asserts the scripted validation itself
    matrices = pd.read_parquet(data / "13_knowing_doing_matrices.parquet")
    assert matrices.groupby("run")[["optimal", "greedy", "other"]].sum().sum(axis=1).tolist() == pytest.approx([100.0])
    assert (figures / "13_knowing_doing.png").stat().st_size > 10_000


@pytest.mark.slow
def test_02_coordination_gap(tmp_path):
    data, figures = _run_smoke("02", tmp_path)
    table = pd.read_parquet(data / "02_summary.parquet")
    free = table[table["decision"] == "free"]
    assert set(table["decision"]) == {"scripted", "free", "constrained"} and (table["episodes"] == 2).all()
    assert table.loc[table["model"] == "policy:no_action", "reward"].eq(1.0).all()
    rates = pd.read_parquet(data / "02_call_rates.parquet")
    assert set(rates["prompt_version"]) == {"rules-v1", "options-v1"} and rates["call_rate"].between(0, 1).all()
    steps, episodes = pd.read_parquet(data / "02_steps.parquet"), pd.read_parquet(data / "02_episodes.parquet")
    llm = episodes[episodes["decision"] != "scripted"]
    assert len(steps) == (llm["n"] * llm["rounds_played"]).sum()
    assert len(free) == 1 and (figures / "02_coordination_gap.png").stat().st_size > 10_000
    assert (figures / "02_no_call_reward.png").stat().st_size > 10_000
