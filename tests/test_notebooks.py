"""Each notebook runs under papermill on the smoke profile and writes what it promises;
what it prints names no directory of this machine's checkout."""

import shutil

import pandas as pd
import pytest

from paperlib import paths, pipeline, publish


def _assert_no_checkout_path(executed):
    for path in (executed, executed.with_suffix(".html")):
        assert str(paths.ROOT) not in path.read_text(encoding="utf-8"), path.name


def _assert_every_figure_shown(executed, figures):
    """The executed notebook shows each figure it wrote to ``figures`` (those named by its number)
    as an image output, and its HTML export embeds them."""
    import nbformat

    written = sorted(figures.glob(f"{executed.name[:2]}_*.png"))
    node = nbformat.read(executed, as_version=4)
    images = [o for c in node.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert written and len(images) == len(written), (executed.name, [p.name for p in written], len(images))
    assert executed.with_suffix(".html").read_text(encoding="utf-8").count('src="data:image/png;base64,') >= len(
        written
    )


@pytest.mark.slow
def test_01_environment_and_reward(tmp_path, capsys):
    (notebook,) = pipeline.notebooks(["01"])
    parameters = {"data_dir": str(tmp_path / "data"), "figures_dir": str(tmp_path / "figures")}
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    assert executed.exists() and executed.with_suffix(".html").exists()
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
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
    executed = pipeline.execute(
        notebook,
        "smoke",
        out_dir=tmp_path,
        parameters={
            "data_dir": str(tmp_path / "data"),
            "figures_dir": str(tmp_path / "figures"),
            "rollouts_dir": str(tmp_path / "rollouts"),
        },
    )
    assert executed.with_suffix(".html").exists()
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
    return tmp_path / "data", tmp_path / "figures"


@pytest.mark.slow
def test_11_bandit_greediness(tmp_path):
    from paperlib.claims import read_claims
    from paperlib.data import RolloutStore

    data, figures = _run_smoke("11", tmp_path)
    episodes = RolloutStore(data / "11_bandit_runs").episodes()
    llm = episodes[episodes["agent"] == "llm"]
    assert set(llm["decision"]) == {"free", "constrained"} and set(llm["cot"]) == {True, False}
    assert (llm.loc[llm["decision"] == "constrained", "invalid_steps"] == 0).all()
    assert {"random", "greedy", "epsilon_greedy", "ucb", "thompson"} <= set(episodes["agent"])
    claims = read_claims(data / "11_claims.parquet")
    assert set(claims["reported"]) == {"B01/B02", "B03", "B04", "B05"}
    assert (claims["verdict"] == "cannot test").tolist() == claims["ours"].isna().tolist()  # no 20-arm run on smoke
    for name in ("coverage", "coverage_vs_regret", "regret", "noise_levels", "free_vs_constrained"):
        assert (figures / f"11_{name}.png").stat().st_size > 10_000


@pytest.mark.slow
def test_12_frequency_bias(tmp_path, capsys):
    from paperlib import profiles
    from paperlib.bandits import experiments
    from paperlib.claims import read_claims

    data, figures = _run_smoke("12", tmp_path)
    stored = experiments.stored_frequency_bias(profiles.get_profile("smoke"), data / "12_frequency_bias_runs")
    assert list(stored) == ["smollm2-135m"] and len(stored["smollm2-135m"]) == 2 * 3  # lengths x repetitions
    claims = read_claims(data / "12_claims.parquet")
    assert set(claims["model"]) == {"smollm2-135m"} and claims["reported"].tolist() == ["B06", "B07", "B18"]
    assert -1 <= claims["ours"].iloc[0] <= 1 and claims["ours"].iloc[1:].between(0, 1).all()  # r, then two shares
    assert (figures / "12_frequency_bias.png").stat().st_size > 10_000

    capsys.readouterr()
    (notebook,) = pipeline.notebooks(["12"])
    pipeline.execute(
        notebook,
        "smoke",
        out_dir=tmp_path / "again",
        generate=False,
        parameters={"data_dir": str(data), "figures_dir": str(figures)},
    )
    assert "generate = False: reading " in capsys.readouterr().out
    pd.testing.assert_frame_equal(read_claims(data / "12_claims.parquet"), claims)


@pytest.mark.slow
def test_13_knowing_doing_gap(tmp_path):
    data, figures = _run_smoke("13", tmp_path)  # the notebook asserts the scripted validation itself
    matrices = pd.read_parquet(data / "13_knowing_doing_matrices.parquet")
    assert matrices.groupby("run")[["optimal", "greedy", "other"]].sum().sum(axis=1).tolist() == pytest.approx([100.0])
    assert (figures / "13_knowing_doing.png").stat().st_size > 10_000


@pytest.mark.slow
def test_02_coordination_gap(tmp_path):
    from paperlib.claims import read_claims

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
    claims = read_claims(data / "02_claims.parquet")
    assert {"A01", "A02", "A03", "A04", "A05", "A06", "A07", "A13"} <= set(claims["reported"])
    assert (claims.loc[claims["model"] == "qwen3-14b", "verdict"] == "cannot test").all()  # not a smoke model


def _claims_files(data):
    """Two notebooks' claims: paper A's (one supported, one not run) and paper B's (one contradicted)."""
    from paperlib.claims import claims_table, write_claims

    write_claims(
        claims_table(
            pd.DataFrame(
                {
                    "reported": ["A18", "A05"],
                    "what": ["reward of a zero-action episode", "mean reward, N = 5"],
                    "model": ["policy:no_action", "tiny-lm (free)"],
                    "ours": [1.0, float("nan")],
                    "effect_if": ["1.0", "below 0.5"],
                    "rule": ["value", "below"],
                    "reference": [1.0, 0.5],
                    "source": "01_scripted_episodes.parquet",
                }
            ),
            "01_environment_and_reward",
            "smoke",
        ),
        data,
    )
    write_claims(
        claims_table(
            pd.DataFrame(
                {
                    "reported": ["B03"],
                    "what": ["coverage without CoT"],
                    "model": ["tiny-lm (constrained)"],
                    "ours": [0.9],
                    "effect_if": ["below 0.5"],
                    "rule": ["below"],
                    "reference": [0.5],
                    "source": "11_bandit_runs/",
                }
            ),
            "11_bandit_greediness",
            "smoke",
        ),
        data,
    )


@pytest.mark.slow
def test_99_claims(tmp_path):
    from paperlib.reports.n99_claims import paper_sentences

    data = tmp_path / "data"
    _claims_files(data)
    (notebook,) = pipeline.notebooks(["99"])
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters={"data_dir": str(data)}, generate=False)
    _assert_no_checkout_path(executed)
    collected = pd.read_csv(data / "claims.csv")
    assert set(collected.loc[collected["notebook"] == "99_claims", "verdict"]) == {"cannot test"}  # the rest listed
    claims = collected[collected["notebook"] != "99_claims"]
    assert claims["claim"].tolist() == [
        "01:A18:policy:no_action",
        "01:A05:tiny-lm (free)",
        "11:B03:tiny-lm (constrained)",
    ]
    assert claims["verdict"].tolist() == ["supports", "cannot test", "contradicts"]
    shown = executed.read_text(encoding="utf-8")
    assert "3 claims from 2 notebooks: `01_environment_and_reward` (2), `11_bandit_greediness` (1)." in shown
    sentences = paper_sentences(claims).splitlines()
    assert sentences == [
        "- **Paper A**: 2 claims on 2 of its 18 reported numbers; our run supports 1, contradicts 0, "
        "leaves 0 inconclusive and cannot test 1.",
        "- **Paper B**: 1 claim on 1 of its 30 reported numbers; our run supports 0, contradicts 1, "
        "leaves 0 inconclusive and cannot test 0.",
    ]
    assert all(sentence in shown for sentence in sentences)
    # every row shown, none cut off, with the counts per outcome
    assert "48 claims: 1 supports, 1 contradicts, 0 inconclusive, 46 cannot test" in shown
    assert shown.count("no notebook sets our number beside it on this profile yet") >= 45


def _release_data(data):
    """A tiny data folder: scripted episodes, one bandit store, the papers' numbers."""
    from paperlib.data import RolloutStore

    data.mkdir(parents=True)
    pd.DataFrame({"model": ["policy:waiter"], "seed": [0], "profile": "smoke", "reward": [0.5]}).to_parquet(
        data / "01_scripted_episodes.parquet"
    )
    RolloutStore(data / "11_bandit_runs").append(
        pd.DataFrame({"model": ["tiny-lm"] * 2, "seed": [0, 1]}), pd.DataFrame({"seed": [0, 0, 1], "action": [2, 1, 0]})
    )
    (data / "paper_reported.csv").write_bytes(paths.PAPER_REPORTED.read_bytes())
    return data


def _run_publish(tmp_path, monkeypatch, **parameters):
    """Notebook 90 on a tiny data folder, the loopback Hub as the endpoint; (executed notebook,
    release folder, the Hub)."""
    from fake_hub_server import FakeHubServer

    data, release = _release_data(tmp_path / "data"), tmp_path / "release"
    (notebook,) = pipeline.notebooks(["90"])
    with FakeHubServer() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")  # the plain commit path the loopback Hub serves
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        executed = pipeline.execute(
            notebook,
            "smoke",
            out_dir=tmp_path / "executed",
            parameters={"data_dir": str(data), "release_dir": str(release), **parameters},
        )
    _assert_no_checkout_path(executed)
    return executed, release, hub


@pytest.mark.slow
def test_90_publish_datasets(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    executed, release, hub = _run_publish(tmp_path, monkeypatch)
    assert hub.requests == []  # built and loaded back without the Hub, pushed nowhere
    assert sorted(p.name for p in release.iterdir()) == [
        "README.md",
        "bandit_episodes",
        "bandit_steps",
        "paper_reported",
        "philosophers_scripted_episodes",
    ]
    shown = executed.read_text(encoding="utf-8")
    assert f"4 of the {len(publish.CONFIGS)} configs, and the dataset card" in shown and "did not push it" in shown
    assert "scripted policies at the dining table" in shown  # the summary: what a row is (pandas cuts long cells)
    assert "README.md: " in shown and "Models, seeds and sampling settings" in shown  # the card: where, its sections
    assert "## Choices that are this package" not in shown  # not the card itself
    assert executed.stat().st_size < 1_000_000


@pytest.mark.slow
def test_90_pushes_with_the_token_from_the_environment_and_writes_it_nowhere(tmp_path, monkeypatch, capsys):
    token, repo = "hf_FAKE_notebook_secret_0123456789", "someone/paperlib-rollouts"
    monkeypatch.setenv("HF_TOKEN", token)
    executed, release, hub = _run_publish(tmp_path, monkeypatch, repo_id=repo)
    assert hub.files(repo) == {
        p.relative_to(release).as_posix(): p.read_bytes() for p in sorted(release.rglob("*")) if p.is_file()
    }
    upload = [r for r in hub.requests if r.path.startswith(("/api/repos/", "/api/datasets/"))]
    assert {r.headers.get("authorization") for r in upload} == {f"Bearer {token}"}
    for request in hub.requests:  # the token only as the Authorization header
        others = [value for name, value in request.headers.items() if name != "authorization"]
        assert token not in request.path + "".join(others) and token.encode() not in request.body
    assert f"pushed to {hub.url}/datasets/{repo}" in executed.read_text(encoding="utf-8")
    for path in (executed, executed.with_suffix(".html")):
        assert token not in path.read_text(encoding="utf-8"), path.name
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err  # what the notebook printed while it ran


@pytest.fixture(scope="module")
def grpo_notebooks(tmp_path_factory):
    """Notebooks 03 and 04 on smoke, once for the tests of 03, 04 and 05: 03 trains the smoke recipe
    twice (positive control, paper's reward), validates the paper run and tests the control; 04,
    in a later checkout (the runs without their trainer checkpoints, as git keeps them), selects
    and evaluates the paper run's kept adapters. Returns (the folder, the notebooks' parameters)."""
    tmp_path = tmp_path_factory.mktemp("grpo_notebooks")
    parameters = {
        "data_dir": str(tmp_path / "data"),
        "figures_dir": str(tmp_path / "figures"),
        "runs_dir": str(tmp_path / "runs"),
    }
    for number in ("03", "04"):
        (notebook,) = pipeline.notebooks([number])
        executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
        _assert_no_checkout_path(executed)
        _assert_every_figure_shown(executed, tmp_path / "figures")
        for checkpoint in (tmp_path / "runs").glob("grpo-*/checkpoint-*"):  # a new checkout
            shutil.rmtree(checkpoint)
    return tmp_path, parameters


@pytest.mark.slow
def test_03_and_04_grpo(grpo_notebooks, capsys):
    """Notebook 04 evaluated notebook 03's kept adapters in a later checkout without replaying a run."""
    from paperlib.training.checkpoints import RunDir

    tmp_path, parameters = grpo_notebooks
    assert not list((tmp_path / "runs").glob("grpo-*/checkpoint-*"))  # 04 replayed nothing
    data, figures = tmp_path / "data", tmp_path / "figures"
    log = pd.read_parquet(data / "03_training_log.parquet")
    assert sorted(zip(log["reward"], log["step"])) == [("paper", 1), ("paper", 2), ("valid", 1), ("valid", 2)]
    assert {"model", "seed", "profile", "kl", "loss", "adapter_hash", "forward_seconds"} <= set(log.columns)
    assert set(log["train_seed"]) == {0}  # the smoke profile's one training seed (grpo_seeds)
    for reward in ("paper", "valid"):  # each step's rollouts came from the adapter saved after the step before
        run = RunDir(tmp_path / "runs" / f"grpo-{reward}-seed0")
        assert run.log()["adapter_hash"].tolist() == log[log["reward"] == reward]["adapter_hash"].tolist()
    control = pd.read_parquet(data / "03_positive_control.parquet")
    assert sorted(set(control["selection"])) == ["base", "trained"]
    assert (control.groupby("selection")["seed"].apply(sorted).map(tuple).nunique()) == 1  # the same seeds
    episodes = pd.read_parquet(data / "04_episodes.parquet")
    assert set(episodes["selection"]) == {"base", "last", "best_train", "best_val"}
    assert (episodes.groupby(["selection", "n"]).size() == 3).all()
    # the base model's episodes played once (shared by every training seed), the adapters' with their seed
    assert episodes.groupby("selection")["train_seed"].apply(lambda s: set(s.dropna())).to_dict() == {
        "base": set(),
        "last": {0},
        "best_train": {0},
        "best_val": {0},
    }
    table = pd.read_parquet(data / "04_null_result.parquet")
    assert sorted(table["selection"]) == ["best_train", "best_val", "last"]
    base = episodes[episodes["selection"] == "base"].groupby("n")["reward"].mean()
    for row in table.itertuples():  # each row's means are its episodes'
        assert row.base_mean == pytest.approx(base[row.n])
        mine = episodes[(episodes["selection"] == row.selection) & (episodes["n"] == row.n)]
        assert row.mean == pytest.approx(mine["reward"].mean()) and set(mine["step"]) == {row.step}
    for name in ("03_grpo_training", "04_null_result"):
        assert (figures / f"{name}.png").stat().st_size > 10_000

    capsys.readouterr()
    for number in ("03", "04"):
        (notebook,) = pipeline.notebooks([number])
        pipeline.execute(notebook, "smoke", out_dir=tmp_path / "again", parameters=parameters, generate=False)
    assert capsys.readouterr().out.count("generate = False: reading ") == 2
    pd.testing.assert_frame_equal(pd.read_parquet(data / "04_null_result.parquet"), table)


@pytest.mark.slow
def test_05_interventions(grpo_notebooks, capsys):
    """Notebook 05 on smoke after 03 and 04 (in a later checkout): each prescription's run trains the
    smoke recipe, its kept adapters play notebook 04's evaluation seeds, whose base and recipe rows
    are read rather than played again; its claims are our own, notebook 99 collects them, and
    --from-data rebuilds them."""
    from paperlib.claims import OURS, read_claims

    tmp_path, parameters = grpo_notebooks
    (notebook,) = pipeline.notebooks(["05"])
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
    data = tmp_path / "data"
    log = pd.read_parquet(data / "05_training_log.parquet")
    assert sorted(set(zip(log["run"], log["reward"]))) == [
        ("curriculum", "shaped"),
        ("penalty", "shaped_penalty"),
        ("recipe", "paper"),
        ("shaped", "shaped"),
    ]
    assert log.loc[log["run"] == "curriculum"].sort_values("step")["n"].tolist() == [2, 3]  # smoke's 2 -> 3
    assert log.loc[log["run"] != "recipe", "signal_share"].between(0, 1).all()
    prescribed = log[log["run"] != "recipe"]  # no KL pass where the notebook reads none (n05.MEASURE_KL)
    assert (prescribed["kl_seconds"] == 0).all() and prescribed["kl"].isna().all()
    episodes = pd.read_parquet(data / "05_interventions.parquet")
    assert set(episodes["run"]) == {"base", "recipe", "shaped", "curriculum", "penalty", "scripted"}
    assert all(seeds == [0, 1, 2] for seeds in episodes.groupby(["run", "selection", "n"])["seed"].apply(sorted))
    trained = episodes[~episodes["run"].isin(["base", "scripted"])]
    assert set(trained["selection"]) == {"last", "best_train", "best_val"} and set(trained["train_seed"]) == {0}
    reused = pd.read_parquet(data / "04_episodes.parquet")  # notebook 04's rows, as they were
    for run, selection in (("base", "base"), ("recipe", "last")):
        ours = episodes[(episodes["run"] == run) & (episodes["selection"] == selection)].sort_values("seed")
        theirs = reused[reused["selection"] == selection].sort_values("seed")
        assert ours["reward"].tolist() == theirs["reward"].tolist()
        assert ours["adapter_hash"].tolist() == theirs["adapter_hash"].tolist()
    claims = read_claims(data / "05_claims.parquet")
    assert set(claims["reported"]) == {OURS} and set(claims["paper"]) == {"A"} and len(claims) == 5 * 2
    shown = executed.read_text(encoding="utf-8")
    assert "A verdict per prescription" in shown and "Steps with a learning signal" in shown

    capsys.readouterr()
    (notebook,) = pipeline.notebooks(["05"])
    pipeline.execute(notebook, "smoke", out_dir=tmp_path / "again", parameters=parameters, generate=False)
    assert "generate = False: reading " in capsys.readouterr().out
    pd.testing.assert_frame_equal(read_claims(data / "05_claims.parquet"), claims)
    (notebook,) = pipeline.notebooks(["99"])
    pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters={"data_dir": str(data)}, generate=False)
    collected = pd.read_csv(data / "claims.csv")
    assert (collected["notebook"] == "05_interventions").sum() == len(claims)


@pytest.mark.slow
def test_06_knowing_doing_at_the_table(tmp_path):
    (notebook,) = pipeline.notebooks(["06"])  # the notebook asserts the scripted validation itself
    parameters = {
        "data_dir": str(tmp_path / "data"),
        "figures_dir": str(tmp_path / "figures"),
        "rollouts_dir": str(tmp_path / "rollouts"),
        "runs_dir": str(tmp_path / "runs"),
    }  # no GRPO run
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
    assert "base models only" in executed.read_text()
    data, figures = tmp_path / "data", tmp_path / "figures"
    turns = pd.read_parquet(data / "06_knowing_doing_turns.parquet")
    table = pd.read_parquet(data / "06_knowing_doing_table.parquet")
    assert set(turns["model"]) == {"smollm2-135m"} and set(turns["n"]) == {3}
    for (model, _adapter, n), cell in table.groupby(["model", "adapter", "n"]):  # a matrix per model, adapter and N
        assert len(cell) == 6 and cell["share"].sum() == pytest.approx(1.0)
        assert (cell["turns"] == len(turns[(turns["model"] == model) & (turns["n"] == n)])).all()
    summary = pd.read_parquet(data / "06_knowing_vs_doing.parquet")
    assert ((summary["knowing_low"] <= summary["knowing"]) & (summary["knowing"] <= summary["knowing_high"])).all()
    assert (figures / "06_knowing_doing_table.png").stat().st_size > 10_000


@pytest.mark.slow
def test_14_rlft_bandits(tmp_path, capsys):
    """Notebook 14 trains the smoke recipe with and without the bonus, evaluates the base model,
    both adapters, UCB and random on the same held-out instances, and tabulates them."""
    parameters = {
        "data_dir": str(tmp_path / "data"),
        "figures_dir": str(tmp_path / "figures"),
        "runs_dir": str(tmp_path / "runs"),
    }
    (notebook,) = pipeline.notebooks(["14"])
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
    data, figures = tmp_path / "data", tmp_path / "figures"
    log = pd.read_parquet(data / "14_rlft_log.parquet")
    assert sorted(zip(log["run"], log["step"])) == [("RLFT", 1), ("RLFT", 2), ("RLFT + bonus", 1), ("RLFT + bonus", 2)]
    assert log.groupby("run")["bonus"].first().to_dict() == {"RLFT": False, "RLFT + bonus": True}
    assert set(log["train_seed"]) == {0}  # the smoke profile's one training seed (rlft_seeds)
    episodes = pd.read_parquet(data / "14_held_out_episodes.parquet")
    assert set(episodes["adapter"]) == {"base", "RLFT", "RLFT + bonus", "ucb", "random"}
    assert episodes.groupby("adapter")["seed"].apply(sorted).map(tuple).nunique() == 1  # the same instances
    trained = episodes["adapter"].isin(["RLFT", "RLFT + bonus"])
    assert (episodes.loc[trained, "train_seed"] == 0).all() and episodes.loc[~trained, "train_seed"].isna().all()
    assert "train_seed" in pd.read_parquet(data / "14_held_out_steps.parquet")
    table = pd.read_parquet(data / "14_before_after.parquet")
    for row in table[table["metric"] == "regret"].itertuples():  # each mean is its episodes'
        assert row.mean == pytest.approx(episodes[episodes["adapter"] == row.adapter]["regret"].mean())
    assert table[table["adapter"] != "base"]["p"].notna().any()
    claims = pd.read_parquet(data / "14_claims.parquet")
    assert sorted(claims["reported"]) == ["B17", "B18/B19", "B22/B23", "B30"]
    stored = pd.read_parquet(next((data / "14_frequency_bias_runs" / "episodes").glob("*.parquet")))
    assert {"model", "cases", "repetitions"} <= set(stored.columns)
    for name in ("14_rlft_training", "14_rlft_held_out"):
        assert (figures / f"{name}.png").stat().st_size > 10_000
    harder = pd.read_parquet(data / "14_harder_control_episodes.parquet")  # the control on the profile's other model
    assert sorted(set(zip(harder["model"], harder["adapter"]))) == [("smollm2-135m", "RLFT"), ("smollm2-135m", "base")]
    assert sorted(pd.read_parquet(data / "14_harder_control_log.parquet")["step"]) == [1, 2]
    assert (tmp_path / "runs" / "rlft-smollm2-135m-seed0" / "checkpoint-2").is_dir()
    ablation = pd.read_parquet(data / "14_cot_ablation_episodes.parquet")  # the smoke recipe thinks not; this one does
    assert set(ablation["cot"]) == {True} and set(ablation["adapter"]) == {"base", "RLFT"}
    assert set(ablation["seed"]) == set(episodes["seed"])
    capsys.readouterr()
    again = pipeline.execute(notebook, "smoke", out_dir=tmp_path / "again", parameters=parameters, generate=False)
    assert capsys.readouterr().out.count("generate = False: reading ") == 5
    shown = again.read_text()
    assert "**smollm2-135m**: Positive control: the held-out invalid-action share went from" in shown
    assert "RLFT with CoT, base model → adapter on the same held-out instances: regret" in shown
    assert "RLFT without CoT, base model → adapter" in shown


@pytest.mark.slow
def test_15_exploration_mechanisms(tmp_path):
    from paperlib.bandits.exploration import MECHANISMS
    from paperlib.data import RolloutStore

    data, figures = _run_smoke("15", tmp_path)
    table = pd.read_parquet(data / "15_exploration.parquet")
    assert set(table["exploration"]) == {*MECHANISMS, "ucb", "random"}
    llm = table[table["model"] == "smollm2-135m"].set_index("exploration")
    assert llm.loc["try_all", "chosen_by_model"] < llm.loc["none", "chosen_by_model"] == 1.0
    assert llm.loc["none", ["regret_p", "coverage_p"]].isna().all()  # the reference is not tested against itself
    assert (table["instances"] == 2).all() and {"regret_g", "coverage_g", "invalid"} <= set(table.columns)
    stored = RolloutStore(data / "15_exploration_runs").episodes()
    for row in table.itertuples():  # each mean is its run's episodes'
        assert row.regret == pytest.approx(stored[stored["run"] == row.run]["regret"].mean())
    assert (figures / "15_exploration_mechanisms.png").stat().st_size > 10_000


@pytest.mark.slow
def test_16_tictactoe(tmp_path):
    """Notebook 16 trains the smoke recipe with a value head, plays the base model, the adapter and
    the scripted players on the same held-out games in every cell, and writes its claims."""
    from paperlib.claims import read_claims

    parameters = {
        "data_dir": str(tmp_path / "data"),
        "figures_dir": str(tmp_path / "figures"),
        "runs_dir": str(tmp_path / "runs"),
    }
    (notebook,) = pipeline.notebooks(["16"])
    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path, parameters=parameters)
    _assert_no_checkout_path(executed)
    _assert_every_figure_shown(executed, tmp_path / "figures")
    data, figures = tmp_path / "data", tmp_path / "figures"
    log = pd.read_parquet(data / "16_rlft_log.parquet")
    assert list(zip(log["run"], log["step"])) == [("no CoT", 1), ("no CoT", 2)] and log["value_loss"].notna().all()
    games = pd.read_parquet(data / "16_held_out_games.parquet")
    assert set(games["adapter"]) == {"base", "RLFT", "random", "mcts", "noisy_mcts"}
    assert (games.loc[games["adapter"] == "RLFT", "train_seed"] == 0).all() and set(log["train_seed"]) == {0}
    assert games.loc[games["adapter"] != "RLFT", "train_seed"].isna().all()  # the base model's and the references'
    assert set(games["cell"]) == {
        "random/legal/no_cot/4",
        "mcts/legal/no_cot/4",
        "noisy_mcts/legal/no_cot/4",
        "random/no_legal/no_cot/4",
        "random/legal/cot/4",
    }
    assert games.groupby(["adapter", "cell"])["seed"].apply(sorted).map(tuple).nunique() == 1  # the same games
    table = pd.read_parquet(data / "16_returns.parquet")
    for row in table[table["metric"] == "return"].itertuples():  # each mean is its games'
        cell = games[(games["adapter"] == row.adapter) & (games["cell"] == row.cell)]
        assert row.mean == pytest.approx(cell["return"].mean())
    claims = read_claims(data / "16_claims.parquet")
    assert sorted(claims["reported"]) == ["B24", "B25", "B26", "B27", "B28"]
    assert (figures / "16_tictactoe.png").stat().st_size > 10_000
