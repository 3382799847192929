"""The notebook pipeline: printed paths, the generate switch, the manifest, the index page, reproduce.sh."""

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import nbformat
import pandas as pd
import pytest

from paperlib import paths, pipeline, plots
from paperlib.data import RolloutStore

ROOT = Path(__file__).resolve().parents[1]


def test_relative_names_a_path_from_the_repository_root(monkeypatch, tmp_path):
    assert paths.relative(paths.DATA / "02_steps.parquet") == Path("data/02_steps.parquet")
    monkeypatch.chdir(paths.NOTEBOOKS)  # where a notebook runs
    assert paths.relative("../figures/02_coordination_gap.png") == Path("figures/02_coordination_gap.png")
    assert paths.relative(tmp_path / "x.png") == tmp_path / "x.png"  # outside the repository: as it is


def test_savefig_returns_the_path_relative_to_the_repository(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    fig, _ = plt.subplots()
    shown = plots.savefig(fig, "01_demo", tmp_path / "figures")
    plt.close(fig)
    assert shown == Path("figures/01_demo.png") and (tmp_path / shown).stat().st_size > 0


def test_index_links_every_executed_notebook_and_figure_relatively(tmp_path):
    build, figures = tmp_path / "build", tmp_path / "figures"
    for path in (
        build / "notebooks" / "01_environment_and_reward.html",
        build / "notebooks" / "11_bandit greediness.html",
        figures / "01_reward_vs_meals.png",
        figures / "11_coverage.png",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    node = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 01 · The environment and its reward")])
    nbformat.write(node, build / "notebooks" / "01_environment_and_reward.ipynb")  # not linked: only the HTML
    claims = tmp_path / "data" / "claims.csv"
    claims.parent.mkdir()
    claims.write_text("claim\n")

    index = pipeline.write_index(build / "notebooks", figures, build / "index.html", claims=claims)

    page = index.read_text()
    hrefs = [part.split('"', 1)[0] for part in page.split('href="')[1:]]
    assert hrefs == [
        "../data/claims.csv",
        "notebooks/01_environment_and_reward.html",
        "notebooks/11_bandit%20greediness.html",
        "../figures/01_reward_vs_meals.png",  # the figure, its caption and the notebook that draws it
        "notebooks/01_environment_and_reward.html",
        "../figures/11_coverage.png",
        "notebooks/11_bandit%20greediness.html",
    ]
    assert all((index.parent / href.replace("%20", " ")).exists() for href in hrefs)
    assert ">01 · The environment and its reward</a>" in page  # a notebook by its title
    assert all(html.escape(plots.CAPTIONS[name])[:40] in page for name in ("01_reward_vs_meals", "11_coverage"))
    assert str(tmp_path) not in page


def _touch(path, content, seconds):
    """Write ``content`` to ``path`` with a modification time ``seconds`` after the epoch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))


def test_manifest_records_what_a_notebook_changed_and_keeps_the_rest(tmp_path):
    _touch(tmp_path / "02_steps.parquet", "old", 1_000)
    _touch(tmp_path / "11_bandit_runs" / "episodes" / "part-00000.parquet", "old", 1_000)
    _touch(tmp_path / "01_scripted_summary.parquet", "old", 1_000)
    old = {
        "notebook": "notebooks/01_environment_and_reward.ipynb",
        "profile": "cpu",
        "commit": "a" * 40,
        "date": "2026-01-01T00:00:00+00:00",
    }
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"01_scripted_summary.parquet": old, "gone.parquet": old}))
    before = pipeline.snapshot(tmp_path)

    _touch(tmp_path / "02_steps.parquet", "new", 2_000)
    _touch(tmp_path / "11_bandit_runs" / "episodes" / "part-00001.parquet", "new", 3_000)
    changed = pipeline.update_manifest(
        tmp_path, before, "notebooks/02_coordination_gap.ipynb", "smoke", commit="b" * 40
    )

    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert changed == ["02_steps.parquet", "11_bandit_runs/"]
    assert manifest == {
        "01_scripted_summary.parquet": old,
        "02_steps.parquet": {
            "notebook": "notebooks/02_coordination_gap.ipynb",
            "profile": "smoke",
            "commit": "b" * 40,
            "date": "1970-01-01T00:33:20+00:00",
        },
        "11_bandit_runs/": {
            "notebook": "notebooks/02_coordination_gap.ipynb",
            "profile": "smoke",
            "commit": "b" * 40,
            "date": "1970-01-01T00:50:00+00:00",
        },
    }


def test_a_file_written_again_with_the_same_bytes_keeps_its_manifest_entry(tmp_path):
    """A rebuild from the data writes the same tables again: the manifest must not change."""
    _touch(tmp_path / "02_summary.parquet", "same", 1_000)
    _touch(tmp_path / "11_bandit_runs" / "episodes" / "part-00000.parquet", "same", 1_000)
    old = {
        "notebook": "notebooks/02_coordination_gap.ipynb",
        "profile": "cpu",
        "commit": "a" * 40,
        "date": "1970-01-01T00:16:40+00:00",
    }
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(
        json.dumps({"02_summary.parquet": old, "11_bandit_runs/": old}, indent=2, sort_keys=True) + "\n"
    )
    before, written = pipeline.snapshot(tmp_path), manifest.stat().st_mtime_ns
    _touch(tmp_path / "02_summary.parquet", "same", 5_000)
    _touch(tmp_path / "11_bandit_runs" / "episodes" / "part-00000.parquet", "same", 5_000)
    assert pipeline.update_manifest(tmp_path, before, "notebooks/02_coordination_gap.ipynb", "cpu", "b" * 40) == []
    assert json.loads(manifest.read_text()) == {"02_summary.parquet": old, "11_bandit_runs/": old}
    assert manifest.stat().st_mtime_ns == written
    _touch(tmp_path / "02_summary.parquet", "other", 6_000)
    assert pipeline.update_manifest(tmp_path, before, "notebooks/02_coordination_gap.ipynb", "cpu", "b" * 40) == [
        "02_summary.parquet"
    ]


def test_manifest_records_the_checkout_s_commit(tmp_path):
    before = pipeline.snapshot(tmp_path)
    (tmp_path / "a.parquet").write_text("x")
    pipeline.update_manifest(tmp_path, before, "notebooks/01_environment_and_reward.ipynb", "cpu")
    commit = json.loads((tmp_path / "MANIFEST.json").read_text())["a.parquet"]["commit"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert commit == (head or "unknown")


def test_from_data_says_what_it_reads_or_names_what_is_missing(tmp_path, capsys):
    present = tmp_path / "01_scripted_episodes.parquet"
    present.write_text("x")
    pipeline.from_data(present)
    assert capsys.readouterr().out == f"generate = False: reading {present} instead of playing the rollouts\n"
    with pytest.raises(
        FileNotFoundError,
        match=r"^generate = False, but \S+/02_steps.parquet is missing: run with "
        r"generate = True to play the rollouts$",
    ):
        pipeline.from_data(present, tmp_path / "02_steps.parquet")


def test_a_second_run_of_the_notebooks_stops_in_one_line_naming_the_first(tmp_path):
    lock = tmp_path / "build" / pipeline.LOCK
    with pipeline.one_run_at_a_time(lock):
        with pytest.raises(OSError, match=r"^another run of the notebooks is in progress \(pid \d+, started \S+\): "):
            with pipeline.one_run_at_a_time(lock):
                pass
        env = {**os.environ, "PAPERLIB_HOME": str(tmp_path)}
        result = subprocess.run(
            [sys.executable, "-m", "paperlib.cli", "notebooks", "--profile", "smoke", "--only", "01"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith(
            f"paperlib: error: another run of the notebooks is in progress (pid {os.getpid()}"
        )
        assert len(result.stderr.splitlines()) == 1
    with pipeline.one_run_at_a_time(lock):  # the first run's end released it
        pass


class _Run:
    def __init__(self, id):
        self.id = id


def test_stored_runs_returns_exactly_the_runs_asked_for_or_names_one_missing(tmp_path, capsys):
    store = RolloutStore(tmp_path / "11_bandit_runs")
    store.append(pd.DataFrame({"run": ["a", "b"], "coverage": [0.5, 0.7]}), pd.DataFrame({"run": ["a", "b", "b"]}))
    episodes, steps = pipeline.stored_runs(tmp_path / "11_bandit_runs", [_Run("b")])
    assert episodes["coverage"].tolist() == [0.7] and len(steps) == 2
    with pytest.raises(
        FileNotFoundError, match=r"lacks 1 of this profile's runs \(c, \.\.\.\): run with generate = True"
    ):
        pipeline.stored_runs(tmp_path / "11_bandit_runs", [_Run("b"), _Run("c")])
    with pytest.raises(FileNotFoundError, match="13_knowing_doing_runs is missing"):
        pipeline.stored_runs(tmp_path / "13_knowing_doing_runs", [_Run("a")])


def test_reproduce_sh_help_lists_every_command():
    result = subprocess.run(["bash", str(ROOT / "reproduce.sh"), "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for command in (
        "./reproduce.sh  ",
        "--from-data",
        "--profile smoke",
        "--only 01 02",
        "./reproduce.sh lab",
        "./reproduce.sh test",
        "build/index.html",
        "data/MANIFEST.json",
    ):
        assert command in result.stdout, command
    wrong = subprocess.run(["bash", str(ROOT / "reproduce.sh"), "--form-data"], capture_output=True, text=True)
    assert wrong.returncode == 2 and wrong.stderr == "reproduce.sh: unknown argument '--form-data' (see --help)\n"


def test_notebooks_command_takes_from_data():
    from paperlib.cli import build_parser

    args = build_parser().parse_args(["notebooks", "--profile", "smoke", "--only", "01", "--from-data"])
    assert (args.profile, args.only, args.from_data) == ("smoke", ["01"], True)
    assert build_parser().parse_args(["notebooks"]).from_data is False


@pytest.mark.parametrize("notebook", pipeline.notebooks(), ids=lambda path: path.name[:2])
def test_every_notebook_reads_the_committed_data_unless_told_to_generate(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    (parameters,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    code = "".join(c.source for c in cells)
    assert "\ngenerate = False  # True: " in parameters.source and "\nif generate:\n" in code
    assert "pipeline.from_data(" in code or "pipeline.stored_runs(" in code


@pytest.mark.slow
def test_progress_bars_stream_to_the_console_and_render_as_widgets(tmp_path, capsys):
    notebook = tmp_path / "00_progress.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell("profile = None\ngenerate = None", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(
                    "from tqdm.auto import tqdm\nfor _ in tqdm(range(3), desc='episodes'):\n    pass\nprint('played')"
                ),
            ],
            metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        ),
        notebook,
    )

    executed = pipeline.execute(notebook, "smoke", out_dir=tmp_path / "out")

    console = capsys.readouterr()
    assert console.out.startswith("  episodes: 100% 3/3 [00:00<00:00, ") and console.out.endswith("it/s]\nplayed\n")
    assert "IProgress" not in console.err
    node = nbformat.read(executed, as_version=4)
    assert node.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    (bar, _) = node.cells[-1].outputs
    assert (
        "application/vnd.jupyter.widget-view+json" in bar.data
        and bar.data["text/plain"] == console.out.split("\n")[0][2:]
    )
    assert "IProgress" not in executed.read_text() and "IProgress" not in executed.with_suffix(".html").read_text()


@pytest.mark.slow
def test_from_data_without_the_data_stops_in_one_line_and_goes_on(tmp_path):
    """The pipeline on a copy of the repository with no data: notebooks 01 and 99 with --from-data."""
    (tmp_path / "notebooks").mkdir()
    for name in ("01_environment_and_reward.ipynb", "99_claims.ipynb"):
        shutil.copy(paths.NOTEBOOKS / name, tmp_path / "notebooks")
    (tmp_path / "data").mkdir()  # the papers' numbers are part of the repository, not generated data
    shutil.copy(paths.PAPER_REPORTED, tmp_path / "data")
    env = {**os.environ, "PAPERLIB_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "paperlib.cli", "notebooks", "--profile", "smoke", "--only", "01", "99", "--from-data"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )

    assert result.returncode == 1
    assert (
        "[smoke] 01_environment_and_reward.ipynb reads build/smoke/data/ (generate = False, --from-data)"
        in result.stdout
    )
    failed = [line for line in result.stderr.splitlines() if line.startswith("[smoke]")]
    assert failed[0] == (
        "[smoke] 01_environment_and_reward.ipynb failed in cell 5: FileNotFoundError: generate = False, "
        "but build/smoke/data/01_scripted_episodes.parquet is missing: run with generate = True to play "
        "the rollouts (the cell's traceback: build/notebooks/01_environment_and_reward.ipynb)"
    )
    assert failed[1].startswith("[smoke] 99_claims.ipynb failed in cell ")  # the run went on to the next notebook
    assert failed[2:] == ["[smoke] 2 notebooks failed: 01_environment_and_reward.ipynb, 99_claims.ipynb"]
    executed = tmp_path / "build" / "notebooks" / "01_environment_and_reward.ipynb"
    assert (
        nbformat.read(executed, as_version=4).metadata.papermill.input_path
        == "notebooks/01_environment_and_reward.ipynb"
    )
    assert (tmp_path / "build" / "index.html").exists()


def test_every_notebook_is_titled_by_its_first_heading():
    """The HTML export and the index show a notebook's own title, not nbconvert's "Notebook"."""
    import nbformat

    for path in pipeline.notebooks():
        node = nbformat.read(path, as_version=4)
        first = next(cell for cell in node.cells if cell.cell_type == "markdown").source.splitlines()[0]
        assert first.startswith("# ") and pipeline.title(node) == first[2:].strip() != "Notebook", path.name


def test_a_notebook_shows_each_figure_it_writes_below_its_cell(tmp_path):
    """Notebook 01 rebuilt from the committed data: its figure is an image output of the executed
    notebook (savefig shows it in a kernel), embedded in the HTML export, and saved under figures."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("01_scripted_episodes.parquet", "paper_reported.csv"):
        shutil.copy(paths.DATA / name, data)
    (notebook,) = pipeline.notebooks(["01"])
    parameters = {"data_dir": str(data), "figures_dir": str(tmp_path / "figures")}
    executed = pipeline.execute(notebook, "cpu", out_dir=tmp_path / "out", parameters=parameters, generate=False)

    written = sorted((tmp_path / "figures").glob("*.png"))
    node = nbformat.read(executed, as_version=4)
    images = [o for c in node.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert [p.name for p in written] == ["01_reward_vs_meals.png"] and len(images) == len(written)
    assert executed.with_suffix(".html").read_text(encoding="utf-8").count('src="data:image/png;base64,') == len(
        written
    )
    assert all(not cell.get("outputs") for cell in nbformat.read(notebook, as_version=4).cells)  # committed: none


def test_a_run_says_what_it_will_run_and_how_long_before_it_starts(monkeypatch):
    from paperlib.training import precision

    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: True)
    selected = pipeline.notebooks(["02", "14"])
    line = pipeline.estimate(selected, "cpu", generate=True)
    assert line.startswith("will run 2 notebooks, playing their rollouts afresh (02 36 min, 14 2 h 15 min)")
    assert "about 2 h 51 min on a 2-core CPU" in line and line.endswith("(a run resumes where it stopped)")
    monkeypatch.setattr(precision, "cpu_multiplies_bf16", lambda: False)  # an AVX2-only CPU: training in float32
    line = pipeline.estimate(pipeline.notebooks(["03", "04", "14"]), "cpu", generate=True)
    # 04's 1 h 35 min beside 03's 2 h 05 min and 14's 2 h 15 min, times two or three
    assert line.endswith(
        "so training (notebooks 03, 14) runs in float32 and takes two to three times as long: about 10 h 15 min "
        "to 14 h 35 min in all"
    )
    assert "bfloat16" not in pipeline.estimate(pipeline.notebooks(["04"]), "cpu", generate=True)
    assert pipeline.estimate(selected, "cpu", generate=False).startswith("will rebuild 2 notebooks (02 14)")
    assert set(pipeline.ESTIMATES) == {p.name[:2] for p in pipeline.notebooks()}  # every notebook has its time
    readme = (ROOT / "README.md").read_text()
    for number, (seconds, source) in pipeline.ESTIMATES.items():  # the README's table gives the same times
        (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{number}_")]
        assert row.endswith(f" {pipeline.duration(seconds)}{'' if source.startswith('measured') else ' (est.)'} |")
