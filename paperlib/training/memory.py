"""Where a training step's memory peaks: the peak resident memory of each of its phases.

On Linux the kernel keeps a process's peak resident memory (``VmHWM`` in ``/proc/self/status``)
and resets it when 5 is written to ``/proc/self/clear_refs``; a phase resets it as it starts and
reads it as it ends. Some kernels (sandboxed ones) accept the write and keep the mark: a reset
counts only where the mark then stands at the resident memory. The reset also resets what
``getrusage`` reports as the process's peak, so :class:`PhasePeaks` keeps that peak itself.
Where the reset is not possible (another OS, or a kernel that keeps the mark), the phases' peaks
are NaN and the process's peak is ``getrusage``'s."""

from __future__ import annotations

import math
import resource
from contextlib import contextmanager
from pathlib import Path

_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


_RESET_SLACK_GB = 1 / 64  # how far the resident memory may fall between the reset and its check


def _status_gb(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmHWM``, ``VmRSS``) in GB (NaN where unknown)."""
    try:
        line = next(x for x in _STATUS.read_text().splitlines() if x.startswith(f"{field}:"))
    except (OSError, StopIteration):
        return math.nan
    return int(line.split()[1]) / 2**20  # kB


def _reset() -> bool:
    """Reset the high-water mark; whether it took effect (the mark fell to the resident memory)."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_gb("VmHWM") <= _status_gb("VmRSS") + _RESET_SLACK_GB


def _process_peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


class PhasePeaks:
    """The peak resident memory of each named phase of a step (the largest where a phase runs
    several times in a step) and of the process so far (``getrusage``'s before the first phase,
    then the phases'), in GB."""

    def __init__(self):
        self.process_gb = _process_peak_gb()
        self.phases: dict[str, float] = {}

    def new_step(self) -> None:
        self.phases = {}

    @contextmanager
    def phase(self, name: str):
        measured = _reset()
        try:
            yield
        finally:
            peak = _status_gb("VmHWM") if measured else math.nan
            self.phases[name] = max(self.phases.get(name, peak), peak)
            self.process_gb = max(self.process_gb, peak if measured else _process_peak_gb())

    def row(self) -> dict[str, float]:
        """The log's columns: ``<phase>_peak_gb`` for each phase, and ``peak_rss_gb``, the process's."""
        return {**{f"{name}_peak_gb": gb for name, gb in self.phases.items()}, "peak_rss_gb": self.process_gb}
