"""The layering is physical: what each package may import, checked on the source.

- `loopwatch._core` (events, fingerprints, steps, signals, policy, monitor, config) is the
  pure detector: it imports nothing of loopwatch outside itself, nothing but the standard
  library and rapidfuzz, and reads no environment and no clock.
- `loopwatch._analysis` (replay, evaluation, cross-validation, outcomes) reads sessions:
  it may use the core, the readers and the hosts' shapes, never the CLI, the hook, the
  supervisor or the adapters.
- One layer order for the whole package (`LAYERS`, CONTRIBUTING.md): a module imports only
  from its own unit and from the layers below its own, never from a sibling unit of its
  layer or from above; every module belongs to exactly one unit.
- No import cycle anywhere in the package, counting imports inside functions too.

Read from the files with `ast` rather than by importing them, so a lazy import inside a
function is seen as well as one at the top.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "loopwatch"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def type_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`: never run, so never a cycle."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def imports(name: str, path: Path, known: set[str], types: bool = False) -> list[tuple[str, int]]:
    """(module imported, line) for every import statement in the file that runs,
    resolved; inside functions too, and under `if TYPE_CHECKING:` only if `types`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped = set() if types else type_only(tree)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from .. import safefile` imports the module `safefile`, not the package's
            # names (the package's __init__ runs for any of its submodules alike)
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in known]
            if len(submodules) < len(node.names):
                found.append((target, node.lineno))
            found += [(module, node.lineno) for module in submodules]
    return found


def internal_graph(under: str = "loopwatch", types: bool = False) -> dict[str, set[str]]:
    mods = {name: path for name, path in modules().items() if name == under or name.startswith(under + ".")}
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges = set()
        for target, _ in imports(name, path, known, types):
            if target in known and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


STDLIB = set(sys.stdlib_module_names) | {"__future__"}
CORE_MAY_USE = {"rapidfuzz"}  # echo's similarity, imported lazily


def test_the_core_imports_nothing_of_loopwatch_outside_itself() -> None:
    mods = modules()
    problems = []
    for name, path in mods.items():
        if not name.startswith("loopwatch._core"):
            continue
        for target, line in imports(name, path, set(mods)):
            top = target.split(".")[0]
            if top == "loopwatch":
                if not (target == "loopwatch._core" or target.startswith("loopwatch._core.")):
                    problems.append(f"{path.relative_to(SRC)}:{line} imports {target}")
            elif top not in STDLIB and top not in CORE_MAY_USE:
                problems.append(f"{path.relative_to(SRC)}:{line} imports {target} (not the standard library)")
    assert problems == []


def test_the_core_reads_no_environment_and_no_clock() -> None:
    problems = []
    for name, path in modules().items():
        if not name.startswith("loopwatch._core"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if (node.value.id, node.attr) in {
                    ("os", "environ"),
                    ("os", "getenv"),
                    ("os", "environb"),
                    ("time", "time"),
                    ("time", "monotonic"),
                    ("time", "perf_counter"),
                }:
                    problems.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value.id}.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module in ("os", "time"):
                names = {a.name for a in node.names}
                if names & {"environ", "getenv", "time", "monotonic", "perf_counter"}:
                    problems.append(f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import {names}")
    assert problems == []


def test_analysis_uses_the_core_and_the_readers_but_no_front_end() -> None:
    mods = modules()
    front_ends = ("loopwatch._cli", "loopwatch._hook", "loopwatch._supervise", "loopwatch.adapters", "loopwatch._guard")
    problems = []
    for name, path in mods.items():
        if not name.startswith("loopwatch._analysis"):
            continue
        for target, line in imports(name, path, set(mods)):
            if any(target == f or target.startswith(f + ".") for f in front_ends):
                problems.append(f"{path.relative_to(SRC)}:{line} imports {target}")
    assert problems == []


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    # A package's __init__ importing its own submodules is not a cycle of concepts
    # (`signals/__init__` lists the signals; a signal importing `..finding` is not
    # importing `signals`), so an edge from a module to its own package is left out.
    def edges(node: str) -> set[str]:
        return {t for t in graph[node] if not node.startswith(t + ".")}

    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges(node)):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_counting_lazy_imports() -> None:
    assert find_cycle(internal_graph()) is None


def test_the_core_has_no_import_cycle_counting_type_only_imports() -> None:
    # A concept of the core that needs another only for its types still depends on it:
    # the core's modules form a one-way order, type-only imports included.
    assert find_cycle(internal_graph("loopwatch._core", types=True)) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    # the check above must be able to fail: a lazy import back is a cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"p": set(), "p.x": {"p"}, "q": {"p.x"}}) is None


@pytest.mark.parametrize("name", ["loopwatch._core", "loopwatch._analysis"])
def test_each_layer_is_a_package(name: str) -> None:
    assert name in modules()


#: The layers, lowest first; each a tuple of units (a unit is a subpackage, or a top-level
#: module; "loopwatch" is the package's own `__init__`, the public facade, which lends
#: `Guard` lazily and so sits with the front ends). A unit imports from the layers below
#: its own; units of one layer are independent of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the pure detector; plain file machinery; data as output (JSON, text for a terminal)
    ("loopwatch._core", "loopwatch._files", "loopwatch._safefile", "loopwatch._encode"),
    ("loopwatch._hosts", "loopwatch._configfile"),  # host shapes; config files
    ("loopwatch._trust",),  # which settings are trusted (reads config files)
    ("loopwatch._readers",),
    ("loopwatch.extend",),  # what extending needs: the core's pieces, registering signals and readers
    ("loopwatch._analysis",),
    (  # the front ends over the analysis and the core
        "loopwatch._hook",
        "loopwatch._supervise",
        "loopwatch._guard",
        "loopwatch._html",
        "loopwatch.rollouts",
        "loopwatch",
    ),
    ("loopwatch.adapters",),
    ("loopwatch._cli",),
    ("loopwatch.__main__",),
)


def unit_of(module: str) -> str | None:
    """The unit a module belongs to: the longest unit naming it or its package."""
    units = [u for layer in LAYERS for u in layer]
    found = [u for u in units if module == u or (u != "loopwatch" and module.startswith(u + "."))]
    return max(found, key=len) if found else None


def layer_of(unit: str) -> int:
    return next(n for n, layer in enumerate(LAYERS) if unit in layer)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for name, targets in sorted(graph.items()):
        mine = unit_of(name)
        if mine is None:
            problems.append(f"{name} is in no layer: place it in LAYERS (and CONTRIBUTING.md)")
            continue
        for target in sorted(targets):
            theirs = unit_of(target)
            if theirs is None or theirs == mine:
                continue
            if layer_of(theirs) >= layer_of(mine):
                where = "a sibling in its layer" if layer_of(theirs) == layer_of(mine) else "a layer above"
                problems.append(f"{name} ({mine}) imports {target} ({theirs}): {where}")
    return problems


def test_the_package_follows_one_layer_order() -> None:
    assert layer_violations(internal_graph()) == []


def test_the_layer_check_finds_an_import_upwards_or_sideways() -> None:
    # it must be able to fail: the core reaching the CLI (inside a function, as a lazy
    # import would), a reader reaching analysis, a hook module reaching the supervisor,
    # and a module placed nowhere
    graph = {
        "loopwatch._core.monitor": {"loopwatch._cli.scan"},
        "loopwatch._readers.codex": {"loopwatch._analysis.replay", "loopwatch._core.events"},
        "loopwatch._hook.guard": {"loopwatch._supervise.pump"},
        "loopwatch.newthing": set(),
        "loopwatch._cli.scan": {"loopwatch._core.monitor", "loopwatch"},
    }
    assert sorted(layer_violations(graph)) == sorted(
        [
            "loopwatch._core.monitor (loopwatch._core) imports loopwatch._cli.scan (loopwatch._cli): a layer above",
            (
                "loopwatch._hook.guard (loopwatch._hook) imports loopwatch._supervise.pump (loopwatch._supervise): "
                "a sibling in its layer"
            ),
            "loopwatch.newthing is in no layer: place it in LAYERS (and CONTRIBUTING.md)",
            (
                "loopwatch._readers.codex (loopwatch._readers) imports loopwatch._analysis.replay (loopwatch._analysis): "
                "a layer above"
            ),
        ]
    )


def test_the_layer_check_reads_imports_inside_functions(tmp_path: Path) -> None:
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from ..other import thing\n    return thing\n")
    assert ("loopwatch.other", 2) in imports("loopwatch.pkg.lazy", lazy, set())
