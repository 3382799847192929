"""What a reader opens, in a real browser: Debian's chromium, headless, loads build/index.html and
one notebook page of each paper from a ``--from-data`` run of the smoke profile; every image on
them loads (natural width above 0) and no page names a directory of this machine."""

import os
import shutil
import subprocess
import sys

import pytest
from browser import executable, open_page

from paperlib import paths

NOTEBOOKS = ("01", "11", "99")  # paper A's first, paper B's first, the claims (index links claims.csv)


def _run(home, *arguments):
    env = {
        **os.environ,
        "PAPERLIB_HOME": str(home),
        "PAPERLIB_CACHE": str(paths.CACHE),  # the embedded models, already converted
        "PYTHONHASHSEED": "0",
    }
    result = subprocess.run(
        [sys.executable, "-m", "paperlib.cli", "notebooks", "--profile", "smoke", *arguments],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def _assert_read_as_a_reader_would(page, machine_paths, images_at_least=1):
    broken = [image["src"] for image in page["images"] if image["width"] <= 0]
    assert not broken, f"{page['title']}: {len(broken)} images did not load: {broken[:3]}"
    assert len(page["images"]) >= images_at_least, page["title"]
    for path in machine_paths:
        assert path not in page["html"] and path not in page["text"], (page["title"], path)


@pytest.mark.slow
def test_index_and_a_notebook_of_each_paper_load_every_image_in_chromium(tmp_path):
    binary = executable()
    if binary is None:
        if os.environ.get("PAPERLIB_REQUIRE_BROWSER"):  # CI sets it: there the test must run, not skip
            pytest.fail("no chromium on PATH, and PAPERLIB_REQUIRE_BROWSER is set (.ci/run installs chromium)")
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium); .ci/run installs it")
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    (home / "data").mkdir()
    shutil.copy(paths.PAPER_REPORTED, home / "data")
    for number in NOTEBOOKS:
        (notebook,) = paths.NOTEBOOKS.glob(f"{number}_*.ipynb")
        shutil.copy(notebook, home / "notebooks")
    _run(home, "--only", "01", "11")  # the smoke rollouts, then the tables and figures from them
    _run(home, "--from-data", "--only", *NOTEBOOKS)
    machine_paths = {str(home), str(tmp_path), str(paths.ROOT), str(paths.CACHE)}

    figures = sorted((home / "build" / "smoke" / "figures").glob("*.png"))
    index = open_page(home / "build" / "index.html", binary)
    _assert_read_as_a_reader_would(index, machine_paths, images_at_least=len(figures))
    assert len(figures) >= 6 and "claims.csv" in index["html"]
    for number, title in (("01", "01 · "), ("11", "11 · ")):
        (page,) = (home / "build" / "notebooks").glob(f"{number}_*.html")
        shown = open_page(page, binary)
        assert shown["title"].startswith(title)
        drawn = [figure for figure in figures if figure.name.startswith(f"{number}_")]
        _assert_read_as_a_reader_would(shown, machine_paths, images_at_least=len(drawn))
