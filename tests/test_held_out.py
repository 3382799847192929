"""Held-out play of a run's adapters (paperlib.training.held_out), game-agnostic: what it plays,
what it reads back, and when it asks the game to replay a run whose checkpoints are not here."""

import json
import shutil

import pandas as pd
import pytest

from paperlib.data import RolloutStore
from paperlib.training.checkpoints import RunDir, file_hash
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


def a_checkpoint(run: RunDir, step: int, whole: bool = True):
    """A saved checkpoint as a trainer leaves it: adapter, optimiser, tokenizer, and (whole) its marker."""
    where = run.checkpoint(step)
    where.mkdir(parents=True)
    for name in ("adapter_model.safetensors", "optimizer.pt", "tokenizer.json", "training_args.bin"):
        (where / name).write_text(f"{name} of step {step}")
    (where / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/home/me/models/x", "r": 8}))
    if whole:
        (where / "trainer_state.json").write_text("{}")


def test_kept_holds_the_resume_point_whole_and_the_chosen_adapters_alone(tmp_path):
    run = a_record(tmp_path)
    for step in (1, 2, 3):
        a_checkpoint(run, step)
        run.keep_resume_point(step, finished=False)
        whole = [p.name for p in (run.path / "kept").glob("checkpoint-*") if (p / "trainer_state.json").exists()]
        assert whole == [f"checkpoint-{step}"]  # one resume point, the last
        if step == 2:
            run.keep_adapters([1])  # chosen while step 2 is the resume point
    kept = run.path / "kept"
    assert sorted(p.name for p in kept.iterdir()) == ["checkpoint-1", "checkpoint-3", "kept.json"]
    assert sorted(p.name for p in (kept / "checkpoint-3").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
        "optimizer.pt",
        "trainer_state.json",
    ]  # what a resume reads; the tokenizer comes with the model, the pickled arguments name this machine's folders
    held = json.loads((kept / "checkpoint-3" / "adapter_config.json").read_text())
    assert held == {"base_model_name_or_path": "smollm2-135m", "r": 8}  # the model's name, not its folder
    assert sorted(p.name for p in (kept / "checkpoint-1").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    for step in (1, 2, 3):  # a checkout: the trainer's checkpoints are gone, kept/ stays
        shutil.rmtree(run.checkpoint(step))
    assert run.steps_saved() == [1, 3] and run.last_step() == 3 and run.rewind() == 3
    assert run.saved(3) == kept / "checkpoint-3" and run.saved(2) == kept / "checkpoint-2"
    a_checkpoint(run, 4)
    run.keep_resume_point(4, finished=True)  # a finished run keeps its last adapter, no resume point
    assert sorted(p.name for p in kept.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-4"]
    assert not (kept / "checkpoint-4" / "optimizer.pt").exists() and run.saved(4) == run.checkpoint(4)
    assert json.loads((kept / "kept.json").read_text()) == {"adapters": [1, 4]}
    with pytest.raises(ValueError, match="has no adapter of step 2 to keep"):
        run.keep_adapters([2])


def an_adapter(run: RunDir, step: int, value: float):
    """A saved checkpoint whose adapter file holds one tensor of ``value``s."""
    import torch
    from safetensors.torch import save_file

    where = run.checkpoint(step)
    where.mkdir(parents=True)
    save_file({"lora.weight": torch.full((2, 2), value)}, str(where / "adapter_model.safetensors"))
    (where / "trainer_state.json").write_text("{}")


def test_an_adapter_that_another_label_holds_takes_its_rows_and_plays_nothing(tmp_path, monkeypatch):
    run = a_record(tmp_path)
    for step, value in ((1, 0.5), (2, 0.5), (3, 1.0)):  # step 2 left the adapter as step 1 had it
        an_adapter(run, step, value)
    same = file_hash(run.saved(1))
    assert file_hash(run.saved(2)) == same != file_hash(run.saved(3))
    played_labels = []

    def fake_adapters(_run, _model, todo):
        for label, step in todo.items():
            played_labels.append(label)
            yield label, step, None, None, file_hash(run.saved(step))

    def play(_backend, cell, labels, _store):
        rows = pd.DataFrame({"episode": [0, 1], "played": cell, **labels})
        return rows, rows[["episode"]].assign(turn=1)

    monkeypatch.setattr("paperlib.training.held_out.each_adapter", fake_adapters)
    monkeypatch.setattr("paperlib.backends.hf.HFBackend", lambda *args, **kwargs: None)
    cells = {"a": "A", "b": "B"}
    adapters = {"step-1": 1, "step-2": 2, "step-3": 3}
    episodes, steps = play_adapters(run.path, adapters, cells, tmp_path / "eval", play, size=2, step="step")
    assert played_labels == ["step-1", "step-3"]  # step 2's adapter is step 1's
    copied = episodes[episodes["adapter"] == "step-2"]
    assert list(copied["step"]) == [2] * 4 and set(copied["adapter_hash"]) == {same}
    assert list(copied["played"]) == ["A", "A", "B", "B"] and list(copied["cell"]) == ["a", "a", "b", "b"]
    assert set(steps[steps["adapter"] == "step-2"]["cell"]) == {"a", "b"}
    assert len(RolloutStore(tmp_path / "eval" / "step-2" / "b").episodes()) == 2  # written: read back next time

    monkeypatch.setattr("paperlib.training.held_out.each_adapter", never)  # read back: a full store plays nothing
    shutil.rmtree(tmp_path / "eval" / "step-2")
    again, _ = play_adapters(run.path, {"step-1": 1, "step-2": 2}, cells, tmp_path / "eval", never, size=2, step="step")
    rows = {label: again[again["adapter"] == label].drop(columns=["adapter", "step"]) for label in ("step-1", "step-2")}
    pd.testing.assert_frame_equal(rows["step-2"].reset_index(drop=True), rows["step-1"].reset_index(drop=True))
