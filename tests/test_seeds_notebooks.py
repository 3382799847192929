"""Notebooks 03, 04, 14 and 16 read the data of three training seeds (``generate = False``, the
``cpu`` profile): made here from the committed one-seed data, each adapter's rows repeated per
seed with its values moved a little, the base model's and the references' kept once. Each
notebook writes a table per seed and pooled, and its claims from the pooled rows."""

import shutil

import pandas as pd
import pytest

from paperlib import paths, pipeline

SEEDS = (0, 1, 2)


def _shift(frame: pd.DataFrame, column: str, seed: int, step: float, low: float, high: float) -> pd.DataFrame:
    return frame.assign(**{column: (frame[column] + step * (seed - 1)).clip(low, high)})


def _seeded(path) -> bool:
    """Whether the committed file already holds several training seeds (a notebook rerun with them)."""
    frame = pd.read_parquet(path)
    return "train_seed" in frame and frame["train_seed"].nunique() > 1


def three_seed_data(data) -> None:
    """``data`` (a copy of the committed data/) as three training seeds would leave it: each
    notebook's files as they are where the committed ones already hold the seeds."""
    from paperlib.reports.seeds import stack

    if not _seeded(data / "03_training_log.parquet"):
        log = pd.read_parquet(data / "03_training_log.parquet")
        paper, control = log[log["reward"] == "paper"], log[log["reward"] != "paper"]
        log = pd.concat(
            [control.assign(train_seed=0)]
            + [_shift(paper, "train_reward", s, 0.01, 0, 1).assign(train_seed=s, seed=s) for s in SEEDS],
            ignore_index=True,
        )
        log.to_parquet(data / "03_training_log.parquet")
    if not _seeded(data / "04_validation.parquet"):
        validation = pd.read_parquet(data / "04_validation.parquet")
        pd.concat([validation.assign(train_seed=s) for s in SEEDS], ignore_index=True).to_parquet(
            data / "04_validation.parquet"
        )
    if not _seeded(data / "04_episodes.parquet"):
        episodes = pd.read_parquet(data / "04_episodes.parquet")
        played = {s: _shift(episodes, "reward", s, 0.01, 0, 1) for s in SEEDS}
        stack(played, label="selection").to_parquet(data / "04_episodes.parquet")
    if not _seeded(data / "14_rlft_log.parquet"):
        _three_seeds_of_14(data)
    if not _seeded(data / "16_rlft_log.parquet"):
        _three_seeds_of_16(data)


def _three_seeds_of_14(data) -> None:
    from paperlib.reports.seeds import stack

    log = pd.read_parquet(data / "14_rlft_log.parquet")
    pd.concat([_shift(log, "regret", s, 0.1, 0, None).assign(train_seed=s) for s in SEEDS]).to_parquet(
        data / "14_rlft_log.parquet"
    )
    shared = ("base", "ucb", "random")
    for name, column in (("14_held_out_episodes", "coverage"), ("14_held_out_steps", "coverage")):
        rows = pd.read_parquet(data / f"{name}.parquet")
        trained = ~rows["adapter"].isin(shared)
        moved = {s: rows.copy() for s in SEEDS}
        for s, frame in moved.items():
            frame.loc[trained, column] = (frame.loc[trained, column] + 0.02 * (s - 1)).clip(0, 1)
        stack(moved, shared=shared).to_parquet(data / f"{name}.parquet")


def _three_seeds_of_16(data) -> None:
    from paperlib.reports.seeds import stack

    log = pd.read_parquet(data / "16_rlft_log.parquet")
    main = log["run"].iloc[0]
    pd.concat(
        [log[log["run"] != main].assign(train_seed=0)]
        + [_shift(log[log["run"] == main], "mean_return", s, 0.05, -1, 1).assign(train_seed=s) for s in SEEDS],
        ignore_index=True,
    ).to_parquet(data / "16_rlft_log.parquet")
    games = pd.read_parquet(data / "16_held_out_games.parquet")
    steps = pd.read_parquet(data / "16_held_out_steps.parquet")
    parts_games, parts_steps = [], []
    for run in dict.fromkeys(games["run"]):
        trained = SEEDS if run == main else SEEDS[:1]
        mine, moves = games[games["run"] == run], steps[steps["run"] == run]
        scripted = tuple(a for a in mine["adapter"].unique() if a != "RLFT")
        parts_games.append(stack({s: mine for s in trained}, shared=scripted))
        parts_steps.append(stack({s: moves for s in trained}, shared=scripted))
    pd.concat(parts_games, ignore_index=True).to_parquet(data / "16_held_out_games.parquet")
    pd.concat(parts_steps, ignore_index=True).to_parquet(data / "16_held_out_steps.parquet")


@pytest.mark.slow
def test_the_notebooks_read_three_training_seeds(tmp_path):
    data, figures = tmp_path / "data", tmp_path / "figures"
    shutil.copytree(paths.ROOT / "data", data)
    three_seed_data(data)
    for number in ("03", "04", "14", "16"):
        (notebook,) = pipeline.notebooks([number])
        executed = pipeline.execute(
            notebook,
            "cpu",
            out_dir=tmp_path / "executed",
            parameters={"data_dir": str(data), "figures_dir": str(figures)},
            generate=False,
        )
        shown = executed.read_text(encoding="utf-8")
        assert "Training seed 2" in shown and "Pooled over the 3 training seeds" in shown, number
    for name in ("04_null_result", "14_before_after", "16_returns"):
        table = pd.read_parquet(data / f"{name}.parquet")
        assert list(dict.fromkeys(table["train_seed"])) == ["pooled", "0", "1", "2"], name
    claims = pd.read_parquet(data / "04_claims.parquet").set_index("reported")
    assert "per training seed: 0: " in claims.loc["A09", "note"]
    a14 = pd.read_parquet(data / "03_claims.parquet").set_index("reported").loc["A14"]
    assert "the mean curve of 3 training seeds, per training seed: 0: " in a14["note"]
    assert a14["seed_low"] <= a14["seed_high"]  # each seed's own decline, beside the mean curve's
    rlft = pd.read_parquet(data / "14_claims.parquet").set_index("reported")
    assert rlft.loc[["B17", "B30", "B22/B23"], ["seed_low", "seed_high"]].notna().all().all()


def test_the_tictactoe_figure_marks_each_seed_s_own_mean_where_the_seeds_differ(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from paperlib.reports import n16_tictactoe
    from paperlib.reports.seeds import pooled, seed_parts
    from paperlib.tictactoe import training as ttt

    data = tmp_path / "data"
    shutil.copytree(paths.ROOT / "data", data)
    three_seed_data(data)
    games = pd.read_parquet(data / "16_held_out_games.parquet")
    recipes = ttt.recipes("cpu", 0)
    main = next(iter(recipes))
    # seed 2's adapter wins every game of the main run: its seeds then differ on every cell it played
    won = (games["run"] == main) & (games["adapter"] == "RLFT") & (games["train_seed"] == 2)
    games.loc[won, "return"] = 1.0
    table = n16_tictactoe.held_out_table(games)
    log, reported = pd.read_parquet(data / "16_rlft_log.parquet"), pd.read_csv(paths.PAPER_REPORTED)
    fig = n16_tictactoe.figure(log, pooled(table), reported, recipes, (), seeds=seed_parts(table))
    dashes = [line for line in fig.axes[2].lines if line.get_gid() == "seed means"]
    assert len(dashes) == len(n16_tictactoe.OPPONENTS)  # the main run's adapter against each opponent
    assert all(max(line.get_ydata()) == 1.0 for line in dashes)  # seed 2's own mean, on every cell
    assert "dashes: each of the 3 training seeds' own mean" in [t.get_text() for t in fig.legends[0].get_texts()]
    plain = n16_tictactoe.figure(log, pooled(table), reported, recipes, ())
    assert not [line for line in plain.axes[2].lines if line.get_gid() == "seed means"]
