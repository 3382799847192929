"""Where a training step's memory peaks (paperlib.training.memory): each phase's own peak, and the
process's, which resetting the kernel's high-water mark for a phase must not lose."""

import math
import mmap
import sys

import numpy as np
import pytest

from paperlib.training.memory import PhasePeaks

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's high-water mark is Linux's")


def _touch_and_free_fresh_pages(mb: int = 256) -> None:
    """Raise the resident memory by ``mb`` MB of pages the process never had, and give them back.
    An anonymous map, not an array: an allocator may serve a large array from memory it already
    holds (as on CI), which moves neither the resident memory nor its high-water mark."""
    with mmap.mmap(-1, mb * 2**20) as pages:
        np.frombuffer(pages, dtype=np.uint8)[:] = 1


@linux_only
def test_each_phase_reports_its_own_peak_and_the_process_keeps_the_largest():
    from paperlib.training import memory

    _touch_and_free_fresh_pages()
    if not memory._reset():
        pytest.skip("this kernel keeps the high-water mark when asked to reset it (the next test covers that case)")
    peaks = PhasePeaks()
    before = peaks.process_gb
    with peaks.phase("large"):
        _touch_and_free_fresh_pages()
    with peaks.phase("small"):
        pass
    with peaks.phase("large"):  # a phase run twice in a step reports its larger peak
        pass
    row = peaks.row()
    assert row["large_peak_gb"] >= row["small_peak_gb"] + 0.2
    assert row["peak_rss_gb"] >= max(before, row["large_peak_gb"])
    peaks.new_step()
    with peaks.phase("small"):
        pass
    assert set(peaks.row()) == {"small_peak_gb", "peak_rss_gb"} and peaks.row()["peak_rss_gb"] == row["peak_rss_gb"]


@linux_only
def test_a_reset_the_kernel_accepts_but_ignores_gives_no_phase_peak(monkeypatch, tmp_path):
    """As in a sandboxed kernel: the write succeeds and the mark stays at an earlier, larger peak."""
    from paperlib.training import memory

    monkeypatch.setattr(memory, "_CLEAR_REFS", tmp_path / "clear_refs")
    _touch_and_free_fresh_pages()  # the mark stays above the resident memory
    peaks = PhasePeaks()
    with peaks.phase("rollout"):
        pass
    assert math.isnan(peaks.row()["rollout_peak_gb"]) and peaks.row()["peak_rss_gb"] > 0


def test_without_the_kernels_reset_a_phase_has_no_peak_and_the_process_getrusages(monkeypatch):
    from paperlib.training import memory

    monkeypatch.setattr(memory, "_reset", lambda: False)
    peaks = PhasePeaks()
    with peaks.phase("rollout"):
        pass
    assert math.isnan(peaks.row()["rollout_peak_gb"]) and peaks.row()["peak_rss_gb"] > 0
