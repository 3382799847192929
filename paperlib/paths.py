"""Every directory the package reads or writes, defined once as an absolute path.

The root is the repository checkout (``PAPERLIB_HOME`` overrides it), so code and
notebooks work from any working directory.
"""

import os
from pathlib import Path

ROOT = Path(os.environ.get("PAPERLIB_HOME", Path(__file__).resolve().parents[1])).resolve()
DATA = ROOT / "data"
FIGURES = ROOT / "figures"
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
RUNS = ROOT / "runs"
EXECUTED_NOTEBOOKS = BUILD / "notebooks"
CACHE = Path(os.environ.get("PAPERLIB_CACHE", ROOT / ".cache")).resolve()
MODELS = CACHE / "models"
PAPER_REPORTED = DATA / "paper_reported.csv"


def relative(path: str | os.PathLike) -> Path:
    """``path`` relative to the repository root, for printing: what a notebook prints then
    names no machine's directories. A path outside the repository is returned absolute."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def outputs(profile: str) -> tuple[Path, Path]:
    """(data dir, figures dir) a notebook writes to: the committed data/ and figures/ hold
    the last full ``cpu`` run; other profiles write beside them so they never overwrite it."""
    if profile == "cpu":
        return DATA, FIGURES
    if profile == "smoke":
        return BUILD / "smoke" / "data", BUILD / "smoke" / "figures"
    return DATA / profile, FIGURES / profile


def runs(profile: str) -> Path:
    """Where the training notebooks keep their runs for ``profile``: ``runs/<profile>``. Every
    file of a run but its checkpoints (``checkpoint-<step>/``, git-ignored) is kept in git, so a
    training notebook longer than a session resumes in the next from its logs, rollouts and
    evaluation stores (``paperlib.training.checkpoints``); ``runs/smoke`` is ignored whole."""
    return RUNS / profile
