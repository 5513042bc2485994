"""The module graph of exam/ and graders/ has no cycles, nor has the graph of their packages;
graders/ never imports exam/; the top level of exam/ holds only leaves.

Every import counts, also those inside functions and under TYPE_CHECKING: a cycle through a late
import still means two modules that cannot be read, tested or moved one without the other. A
package cycle (pipeline → reports → pipeline through two different modules) is invisible to the
module graph and as bad: neither package can be understood, or layered, without the other.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("exam", "graders")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache  # the code does not change during a session: parsed once, not once a test
def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """module → the modules of ``packages`` it imports (anywhere in its body)."""
    files = {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                # `from pkg import sub` imports the submodule pkg.sub when there is one
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                               for a in node.names)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


@functools.cache
def the_graph() -> dict[str, set[str]]:
    """This repository's module graph, read once for all the tests below."""
    return import_graph()


def package_graphs(graph: Mapping[str, set[str]], packages: set[str]
                   ) -> dict[str, dict[str, set[str]]]:
    """Each package → the graph of its direct members (a subpackage stands as one node, with
    everything inside it), from the module graph. ``""`` is the graph of the root packages."""
    graphs: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))

    def member(package: str, module: str) -> str | None:
        if package and not module.startswith(package + "."):
            return None
        rest = module[len(package) + 1:] if package else module
        return f"{package}.{rest.split('.')[0]}" if package else rest.split(".")[0]

    for package in ["", *sorted(packages)]:
        nodes = graphs[package]
        for source, targets in graph.items():
            a = member(package, source)
            if a is None:
                continue
            nodes[a]  # noqa: B018 — every member is a node, an import or not
            for target in targets:
                b = member(package, target)
                if b is not None and b != a:
                    nodes[a].add(b)
    return graphs


def packages_of(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    return {module_name(p, root) for pkg in packages for p in (root / pkg).rglob("__init__.py")}


def find_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One cycle as [a, b, ..., a], or [] when the graph is acyclic (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def test_find_cycle_finds_a_cycle_and_passes_a_tree():
    cyclic = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(cyclic) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_import_graph_sees_imports_inside_functions(tmp_path):
    pkg = tmp_path / "exam"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from exam.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def late():\n    from . import c\n")
    (pkg / "sub" / "c.py").write_text("def later():\n    import exam.a\n")
    graph = import_graph(tmp_path, ("exam",))
    assert graph["exam.a"] == {"exam.sub.b"}
    assert graph["exam.sub.b"] == {"exam.sub.c"}
    assert find_cycle(graph) == ["exam.a", "exam.sub.b", "exam.sub.c", "exam.a"]


def test_the_module_graph_has_no_cycles():
    graph = the_graph()
    assert len(graph) > 40, "the graph missed the packages"
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " → ".join(cycle)


def test_graders_import_nothing_from_exam():
    graph = the_graph()
    leaks = sorted(f"{m} → {t}" for m, ts in graph.items() if m.startswith("graders")
                   for t in ts if t.startswith("exam"))
    assert not leaks, "graders/ must stay pure: " + ", ".join(leaks)


def test_package_graphs_collapse_subpackages(tmp_path):
    pkg = tmp_path / "exam"
    for sub in ("low", "high", "high/inner"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "leaf.py").write_text("")
    (pkg / "low" / "a.py").write_text("from exam import leaf\n")
    (pkg / "high" / "b.py").write_text("from exam.low import a\n")
    (pkg / "high" / "inner" / "c.py").write_text("from exam.high import b\n")
    graphs = package_graphs(import_graph(tmp_path, ("exam",)), packages_of(tmp_path, ("exam",)))
    assert graphs["exam"]["exam.high"] == {"exam.low"}
    assert graphs["exam"]["exam.low"] == {"exam.leaf"}
    assert graphs["exam.high"]["exam.high.inner"] == {"exam.high.b"}
    assert all(not find_cycle(g) for g in graphs.values())


def test_a_package_cycle_through_different_modules_is_found(tmp_path):
    """pipeline.runner → reports.regrade and reports.rubric → pipeline.reading: no module cycle,
    a package cycle."""
    pkg = tmp_path / "exam"
    for sub in ("pipeline", "reports"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "pipeline" / "runner.py").write_text("from exam.reports.regrade import key\n")
    (pkg / "pipeline" / "reading.py").write_text("")
    (pkg / "reports" / "regrade.py").write_text("key = 1\n")
    (pkg / "reports" / "rubric.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from exam.pipeline import reading\n")
    graph = import_graph(tmp_path, ("exam",))
    assert not find_cycle(graph)
    graphs = package_graphs(graph, packages_of(tmp_path, ("exam",)))
    assert find_cycle(graphs["exam"]) == ["exam.pipeline", "exam.reports", "exam.pipeline"]


@pytest.mark.parametrize("package", sorted(packages_of() | {""}), ids=lambda p: p or "(root)")
def test_no_package_cycles(package):
    graphs = package_graphs(the_graph(), packages_of())
    cycle = find_cycle(graphs[package])
    assert not cycle, f"package cycle inside {package or 'the root'}: " + " → ".join(cycle)


# the entry point of `python -m exam` must stand at the top, and it imports the CLI
ENTRY_POINTS = {"exam.__main__"}


def test_the_top_level_of_exam_holds_only_leaves():
    """A module directly in exam/ imports only other such modules, graders/, or nothing of
    ours: orchestration lives in a package whose place in the layers says what it may use."""
    graph = the_graph()
    top = {m for m in graph if m.count(".") == 1 and not (ROOT / m.replace(".", "/")).is_dir()}
    allowed = top | {m for m in graph if m == "graders" or m.startswith("graders.")}
    climbs = sorted(f"{m} → {t}" for m in top - ENTRY_POINTS for t in graph[m] if t not in allowed)
    assert not climbs, "a top-level module of exam/ that is not a leaf: " + ", ".join(climbs)
