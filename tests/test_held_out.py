"""Held-out play of a run's adapters (paperlib.training.held_out), game-agnostic: what it plays,
what it reads back, and when it asks the game to replay a run whose checkpoints are not here."""

import pandas as pd
import pytest

from paperlib.data import RolloutStore
from paperlib.training.checkpoints import RunDir
from paperlib.training.held_out import play_adapters


class Replayed(Exception):
    pass


def never(*args, **kwargs):
    pytest.fail("nothing should be played or replayed")


def a_record(tmp_path) -> RunDir:
    """A finished run's record as a checkout keeps it: config and log, no checkpoint."""
    run = RunDir(tmp_path / "run")
    run.claim({"model": "smollm2-135m"})
    for step in (1, 2):
        run.append_log({"step": step, "adapter_hash": f"h{step}"})
    return run


def test_full_stores_are_read_back_with_no_model_and_no_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr("paperlib.models.load_local", never)
    run = a_record(tmp_path)
    for label in ("base", "last"):
        RolloutStore(tmp_path / "eval" / label).append(pd.DataFrame({"episode": [0, 1], "adapter": label}))
    episodes, _ = play_adapters(
        run.path, {"base": None, "last": 2}, {"": None}, tmp_path / "eval", never, size=2, restore=never
    )
    assert list(episodes["adapter"]) == ["base", "base", "last", "last"]


@pytest.mark.parametrize("resumes", [True, False])
def test_an_adapter_to_play_without_its_checkpoint_asks_the_game_to_replay_the_run(tmp_path, resumes):
    run = a_record(tmp_path)
    if resumes:  # a store the game's play resumes: partial is pending
        RolloutStore(tmp_path / "eval" / "last").append(pd.DataFrame({"episode": [0], "adapter": "last"}))

    def replay():
        raise Replayed

    with pytest.raises(Replayed):
        play_adapters(
            run.path, {"last": 2}, {"": None}, tmp_path / "eval", never, size=2, resumes=resumes, restore=replay
        )


def test_a_partial_store_a_game_does_not_resume_is_refused_in_one_line(tmp_path):
    run = a_record(tmp_path)
    RolloutStore(tmp_path / "eval" / "last").append(pd.DataFrame({"episode": [0], "adapter": "last"}))
    with pytest.raises(ValueError, match="holds 1 held-out episodes, not 2: delete it") as error:
        play_adapters(run.path, {"last": 2}, {"": None}, tmp_path / "eval", never, size=2, restore=never)
    assert "\n" not in str(error.value)
