"""What a fresh clone relies on: pinned dependencies, stripped notebooks, one set of settings."""

import json
import re
from pathlib import Path

from paperlib import paths, profiles

ROOT = Path(__file__).resolve().parents[1]


def pyproject_dependencies():
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return re.findall(r'"([^"]+)"', block)


def test_every_dependency_is_pinned_and_torch_takes_the_cpu_build_release():
    deps = pyproject_dependencies()
    assert all("==" in d for d in deps), [d for d in deps if "==" not in d]
    assert "torch==2.13.0" in deps


def test_environment_yml_lists_the_same_packages():
    listed = re.findall(r"^\s+- (\S+==\S+)$", (ROOT / "environment.yml").read_text(), re.M)
    assert sorted(listed) == sorted(pyproject_dependencies())
    assert "python=3.11" in (ROOT / "environment.yml").read_text()


def test_notebooks_are_committed_without_outputs():
    notebooks = sorted(paths.NOTEBOOKS.glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        cells = json.loads(path.read_text())["cells"]
        dirty = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count")]
        assert not dirty, f"{path.name} has outputs in cells {dirty}: run nbstripout"


def test_every_notebook_starts_with_a_title_and_a_parameters_cell():
    for path in sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        assert cells[0]["cell_type"] == "markdown" and cells[0]["source"][0].startswith("# ")
        tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1 and "profile" in "".join(tagged[0]["source"]), path.name


def test_profiles():
    assert set(profiles.PROFILES) == {"smoke", "cpu", "paper"}
    assert profiles.get_profile("cpu").env_episodes == 30  # the paper's 30 episodes per cell
    try:
        profiles.get_profile("laptop")
    except ValueError as exc:
        assert "unknown profile 'laptop'" in str(exc)
    else:
        raise AssertionError("no error for an unknown profile")


def test_paper_reported_numbers_are_the_shared_file():
    shared = ROOT.parent / "shared" / "paper_reported.csv"
    ours = paths.PAPER_REPORTED.read_text()
    assert ours.startswith("paper,id,claim")
    if shared.exists():
        assert shared.read_text() == ours
