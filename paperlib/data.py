"""Rollout tables on disk: atomic parquet writes and a resumable store of shards.

Episode rows and step rows (README, Layout; ``paperlib.llm.core.STEP_COLUMNS``) are pandas frames in memory
and parquet files on disk; ``load_dataset`` turns them into ``datasets.Dataset``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


class OutputError(ValueError):
    """An output path that cannot be written."""


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early, with one line, when ``path`` cannot be created."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputError(f"output path {path} is a directory")
    if parent.exists() and not parent.is_dir():
        raise OutputError(f"cannot write {path}: {parent} is not a directory")
    if not parent.exists():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create directory {parent}: {exc.strerror}") from None
    if not os.access(parent, os.W_OK):
        raise OutputError(f"cannot write to directory {parent}")
    return path


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` atomically: readers see the old file or the new one."""
    path = check_writable(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_parquet(path: str | os.PathLike) -> pd.DataFrame:
    return pd.read_parquet(path)


class RolloutStore:
    """A directory of numbered shards that a long run appends to and resumes from.

    Each shard is a pair ``steps/part-NNNNN.parquet`` and ``episodes/part-NNNNN.parquet``,
    written steps first; an episode counts as finished once its episode shard exists,
    so a crash loses at most the shard in flight and never leaves a half row.
    """

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        for sub in ("episodes", "steps"):
            check_writable(self.directory / sub / "probe")
            (self.directory / sub).mkdir(parents=True, exist_ok=True)

    def _parts(self, kind: str) -> list[Path]:
        return sorted((self.directory / kind).glob("part-*.parquet"))

    def append(self, episodes: pd.DataFrame, steps: pd.DataFrame | None = None) -> None:
        parts = self._parts("episodes")
        number = int(parts[-1].stem.split("-")[1]) + 1 if parts else 0
        name = f"part-{number:05d}.parquet"
        if steps is not None:
            write_parquet(steps, self.directory / "steps" / name)
        write_parquet(episodes, self.directory / "episodes" / name)

    def _read(self, kind: str) -> pd.DataFrame:
        finished = {p.name for p in self._parts("episodes")}
        parts = [p for p in self._parts(kind) if p.name in finished]
        if not parts:
            return pd.DataFrame()
        return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)

    def episodes(self) -> pd.DataFrame:
        return self._read("episodes")

    def steps(self) -> pd.DataFrame:
        return self._read("steps")

    def finished(self, key_columns: list[str]) -> set[tuple]:
        """Keys of the episodes already written, to skip on resume."""
        frame = self.episodes()
        if frame.empty:
            return set()
        return set(frame[key_columns].itertuples(index=False, name=None))


def load_dataset(path: str | os.PathLike):
    """A parquet file or a RolloutStore directory as a ``datasets.Dataset``."""
    import datasets

    path = Path(path)
    if path.is_dir():
        files = [str(p) for p in sorted((path / "episodes").glob("part-*.parquet"))]
    else:
        files = [str(path)]
    return datasets.Dataset.from_parquet(files)
