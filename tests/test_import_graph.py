"""Imports point one way: reports use games and trainers, games use the shared layers. The shared
layers (the trainers included) never import a game, no game imports another, no game and no shared
layer imports a report, and the package's import graph (every import, at module level or inside a
function) has no cycle."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "paperlib"
GAMES = ("paperlib.philosophers", "paperlib.bandits", "paperlib.tictactoe")
SHARED = (
    "paperlib.llm",
    "paperlib.backends",
    "paperlib.training",
    "paperlib.data",
    "paperlib.stats",
    "paperlib.paths",
    "paperlib.argtypes",
    "paperlib.decisions",
    "paperlib.models",
    "paperlib.profiles",
)
REPORTS = ("paperlib.reports",)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every paperlib module this file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("paperlib")}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in imports_of(path) if target in files and target != name}
        for name, path in files.items()
    }


def within(name: str, prefixes) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def test_shared_layers_never_import_a_game(graph):
    upward = [(m, t) for m, targets in graph.items() if within(m, SHARED) for t in targets if within(t, GAMES)]
    assert not upward


def test_no_game_and_no_shared_layer_imports_a_report(graph):
    upward = [
        (m, t) for m, targets in graph.items() if within(m, GAMES + SHARED) for t in targets if within(t, REPORTS)
    ]
    assert not upward


def test_the_trainers_are_checked_as_a_shared_layer(graph):
    trainers = [m for m in graph if within(m, ("paperlib.training",))]
    assert {"paperlib.training.grpo", "paperlib.training.rlft.loop", "paperlib.training.settings"} <= set(trainers)
    assert all(within(m, SHARED) for m in trainers)


def test_no_game_imports_another(graph):
    across = [
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if within(m, GAMES) and within(t, GAMES) and within(m, GAMES) != within(t, GAMES)
    ]
    assert not across


def test_the_import_graph_has_no_cycle(graph):
    # a package imports its __init__ implicitly; edges into a package's own __init__ are not cycles
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles


def test_the_checker_sees_a_planted_cycle(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    from paperlib.b import g\n")
    b.write_text("import paperlib.a\n")
    assert imports_of(a) == {"paperlib.b", "paperlib.b.g"} and imports_of(b) == {"paperlib.a"}
