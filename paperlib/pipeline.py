"""Run the numbered notebooks in order with papermill, and export each to HTML.

Each notebook runs into an executed copy under build/notebooks/ (ignored by git);
the committed notebooks stay without outputs. A failing notebook stops the run
with its name and the failing cell's error.
"""

from __future__ import annotations

import time
from pathlib import Path

from paperlib import paths
from paperlib.profiles import PROFILES


def notebooks(only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks, in order; ``only`` keeps those whose number is listed."""
    found = sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if only:
        unknown = sorted(set(only) - {p.name[:2] for p in found})
        if unknown:
            raise ValueError(f"no notebook numbered {unknown[0]}; have {', '.join(p.name[:2] for p in found)}")
        found = [p for p in found if p.name[:2] in only]
    return found


def execute(notebook: Path, profile: str, out_dir: Path | None = None, parameters: dict | None = None) -> Path:
    """Execute one notebook with papermill and write it, and an HTML export, to ``out_dir``."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    out_dir = Path(out_dir or paths.EXECUTED_NOTEBOOKS)
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / notebook.name
    papermill.execute_notebook(
        str(notebook),
        str(executed),
        parameters={"profile": profile, **(parameters or {})},
        cwd=str(notebook.parent),
        kernel_name="python3",
        progress_bar=False,
    )
    html, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
    executed.with_suffix(".html").write_text(html, encoding="utf-8")
    return executed


def run(profile: str, only: list[str] | None = None) -> None:
    selected = notebooks(only)
    for notebook in selected:
        started = time.monotonic()
        print(f"[{profile}] {notebook.name} ...", flush=True)
        executed = execute(notebook, profile)
        print(f"[{profile}] {notebook.name} done in {time.monotonic() - started:.0f} s -> {executed}", flush=True)


def add_commands(groups) -> None:
    command = groups.add_parser("notebooks", help="run the numbered notebooks with papermill")
    command.add_argument("--profile", choices=sorted(PROFILES), default="cpu")
    command.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. 01 02")
    command.set_defaults(func=lambda args: run(args.profile, args.only))
