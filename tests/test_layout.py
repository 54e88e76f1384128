"""The package layout: no import cycle inside ppo_control, and the core never depends on experiments/.

The graph is read from the source (``ast``), not from ``sys.modules``: every ``import`` and
``from ... import`` statement counts, at module level or inside a function, because a
function-level import only hides a cycle until the function runs. An import of ``a.b.c`` also
runs the ``__init__`` of every package on the way that the importer is not itself inside.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = "ppo_control"
EXPERIMENTS = PKG + ".experiments"
# The only core modules allowed to reach experiments/: the command line, and `python -m` through it.
IMPORTS_EXPERIMENTS = {PKG + ".cli"}
REACHES_EXPERIMENTS = {PKG + ".cli", PKG + ".__main__"}


def modules(root: Path, pkg: str) -> dict:
    """Dotted module name -> source file, for every .py file under ``root/pkg`` (a package is its __init__)."""
    out = {}
    for path in sorted((root / pkg).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _targets(base: str, names, importer: str, mods: dict) -> set:
    """Modules run by ``from base import names`` (or ``import base`` when names is empty), in the package."""
    found = {f"{base}.{n}" for n in names if f"{base}.{n}" in mods}
    if len(found) < len(names) or not names:
        found.add(base)  # a name defined in base, or base itself
    inside = {importer.rsplit(".", k)[0] for k in range(importer.count(".") + 1)}  # importer and its packages
    run = set()
    for t in found:
        parts = t.split(".")
        run |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}  # t and the packages on its way
    return {t for t in run if t in mods and t not in inside}


def import_graph(root: Path = ROOT, pkg: str = PKG) -> dict:
    """``{importer: {imported: [line, ...]}}`` over every module in the package, intra-package imports only."""
    mods = modules(root, pkg)
    graph = {}
    for name, path in mods.items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):  # ast.walk: function bodies too
            if isinstance(node, ast.Import):
                found = set()
                for alias in node.names:
                    found |= _targets(alias.name, [], name, mods)
            elif isinstance(node, ast.ImportFrom):
                base = own.rsplit(".", node.level - 1)[0] if node.level else ""
                base = ".".join(p for p in (base, node.module) if p)
                found = _targets(base, [a.name for a in node.names], name, mods)
            else:
                continue
            for t in found:
                edges.setdefault(t, []).append(node.lineno)
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def reaches(graph: dict, start: str, targets) -> bool:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        if v in targets:
            return True
        if v not in seen:
            seen.add(v)
            todo.extend(graph.get(v, ()))
    return False


def _describe(graph: dict, comp: list) -> str:
    return "\n".join(f"  {a} -> {b} (line {', '.join(map(str, graph[a][b]))})"
                     for a in comp for b in sorted(graph[a]) if b in comp)


def _is_experiment(name: str) -> bool:
    return name == EXPERIMENTS or name.startswith(EXPERIMENTS + ".")


def test_no_import_cycles_in_the_package():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (edges inside each):\n" + "\n".join(_describe(graph, c) for c in found)


def test_the_core_does_not_depend_on_experiments():
    graph = import_graph()
    core = [m for m in graph if not _is_experiment(m)]
    experiments = {m for m in graph if _is_experiment(m)}
    direct = {m for m in core if any(_is_experiment(t) for t in graph[m])} - IMPORTS_EXPERIMENTS
    assert not direct, f"core modules importing {EXPERIMENTS}: {sorted(direct)}"
    reach = {m for m in core if reaches(graph, m, experiments)} - REACHES_EXPERIMENTS
    assert not reach, f"core modules reaching {EXPERIMENTS} through other imports: {sorted(reach)}"


def test_the_graph_sees_function_level_and_package_imports():
    graph = import_graph()
    assert EXPERIMENTS + ".sweep" in graph[PKG + ".cli"]
    assert EXPERIMENTS + ".ray_backend" in graph[EXPERIMENTS + ".runner"]  # imported inside run_jobs


@pytest.mark.parametrize("where", ["module", "function"])
def test_a_planted_cycle_is_found(tmp_path, where):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .sub.b import g\n\ndef f():\n    return g()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    body = "from ..a import f" if where == "module" else "def g():\n    from .. import a\n    return a"
    (pkg / "sub" / "b.py").write_text(body + "\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b": [1], "pkg.sub": [1]}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]
    (pkg / "sub" / "b.py").write_text("import pkg.sub\n")  # its own package: already being imported
    assert cycles(import_graph(tmp_path, "pkg")) == []
