"""The module graph of exam/ and graders/ has no cycles, and graders/ never imports exam/.

Every import counts, also those inside functions: a cycle through a late import still means two
modules that cannot be read, tested or moved one without the other.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from pathlib import Path

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
    graph = import_graph()
    assert len(graph) > 40, "the graph missed the packages"
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " → ".join(cycle)


def test_graders_import_nothing_from_exam():
    graph = import_graph()
    leaks = sorted(f"{m} → {t}" for m, ts in graph.items() if m.startswith("graders")
                   for t in ts if t.startswith("exam"))
    assert not leaks, "graders/ must stay pure: " + ", ".join(leaks)
