"""The folder tree reads as the data flow, and the layout section of docs/how-to/extending.md matches it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: stages in data-flow order; a module may import only from its own stage or an earlier one
STAGES = ["errors", "hashing", "tasks", "backends", "run", "importers", "audit", "report", "cli"]


def _modules() -> list[Path]:
    return sorted(p for p in (ROOT / "repaudit").rglob("*.py") if "__pycache__" not in p.parts)


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "repaudit" and len(parts) > 1 and parts[1] in STAGES else None


def test_imports_point_from_later_stages_to_earlier_ones():
    backwards = []
    for path in _modules():
        me = _stage("repaudit." + ".".join(path.relative_to(ROOT / "repaudit").with_suffix("").parts))
        if me is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            them = _stage(node.module) if isinstance(node, ast.ImportFrom) and node.module else None
            if them and STAGES.index(them) > STAGES.index(me):
                backwards.append(f"{path.relative_to(ROOT)} imports {node.module}")
    assert not backwards, backwards


def test_every_stage_folder_is_a_package():
    for stage in STAGES:
        folder = ROOT / "repaudit" / stage
        if folder.is_dir():
            assert (folder / "__init__.py").is_file(), folder


def test_layout_section_matches_the_tree():
    """The layout table of docs/how-to/extending.md has one row per folder (`` `tasks/` ``,
    `` `importers/lmeval/` ``, or `` `repaudit/` `` for the top level) naming every module in it, and nothing that
    is not there."""
    page = (ROOT / "docs" / "how-to" / "extending.md").read_text()
    section = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed: set[str] = set()
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        m = re.fullmatch(r"`([a-z_]+(?:/[a-z_]+)*)/`", cells[0]) if row.startswith("|") else None
        if not m:
            continue
        folder = "" if m.group(1) == "repaudit" else m.group(1) + "/"
        listed |= {folder + name for name in re.findall(r"`([a-z_0-9]+\.py)`", " ".join(cells[1:]))}
    tree = {str(p.relative_to(ROOT / "repaudit")) for p in _modules() if p.name not in ("__init__.py", "__main__.py")}
    assert listed == tree, {"not in the tree": sorted(listed - tree), "not in the layout table": sorted(tree - listed)}


def test_modules_stay_small():
    big = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > 450}
    assert not big, f"modules over 450 lines: {big}"


def _runtime_imports(tree: ast.AST) -> list:
    """Import nodes a module executes, at module level or inside functions (``if TYPE_CHECKING:`` blocks are left
    out: they never run)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skip]


def test_no_import_circle_even_through_function_level_imports():
    """Every import a module can execute — at the top or inside a function — points away from the module: the
    graph of repaudit's modules has no cycle (Tarjan's strongly connected components, each of size 1)."""
    mods = {}
    for p in _modules():
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in _runtime_imports(ast.parse(p.read_text())):
            names = ([f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                      for a in node.names] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            edges[m] |= {t for t in names if t in mods and t != m}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan 1972, recursive (the module graph is shallow)
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_no_command_function_takes_more_than_8_parameters():
    """Option groups (cli/groups.py) keep every command's signature short; typer still sees each option."""
    wide, seen = [], 0
    for p in sorted((ROOT / "repaudit" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_command"):
                seen += 1
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                if n > 8:
                    wide.append(f"{p.name}:{node.name} ({n} parameters)")
    assert seen >= 8 and not wide, wide
