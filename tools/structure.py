"""The layout's health, counted: ``python tools/structure.py [--cycles] [--long]``.

Prints modules directly in ``twin/``, import cycles among ``twin``'s modules counting imports
inside functions (a lazy import still makes an arrow), imports inside functions of project
modules (allowed only for heavy packages), and functions longer than 80 lines, for ``twin/``,
``tui/`` and ``calibrate/``. Reads source only; imports nothing of the project.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("twin", "tui", "calibrate")
LONG = 80


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _target(name: str, level: int, here: str, is_pkg: bool) -> str:
    if level == 0:
        return name
    base = here.split(".") if is_pkg else here.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, int, str]], dict[str, set[str]]]:
    """Module -> project modules it imports (anywhere in it); the imports made inside
    functions: (module, line, imported); and module -> what its top level imports (project
    modules and third-party top-level packages), for telling heavy modules apart."""
    graph: dict[str, set[str]] = defaultdict(set)
    top: dict[str, set[str]] = defaultdict(set)
    lazy = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(n) for f in funcs for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _target(node.module or "", node.level, mod, is_pkg)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for name in names:
                hit = _resolve(name, mods)
                if _type_only(node, tree):
                    continue  # `if TYPE_CHECKING:` imports make no arrow at run time
                if id(node) not in inside:
                    top[mod].add(hit or name.split(".")[0])
                if hit and hit != mod:
                    graph[mod].add(hit)
                    if id(node) in inside:
                        lazy.append((mod, node.lineno, hit))
    return graph, lazy, top


def _type_only(node: ast.AST, tree: ast.Module) -> bool:
    """Whether an import sits under ``if TYPE_CHECKING:`` (no arrow at run time)."""
    for block in tree.body:
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test):
            if any(n is node for n in ast.walk(block)):
                return True
    return False


def heavy_modules(top: dict[str, set[str]], mods: dict[str, Path]) -> set[str]:
    """Project modules whose top level imports a heavy package, directly or through another
    project module: importing them lazily keeps ``import twin`` fast, which is allowed."""
    heavy = {m for m, names in top.items() if names & set(HEAVY)}
    changed = True
    while changed:
        changed = False
        for m, names in top.items():
            if m not in heavy and names & heavy:
                heavy.add(m)
                changed = True
    return heavy


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    parts = name.split(".")
    while parts:
        if ".".join(parts) in mods:
            return ".".join(parts)
        parts.pop()
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a cycle's
    members; a package's ``__init__`` importing its own submodules is not counted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def edges(v):
        return [w for w in graph.get(v, ()) if not v or not w.startswith(v + ".")]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def long_functions(mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    out = []
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > LONG:
                    out.append((mod, node.name, n))
    return sorted(out, key=lambda t: -t[2])


HEAVY = ("numba", "simpy", "textual", "ray", "torch", "pyarrow", "pandas", "altair", "transformers",
         "huggingface_hub", "argcomplete")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", action="store_true", help="list each cycle's modules")
    ap.add_argument("--long", action="store_true", help="list the long functions")
    ap.add_argument("--lazy", action="store_true", help="list the project imports made inside functions")
    args = ap.parse_args()
    mods = modules()
    top = sorted(p.name for p in (ROOT / "twin").glob("*.py"))
    graph, lazy, top_level = imports(mods)
    heavy = heavy_modules(top_level, mods)
    light_lazy = [(m, line, hit) for m, line, hit in lazy if hit not in heavy]
    cyc = cycles(graph)
    longs = long_functions(mods)
    print(f"modules directly in twin/: {len(top)} ({', '.join(top)})")
    print(f"import cycles (lazy imports counted): {len(cyc)}")
    if args.cycles:
        for c in cyc:
            print("  " + " <-> ".join(c))
    print(f"project imports inside functions: {len(lazy)}, of which of light modules "
          f"(no heavy package behind them, so no reason to defer): {len(light_lazy)}")
    if args.lazy:
        for mod, line, hit in light_lazy:
            print(f"  {mod}:{line} -> {hit}")
    print(f"functions over {LONG} lines: {len(longs)}")
    if args.long:
        for mod, name, n in longs:
            print(f"  {mod}.{name}: {n}")


if __name__ == "__main__":
    main()
