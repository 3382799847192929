"""A training run's directory: its config, per-step adapters, training log and rollouts; resume.

Trainer-agnostic: both trainers (``paperlib.training.grpo``, ``paperlib.training.rlft.loop``)
keep their runs here, one adapter per optimiser step. The layout under the run directory::

    run.json                      the run's settings; a rerun with other settings is refused
    training_log.parquet          one row per finished step (``step`` 1, 2, ...)
    checkpoint-<step>/            the trainer's checkpoint: adapter_model.safetensors, and what
                                  the trainer resumes from (its optimiser, RNG, value head)
    kept/checkpoint-<step>/       what a checkout keeps of the checkpoints (git ignores the others):
                                  the last one whole while the run trains (its resume point), and
                                  the adapters of the steps chosen to keep (:meth:`RunDir.keep_adapters`;
                                  a finished run's last step among them); kept/kept.json lists those
    rollouts/episodes/step-<step>.parquet, rollouts/steps/step-<step>.parquet
                                  the episodes that step trained on

Order of writes within a step, so a run killed at any point resumes to the same log as an
uninterrupted one: rollouts and the log row first, the checkpoint last. A step counts as
done once its checkpoint is complete (``COMPLETE_MARKER`` written, the trainer's last
file); on resume a half-written checkpoint is dropped and training goes on from the last
complete one.

The log and the rollouts are the run's *record*; the checkpoints are not part of it. A
checkout keeps a run's record and ``kept/``, not its checkpoints (``paperlib.paths.runs``: git
ignores ``checkpoint-*``), so a run that trains across sessions resumes from its kept resume
point, and a record may hold steps whose adapters are not here. A finished
record is a finished run: training it again does nothing, and whatever reads only its log,
rollouts or evaluation stores needs no checkpoint. What needs an adapter that is not here
replays the run (each trainer's ``train(..., replay=True)``): the trainer redoes the steps
from the last checkpoint here, and each redone step must play with, and end at, the adapters
its recorded row names (:data:`REPLAYED`), or :meth:`RunDir.append_log` refuses it in one
line. A run killed mid-step is the same case, one step long.

The adapter hash (:func:`adapter_hash`) is the sha256 of the adapter's tensors (names,
dtypes, shapes and bytes, in name order): what an adapter file holds, independent of its
file layout, so the weights in memory and the file saved from them hash the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from paperlib.data import write_parquet

if TYPE_CHECKING:
    import torch

ADAPTER_FILE = "adapter_model.safetensors"
COMPLETE_MARKER = "trainer_state.json"  # transformers' Trainer writes it last in a checkpoint
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
KEPT = "kept"
ADAPTER_FILES = (ADAPTER_FILE, "adapter_config.json")  # what a kept adapter is
# what a resume point leaves out of a checkpoint: the tokenizer and the model card (they come with the
# model), and the trainer's pickled arguments (a resume does not read them; they name this machine's folders)
NOT_FOR_RESUMING = (
    "training_args.bin",
    "README.md",
    "chat_template.jinja",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
)
# the log's columns a redone step must reproduce: the adapter that played its rollout and the one
# it ended at (both trainers log them)
REPLAYED = ("rollout_adapter_hash", "adapter_hash")


def adapter_hash(tensors: Mapping[str, torch.Tensor]) -> str:
    """sha256 of an adapter's tensors: each name, dtype, shape and raw bytes, in name order."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def file_hash(checkpoint: str | os.PathLike) -> str:
    """The adapter hash of a saved checkpoint (its ``adapter_model.safetensors``)."""
    from safetensors.torch import load_file

    return adapter_hash(load_file(Path(checkpoint) / ADAPTER_FILE))


def _complete(marker: Path) -> bool:
    try:
        json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return True


class RunDir:
    """One training run's directory (see the module doc)."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory)

    # -- config ------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "run.json"

    def claim(self, config: dict, defaults: dict | None = None) -> None:
        """Record ``config`` as this run's, or check that the directory already holds this run.
        Refused in one line when the directory holds another run's config. A setting added to the
        package after the run was recorded counts as the same when ``config`` holds its default
        (``defaults``: setting -> default), and is recorded."""
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"{self.path} is not a directory")
        if self.config_path.exists():
            held = json.loads(self.config_path.read_text())
            added = {k: v for k, v in config.items() if k not in held and k in (defaults or {}) and defaults[k] == v}
            if {**held, **added} != config:
                changed = sorted(k for k in held.keys() | config.keys() if held.get(k) != config.get(k))
                raise ValueError(
                    f"{self.path} holds another run (its {', '.join(changed)} differ); "
                    f"choose another --out or delete it"
                )
            if added:
                self._write_config(config)
            return
        self.path.mkdir(parents=True, exist_ok=True)
        if any(self.path.iterdir()):
            raise ValueError(f"{self.path} is not empty and holds no run config; choose another --out")
        self._write_config(config)

    def _write_config(self, config: dict) -> None:
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(config, indent=1, sort_keys=True))
        os.replace(tmp, self.config_path)

    def config(self) -> dict:
        return json.loads(self.config_path.read_text())

    # -- checkpoints ---------------------------------------------------------------
    def checkpoint(self, step: int) -> Path:
        """Where the trainer writes ``step``'s checkpoint."""
        return self.path / f"checkpoint-{step}"

    def kept(self, step: int) -> Path:
        return self.path / KEPT / f"checkpoint-{step}"

    def saved(self, step: int) -> Path:
        """Where ``step``'s saved checkpoint is read from: the trainer's, when complete, else the kept one."""
        return self.checkpoint(step) if _complete(self.checkpoint(step) / COMPLETE_MARKER) else self.kept(step)

    def _steps(self, where: Path, whole: bool) -> list[int]:
        return [
            int(m.group(1))
            for p in where.glob("checkpoint-*")
            if (m := _CHECKPOINT.fullmatch(p.name))
            and (_complete(p / COMPLETE_MARKER) if whole else (p / ADAPTER_FILE).exists())
        ]

    def steps_saved(self) -> list[int]:
        """Steps whose adapter is here, in order: a complete checkpoint (its marker written in full)
        or a kept one."""
        return sorted(set(self._steps(self.path, whole=True)) | set(self._steps(self.path / KEPT, whole=False)))

    def last_step(self) -> int:
        """The last step training can resume from, a complete checkpoint or the kept resume point (0: none)."""
        whole = self._steps(self.path, whole=True) + self._steps(self.path / KEPT, whole=True)
        return max(whole, default=0)

    def _kept_adapters(self) -> list[int]:
        manifest = self.path / KEPT / "kept.json"
        return json.loads(manifest.read_text())["adapters"] if manifest.exists() else []

    def _copy(self, step: int, whole: bool) -> None:
        """``step``'s saved checkpoint into kept/: whole (a resume point) or its adapter only, via a
        temporary folder, so a kill leaves the old copy or the new one."""
        source, target = self.saved(step), self.kept(step)
        if source == target:
            if whole and not _complete(target / COMPLETE_MARKER):
                raise ValueError(f"{self.path}: step {step} has no whole checkpoint here to keep as a resume point")
            if not whole:
                for p in target.iterdir():
                    if p.name not in ADAPTER_FILES:
                        p.unlink()
            return
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for p in source.iterdir():
            if p.is_file() and (p.name in ADAPTER_FILES or (whole and p.name not in NOT_FOR_RESUMING)):
                shutil.copy2(p, tmp / p.name)
        adapter_config = tmp / "adapter_config.json"
        if adapter_config.exists():  # peft records the base model's folder: git keeps its name instead
            held = json.loads(adapter_config.read_text())
            adapter_config.write_text(json.dumps({**held, "base_model_name_or_path": self.config()["model"]}, indent=2))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)

    def keep_resume_point(self, step: int, finished: bool) -> None:
        """After ``step``'s checkpoint is saved: kept/ holds it whole as the run's resume point in place
        of the last one, or, once the run is ``finished``, its adapter only (among the kept adapters).
        A former resume point goes, but for the adapter of a step chosen to keep."""
        chosen = set(self._kept_adapters())
        for old in self._steps(self.path / KEPT, whole=True):
            if old != step:
                if old in chosen:
                    self._copy(old, whole=False)
                else:
                    shutil.rmtree(self.kept(old))
        if finished:
            self.keep_adapters([step])
        else:
            self._copy(step, whole=True)

    def keep_adapters(self, steps) -> None:
        """Keep the adapters of ``steps`` under kept/ (what git holds of a run), beside those kept before:
        the adapters a later session evaluates. Refused in one line for a step whose adapter is not here."""
        missing = sorted(set(steps) - set(self.steps_saved()))
        if missing:
            raise ValueError(f"{self.path} has no adapter of step {', '.join(map(str, missing))} to keep")
        chosen = sorted(set(self._kept_adapters()) | set(steps))
        for step in steps:
            if not self.kept(step).exists():
                self._copy(step, whole=False)
        manifest = self.path / KEPT / "kept.json"
        manifest.write_text(json.dumps({"adapters": chosen}))

    def rewind(self) -> int:
        """Drop the checkpoints a killed run left half-written; return the last complete one's step,
        where training goes on. The record (log rows, rollouts) stays: a redone step is checked
        against it (:meth:`append_log`) and replaces it."""
        last = self.last_step()
        for p in self.path.glob("checkpoint-*"):
            m = _CHECKPOINT.fullmatch(p.name)
            if m and int(m.group(1)) > last:
                shutil.rmtree(p)
        return last

    def recorded_steps(self) -> list[int]:
        """The steps the log records, in order: a finished run's steps, whether or not their
        checkpoints are here."""
        return sorted(int(step) for step in self.log()["step"])

    # -- the training log ------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.path / "training_log.parquet"

    def log(self) -> pd.DataFrame:
        return pd.read_parquet(self.log_path) if self.log_path.exists() else pd.DataFrame({"step": []})

    def append_log(self, row: dict) -> None:
        """Add the row of ``row['step']``, or replace the recorded row of a step redone (after a
        resume, or in a replay): refused in one line when the redone step played with, or ended
        at, other adapters than the record's (:data:`REPLAYED`)."""
        log = self.log()
        held = log[log["step"] == row["step"]]
        for column in REPLAYED:
            if len(held) and column in held and held[column].iloc[0] != row.get(column):
                raise ValueError(
                    f"step {row['step']} of {self.path} redone gave {column} {str(row.get(column))[:12]}, "
                    f"its record {str(held[column].iloc[0])[:12]}: training here does not repeat the recorded "
                    f"run, so its later record and evaluations would not match; delete {self.path} to train afresh"
                )
        if len(log):
            log = log[log["step"] != row["step"]]
        new = pd.DataFrame([row])
        write_parquet(pd.concat([log, new], ignore_index=True) if len(log) else new, self.log_path)

    # -- rollouts --------------------------------------------------------------------
    def save_rollouts(self, step: int, episodes: pd.DataFrame, steps: pd.DataFrame) -> None:
        write_parquet(steps, self.path / "rollouts" / "steps" / f"step-{step:05d}.parquet")
        write_parquet(episodes, self.path / "rollouts" / "episodes" / f"step-{step:05d}.parquet")

    def rollouts(self, kind: str = "episodes") -> pd.DataFrame:
        """Every saved step's ``episodes`` (or ``steps``) rows, in step order."""
        parts = sorted((self.path / "rollouts" / kind).glob("step-*.parquet"))
        return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True) if parts else pd.DataFrame()


@contextmanager
def quiet_trl():
    """Without the warnings trl 1.16 and peft raise by calling transformers' renamed
    gradient-checkpointing API."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"`\w*gradient_checkpointing\w*` is deprecated", FutureWarning)
        yield


def each_adapter(run: RunDir, model: str, adapters: dict) -> Iterator[tuple[str, int, object, object, str]]:
    """The model of ``run`` under each of ``adapters`` in turn (label -> a saved step, or None for
    the base model: the adapter disabled), loaded once: yields (label, step (0: base), the
    peft model in that state, its tokenizer, the adapter hash of the saved file or "base").
    Unknown steps are refused in one line before the model loads."""
    from peft import PeftModel, set_peft_model_state_dict
    from safetensors.torch import load_file

    from paperlib.models import load_local

    saved = run.steps_saved()
    unknown = [str(k) for k in adapters.values() if k is not None and k not in saved]
    if unknown or not saved:
        recorded = [str(k) for k in run.recorded_steps() if k not in saved]
        raise ValueError(
            f"{run.path} has no saved adapter of step {', '.join(unknown) or 'any'} "
            f"(saved: {', '.join(map(str, saved)) or 'none'}"
            + (f"; recorded without checkpoint: {', '.join(recorded)}, which a replay restores" if recorded else "")
            + ")"
        )
    lm, tokenizer = load_local(model)
    with quiet_trl():  # peft asks transformers' renamed gradient-checkpointing API
        peft_model = PeftModel.from_pretrained(lm, str(run.saved(saved[0])))
    for label, step in adapters.items():
        if step is not None:
            set_peft_model_state_dict(peft_model, load_file(run.saved(step) / ADAPTER_FILE))
        with peft_model.disable_adapter() if step is None else nullcontext():
            yield label, step or 0, peft_model, tokenizer, "base" if step is None else file_hash(run.saved(step))
