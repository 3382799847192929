"""Each notebook runs under papermill on the smoke profile and writes what it promises."""

import pandas as pd
import pytest

from paperlib import pipeline


@pytest.mark.slow
def test_01_environment_and_reward(tmp_path):
    (notebook,) = pipeline.notebooks(["01"])
    pipeline.execute(notebook, "smoke", out_dir=tmp_path,
                     parameters={"data_dir": str(tmp_path / "data"), "figures_dir": str(tmp_path / "figures")})
    assert (tmp_path / notebook.name).exists() and (tmp_path / notebook.name).with_suffix(".html").exists()
    table = pd.read_parquet(tmp_path / "data" / "01_scripted_summary.parquet")
    no_action = table[table["policy"] == "no_action"]
    assert (no_action["reward"] == 1.0).all() and (no_action["reward_shaped"] == 0.0).all()
    assert (tmp_path / "figures" / "01_reward_vs_meals.png").stat().st_size > 10_000
