"""Run the numbered notebooks in order with papermill, and export each to HTML.

Each notebook runs into an executed copy under build/notebooks/ (ignored by git);
the committed notebooks stay without outputs. While a notebook runs, what it prints
and its progress bars stream to the console; a failing notebook stops the run with
one line naming it and the failing cell's error. After each notebook the data files
it changed are recorded in the data directory's MANIFEST.json, and at the end of the
run build/index.html links every executed notebook and figure. One run at a time: a second,
while one is in progress, stops in one line (:func:`one_run_at_a_time`).

Every notebook has a ``generate`` parameter: ``True`` plays its rollouts afresh (what
``./reproduce.sh`` passes), ``False`` rebuilds its tables and figures from the data
already in the data directory (``--from-data``, and the default in the notebook itself,
so that a notebook opened in JupyterLab reads the committed data).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import sys
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from urllib.parse import quote

from paperlib import paths
from paperlib.profiles import PROFILES
from paperlib.training import precision

MANIFEST = "MANIFEST.json"
LOCK = "notebooks.lock"  # under build/: held by the run of the notebooks in progress
PROGRESS_EVERY = 10.0  # seconds between two console lines of one progress bar


# Seconds each notebook takes on the `cpu` profile on a 2-core CPU (the machine the README's costs
# were measured on), playing its rollouts afresh, and where the number comes from; a rebuild from
# the data (--from-data) takes FROM_DATA_SECONDS per notebook. ./reproduce.sh prints their sum
# before it starts, and the README's table of commands gives them per notebook.
ESTIMATES = {
    "01": (10, "measured: scripted policies only"),
    "02": (
        2_150,
        "measured: three models, 30 episodes per cell, 1,447 s (README), and Qwen2.5-Coder-1.5B at N = 5, 696 s",
    ),
    "03": (
        7_500,
        "estimated: the positive control and three paper-reward runs, 64 GRPO steps at about 110 s on the bfloat16 trainer "
        "(measured in float32 on an AVX2-only CPU: a paper-reward run 2,535 s, README)",
    ),
    "04": (
        5_700,
        "measured: 11-12.5 min per 4,500 decisions uncontended (gap_max_batch 450), for the base model once and "
        "seven adapters (three seeds' kept ones, two of nine the same adapter as another, copied), over two sessions",
    ),
    "05": (
        26_100,
        "measured in bfloat16 on a CPU with AVX512-BF16, over five sessions: nine 16-step runs (three runs x three "
        "seeds) 18,300 s with their validation (shaped 2,170 s, 1,872 s and about 1,900 s, curriculum 2,556 s, "
        "3,013 s and 3,463 s, penalty 833 s, 884 s and 1,631 s: its steps took 9-60 s once it deadlocked), the 27 "
        "kept adapters' held-out play (10 episodes per cell at N = 5, 10, 15) about 7,840 s",
    ),
    "06": (1_251, "measured: the base model and notebook 03's last adapter, 30 episodes each at N = 5 (1,410 turns)"),
    "11": (578, "measured: the executed notebook's papermill duration"),
    "12": (342, "measured: the executed notebook's papermill duration, four models"),
    "13": (2_050, "measured: the executed notebook's papermill duration, the 1.5B thinking 512 tokens a step"),
    "14": (
        8_100,
        "estimated: 72 RLFT updates (three seeds, with and without the bonus) at about 95 s, the controls, the CoT ablation "
        "and the held-out play (measured on an AVX2-only CPU in float32: 84 updates, their medians 259 s and 185 s for "
        "the Gemma 3 270M control, about 6 h; the CoT ablation 407-524 s there, 223-383 s in bfloat16 from its update 4 "
        "on a CPU with AVX512-BF16; 9.5 h in all as logged, with other jobs beside it)",
    ),
    "15": (1_200, "estimated: 3,600 steps of seven mechanisms, self-consistency 16 samples a step"),
    "16": (
        11_300,
        "measured in bfloat16 on a CPU with AVX512-BF16, over two sessions: the main run's 36 updates at a median of "
        "110-130 s (4,400 s), the CoT ablation's 12 at 231-320 s (3,500 s), the held-out cells 55 min (3,300 s)",
    ),
    "90": (10, "measured: builds the release from the data"),
    "99": (5, "measured: stacks the claims"),
}
FROM_DATA_SECONDS = 6  # measured: 3-4 s of papermill per notebook, and the kernel's start
# the notebooks that train: ESTIMATES assume a CPU that multiplies bfloat16 natively; elsewhere they
# train in float32, measured at two to three times the time (README: on an AVX2-only CPU a cpu
# GRPO step 247-252 s and an RLFT update 267 s in float32, against about 107 s and 95 s estimated
# in bfloat16; an update 227-265 s since)
TRAINING_NOTEBOOKS = ("03", "05", "14", "16")
FLOAT32_SLOWDOWN = (2, 3)  # the range above, applied to a whole training notebook's estimate


def duration(seconds: float) -> str:
    """``seconds`` as a reader says it: 40 s, 24 min, 2 h 20 min."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"


def estimate(selected: list[Path], profile: str, generate: bool) -> str:
    """One line saying what a run will do and how long it should take, printed before it starts."""
    names = " ".join(p.name[:2] for p in selected)
    if not generate:
        total = FROM_DATA_SECONDS * len(selected)
        return f"will rebuild {len(selected)} notebooks ({names}) from the data: about {duration(total)}"
    if profile != "cpu":
        size = "a few minutes in all" if profile == "smoke" else "not estimated (GPUs or an API gateway)"
        return f"will run {len(selected)} notebooks ({names}), playing their rollouts: {size}"
    parts = [f"{p.name[:2]} {duration(ESTIMATES.get(p.name[:2], (FROM_DATA_SECONDS, ''))[0])}" for p in selected]
    total = sum(ESTIMATES.get(p.name[:2], (FROM_DATA_SECONDS, ""))[0] for p in selected)
    training = [p.name[:2] for p in selected if p.name[:2] in TRAINING_NOTEBOOKS]
    slower = ""
    if training and not precision.cpu_multiplies_bf16():
        trains = sum(ESTIMATES[number][0] for number in training)
        low, high = (duration(total + (times - 1) * trains) for times in FLOAT32_SLOWDOWN)
        slower = (
            f"; this CPU has no native bfloat16, so training (notebook{'s' if len(training) > 1 else ''} "
            f"{', '.join(training)}) runs in float32 and takes two to three times as long: about {low} to {high} in all"
        )
    return (
        f"will run {len(selected)} notebooks, playing their rollouts afresh ({', '.join(parts)}): "
        f"about {duration(total)} on a 2-core CPU (a run resumes where it stopped){slower}"
    )


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks, in order; ``only`` keeps those whose number is listed."""
    found = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if only:
        unknown = sorted(set(only) - {p.name[:2] for p in found})
        if unknown:
            raise ValueError(f"no notebook numbered {unknown[0]}; have {', '.join(p.name[:2] for p in found)}")
        found = [p for p in found if p.name[:2] in only]
    return found


def execute(
    notebook: Path, profile: str, out_dir: Path | None = None, parameters: dict | None = None, generate: bool = True
) -> Path:
    """Execute one notebook with papermill, streaming its output to the console, and write
    it, and an HTML export, to ``out_dir``; the executed copy records its paths relative
    to the repository."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter
    from papermill.engines import papermill_engines

    papermill_engines.register("paperlib", _engine())
    out_dir = Path(out_dir or paths.EXECUTED_NOTEBOOKS)
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / notebook.name
    try:
        papermill.execute_notebook(
            str(notebook),
            str(executed),
            parameters={"profile": profile, "generate": generate, **(parameters or {})},
            cwd=str(notebook.parent),
            kernel_name="python3",
            engine_name="paperlib",
            progress_bar=False,
            stdout_file=sys.stdout,
            stderr_file=sys.stderr,
        )
    finally:
        if executed.exists():
            node = nbformat.read(executed, as_version=4)
            node.metadata.papermill.update(
                input_path=str(paths.relative(notebook)), output_path=str(paths.relative(executed))
            )
            nbformat.write(node, executed)
            html_text, _ = HTMLExporter().from_notebook_node(node, resources={"metadata": {"name": title(node)}})
            executed.with_suffix(".html").write_text(html_text, encoding="utf-8")
    return executed


def title(node) -> str:
    """A notebook's title: the first heading of its first markdown cell (``# 03 · GRPO training``),
    else its file name. The HTML page and the index show it."""
    for cell in node.cells:
        if cell.cell_type == "markdown":
            heading = next((line for line in cell.source.splitlines() if line.startswith("#")), None)
            if heading:
                return heading.lstrip("#").strip()
            break
    return Path(node.metadata.get("papermill", {}).get("input_path", "notebook")).stem


@cache
def _engine():
    """papermill's nbclient engine, with a client that also prints the notebook's progress
    bars on the console: tqdm draws them as widgets, whose updates reach the client as
    widget messages rather than as output. A bar gets a line every PROGRESS_EVERY seconds
    while it runs and one when it ends; a bar that ends sooner gets only the last. The
    kernel's own log (a warning that its local connection is not encrypted) stays quiet."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine
    from papermill.log import logger

    class Client(PapermillNotebookClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.printed = {}  # bar -> (time, line) of its last console line, or of its start

        def bar(self, model_id):
            """(line, ended) of the tqdm bar ``model_id`` (an HBox of description, bar and counts), or None."""
            children = self.widget_state.get(model_id, {}).get("children") or []
            if len(children) != 3:
                return None
            left, progress, right = (self.widget_state.get(c.removeprefix("IPY_MODEL_"), {}) for c in children)
            if progress.get("_model_name") != "FloatProgressModel":
                return None
            line = " ".join(html.unescape(f"{left.get('value', '')} {right.get('value', '')}").split())
            return line, progress.get("value") == progress.get("max")

        def handle_comm_msg(self, outs, msg, cell_index):
            super().handle_comm_msg(outs, msg, cell_index)
            changed = "IPY_MODEL_" + msg["content"]["comm_id"]
            for model_id, state in list(self.widget_state.items()):
                if (state.get("children") or [None])[-1] == changed and (bar := self.bar(model_id)):
                    self.report(model_id, *bar)  # the counts change last in each of tqdm's updates

        def report(self, model_id, line, ended):
            now = time.monotonic()
            since, last = self.printed.setdefault(model_id, (now, ""))
            if line != last and (ended or now - since >= PROGRESS_EVERY):
                print(f"  {line}", flush=True)
                self.printed[model_id] = (now, line)

        def execute(self, **kwargs):
            """Execute, then give each bar's output its final line as plain text (not its first)."""
            nb = super().execute(**kwargs)
            for cell in nb.cells:
                for output in cell.get("outputs", []):
                    view = output.get("data", {}).get("application/vnd.jupyter.widget-view+json")
                    if view and (bar := self.bar(view["model_id"])):
                        output.data["text/plain"] = bar[0]
            return nb

    class Engine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(
            cls, nb_man, kernel_name, stdout_file=None, stderr_file=None, start_timeout=60, **kwargs
        ):
            return Client(
                nb_man,
                kernel_name=kernel_name,
                log=logger,
                startup_timeout=start_timeout,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
            ).execute()

    return Engine


def from_data(*files: str | os.PathLike) -> None:
    """In a notebook run with ``generate = False``: say in one line which data it reads
    instead of generating, or stop with one line naming what is missing."""
    names = ", ".join(str(paths.relative(f)) for f in files)
    missing = [str(paths.relative(f)) for f in files if not Path(f).exists()]
    if missing:
        raise FileNotFoundError(
            f"generate = False, but {', '.join(missing)} is missing: run with generate = True to play the rollouts"
        )
    print(f"generate = False: reading {names} instead of playing the rollouts")


def stored_runs(directory: str | os.PathLike, runs) -> tuple:
    """In a notebook run with ``generate = False``: the episode and step rows of exactly
    ``runs`` (each with an ``id``) from the RolloutStore at ``directory``, or one line
    naming a run it lacks."""
    from paperlib.data import RolloutStore

    from_data(directory)
    store = RolloutStore(directory)
    episodes, steps = store.episodes(), store.steps()
    ids = [run.id for run in runs]
    missing = [i for i in ids if episodes.empty or i not in set(episodes["run"])]
    if missing:
        raise FileNotFoundError(
            f"generate = False, but {paths.relative(directory)} lacks {len(missing)} of this "
            f"profile's runs ({missing[0]}, ...): run with generate = True to play them"
        )
    return (
        episodes[episodes["run"].isin(ids)].reset_index(drop=True),
        steps[steps["run"].isin(ids)].reset_index(drop=True),
    )


def snapshot(data_dir: str | os.PathLike) -> dict[str, tuple[str, int]]:
    """(sha256 of the content, modification time in ns) of each data file and store directory
    directly under ``data_dir``; a directory's name ends with "/", its hash covers every file's
    relative path and content, its time is its newest file's."""
    found = {}
    for entry in sorted(Path(data_dir).glob("[!.]*")):
        if entry.is_dir():
            files = sorted(f for f in entry.rglob("*") if f.is_file())
            if files:
                digest = hashlib.sha256()
                for f in files:
                    digest.update(f"{f.relative_to(entry).as_posix()}\0{_sha256(f)}\0".encode())
                found[entry.name + "/"] = (digest.hexdigest(), max(f.stat().st_mtime_ns for f in files))
        elif entry.name != MANIFEST:
            found[entry.name] = (_sha256(entry), entry.stat().st_mtime_ns)
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def update_manifest(
    data_dir: str | os.PathLike,
    before: dict[str, tuple[str, int]],
    notebook: str,
    profile: str,
    commit: str | None = None,
) -> list[str]:
    """Record in ``data_dir/MANIFEST.json`` the notebook, profile, commit and date (the file's
    modification time) that made each data file whose content changed since ``before`` (a
    :func:`snapshot`); entries of unchanged files stay, even where a notebook wrote the same bytes
    again (so a rebuild from the data leaves the manifest as it was), and those of files no
    longer there go. Returns the changed names."""
    from paperlib.publish import code_version

    after = snapshot(data_dir)
    changed = [name for name, (digest, _) in after.items() if before.get(name, ("",))[0] != digest]
    path = Path(data_dir) / MANIFEST
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest = {name: entry for name, entry in manifest.items() if name in after}
    commit = commit or code_version()
    for name in changed:
        date = datetime.fromtimestamp(after[name][1] / 1e9, UTC).isoformat(timespec="seconds")
        manifest[name] = {"notebook": notebook, "profile": profile, "commit": commit, "date": date}
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    if (changed or path.exists()) and (not path.exists() or path.read_text() != text):
        path.write_text(text)
    return changed


def write_index(
    notebooks_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    index: str | os.PathLike,
    claims: str | os.PathLike | None = None,
) -> Path:
    """Write ``index``, an HTML page linking every executed notebook's HTML export in
    ``notebooks_dir`` (by its title), every figure in ``figures_dir`` with its caption
    (``plots.CAPTIONS``) and the notebook that draws it, and ``claims`` (claims.csv) where it
    exists, all by links relative to the page."""
    import nbformat

    from paperlib.plots import CAPTIONS

    index = Path(index)

    def link(path: Path) -> str:
        return html.escape(quote(Path(os.path.relpath(path, index.parent)).as_posix()))

    pages = sorted(Path(notebooks_dir).glob("*.html"))
    titles = {}
    for page in pages:
        executed = page.with_suffix(".ipynb")
        try:
            titles[page] = title(nbformat.read(executed, as_version=4)) if executed.exists() else page.stem
        except Exception:  # an unreadable executed notebook: its file name will do
            titles[page] = page.stem
    by_number = {page.name[:2]: page for page in pages}
    notebook_items = [f'<li><a href="{link(p)}">{html.escape(titles[p])}</a></li>' for p in pages]
    figure_items = []
    for figure in sorted(Path(figures_dir).glob("*.png")):
        page = by_number.get(figure.name[:2])
        source = f' From <a href="{link(page)}">{html.escape(titles[page])}</a>.' if page else ""
        caption = html.escape(CAPTIONS.get(figure.stem, ""))
        figure_items.append(
            f'<figure><a href="{link(figure)}"><img src="{link(figure)}" alt="{html.escape(figure.stem)}" '
            f'width="420"></a><figcaption><b>{html.escape(figure.name)}</b>. {caption}{source}</figcaption></figure>'
        )
    claims_line = (
        f'<p>Every paper number beside ours, with its verdict: <a href="{link(Path(claims))}">'
        f"{html.escape(Path(claims).name)}</a>.</p>"
        if claims is not None and Path(claims).exists()
        else ""
    )
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(
        "\n".join(
            [
                '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>paperlib: notebooks and figures</title>',
                "<style>body{font-family:sans-serif;margin:2em;max-width:90em}"
                "figure{display:inline-block;vertical-align:top;width:420px;margin:0 1.5em 1.5em 0}"
                "figcaption{font-size:0.85em}</style>",
                "</head><body>\n<h1>Executed notebooks</h1>",
                claims_line,
                "<ul>",
                *notebook_items,
                "</ul>\n<h1>Figures</h1>",
                *figure_items,
                "</body></html>\n",
            ]
        ),
        encoding="utf-8",
    )
    return index


@contextmanager
def one_run_at_a_time(lock: Path):
    """Hold ``lock`` for a run of the notebooks. A second run while one holds it stops in one line
    naming the first: both would write the same executed notebooks, and each would record the
    other's data files as its own in the manifest (and on a small machine they slow each other
    several-fold). The lock is the kernel's, so a killed run leaves none behind."""
    import fcntl

    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise OSError(
                f"another run of the notebooks is in progress ({holder}): wait for it to end; "
                "two runs would record each other's data files in the manifest"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, started {datetime.now(UTC).isoformat(timespec='seconds')}\n")
        handle.flush()
        yield


def run(profile: str, only: list[str] | None = None, generate: bool = True) -> int:
    """Run the selected notebooks; returns the exit status (1 when a notebook failed). A failed
    notebook is reported in one line and the run goes on to the next (a later notebook that
    needs its data fails in one line of its own); the failures are listed again at the end."""
    from papermill.exceptions import PapermillExecutionError

    data_dir, figures_dir = paths.outputs(profile)
    how = (
        "plays its rollouts afresh (generate = True)"
        if generate
        else f"reads {paths.relative(data_dir)}/ (generate = False, --from-data)"
    )
    failed = []
    with one_run_at_a_time(paths.BUILD / LOCK):
        selected = notebooks(only)
        print(f"[{profile}] {estimate(selected, profile, generate)}", flush=True)
        try:
            for notebook in selected:
                started = time.monotonic()
                before = snapshot(data_dir)
                print(f"[{profile}] {notebook.name} {how} ...", flush=True)
                try:
                    executed = execute(notebook, profile, generate=generate)
                except PapermillExecutionError as error:
                    reason = f"{error.ename}: {error.evalue}".splitlines()[0]
                    print(
                        f"[{profile}] {notebook.name} failed in cell {error.exec_count}: {reason} "
                        f"(the cell's traceback: {paths.relative(paths.EXECUTED_NOTEBOOKS / notebook.name)})",
                        file=sys.stderr,
                        flush=True,
                    )
                    failed.append(notebook.name)
                    continue
                finally:
                    changed = update_manifest(data_dir, before, str(paths.relative(notebook)), profile)
                print(
                    f"[{profile}] {notebook.name} done in {time.monotonic() - started:.0f} s -> "
                    f"{paths.relative(executed)}; wrote {', '.join(changed) or 'no data'}",
                    flush=True,
                )
        finally:
            index = write_index(
                paths.EXECUTED_NOTEBOOKS, figures_dir, paths.BUILD / "index.html", claims=data_dir / "claims.csv"
            )
            print(f"[{profile}] every executed notebook and figure: {paths.relative(index)}", flush=True)
    if failed:
        print(
            f"[{profile}] {len(failed)} notebook{'s' if len(failed) > 1 else ''} failed: {', '.join(failed)}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0


def add_commands(groups) -> None:
    command = groups.add_parser("notebooks", help="run the numbered notebooks with papermill")
    command.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    command.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 01 02")
    command.add_argument(
        "--from-data",
        action="store_true",
        help="rebuild the tables and figures from the data already written, playing no rollouts",
    )
    command.set_defaults(func=lambda args: run(args.profile, args.only, generate=not args.from_data))
