"""The README and the documentation site say what the code does, on a fresh clone's files.

* every output and generated block is what ``docs/generate.py`` writes now (real outputs of commands, the command
  reference, the factor table, the run-file fields, the API's DataFrame columns);
* every ``bash`` and ``python`` block is marked ``<!-- runnable -->`` or ``<!-- not runnable: REASON -->``, and the
  runnable ones run, in document order, in a copy of the files git tracks;
* nothing in them, nor in any ``--help``, names a path a clone lacks (``../shared``);
* the site has the pages the documentation promises, and the API reference covers ``repaudit.api``.

``mkdocs build --strict`` itself runs in ``make test`` (broken links, missing pages, unresolved references).
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import COMMANDS, app

ROOT = Path(__file__).resolve().parents[1]


def _generate():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


gen = _generate()
PAGES = gen.pages()


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _blocks(page: Path) -> list[tuple[str, str, str | None, int]]:
    """``(lang, body, marker line or None, line number)`` of every fenced block of a page."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in gen._FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        out.append((m.group("lang"), m.group("body"), before if before.startswith("<!--") else None,
                    text[:m.start()].count("\n") + 1))
    return out


def test_generated_blocks_and_outputs_are_current():
    assert gen.drifted() == [], "run: python docs/generate.py --write"


def test_every_shell_and_python_block_is_marked():
    unmarked = []
    for page in PAGES:
        for lang, _body, marker, line in _blocks(page):
            if lang in gen.CODE_LANGS and (marker is None or not gen._MARK.match(marker)):
                unmarked.append(f"{_rel(page)}:{line}")
            if marker and marker.startswith("<!-- not runnable") and not re.search(r"not runnable: \S", marker):
                unmarked.append(f"{_rel(page)}:{line} (no reason)")
    assert not unmarked, f"mark each block <!-- runnable --> or <!-- not runnable: REASON -->: {unmarked}"


def _runnable(page: Path) -> list[tuple[str, str, int]]:
    return [(lang, body, line) for lang, body, marker, line in _blocks(page)
            if marker and marker.startswith("<!-- runnable")]


RUNNABLE = [p for p in PAGES if _runnable(p)]


def test_the_front_door_and_the_quick_start_have_runnable_blocks():
    assert ROOT / "README.md" in RUNNABLE
    assert ROOT / "docs" / "tutorials" / "quickstart.md" in RUNNABLE
    assert len(RUNNABLE) >= 10


@pytest.mark.parametrize("page", RUNNABLE, ids=_rel)
def test_runnable_blocks_run_on_a_fresh_clone(page):
    """Each runnable block of the page, in order, in one scratch copy of the tracked files: every command exits 0
    (a Python block runs without raising)."""
    with gen.scratch() as view:
        for lang, body, line in _runnable(page):
            if lang in ("python", "py"):
                gen.run_python(body, view)
                continue
            for cmd in gen.commands(body):
                res = gen.run_line(cmd, view)
                assert res.exit_code == 0, f"{_rel(page)}:{line}: '{cmd}' exited {res.exit_code}: {res.stderr[-1500:]}"


def _path_tokens(cmd: str) -> list[str]:
    return [t for t in shlex.split(cmd, comments=True)
            if re.match(r"(tests|examples|fingerprints|docs|bench)/", t)]


def test_runnable_blocks_read_only_what_a_clone_has():
    tracked = set(gen.tracked())
    dirs = {str(Path(f).parents[i]) for f in tracked for i in range(len(Path(f).parents) - 1)}
    missing = []
    for page in RUNNABLE:
        for lang, body, line in _runnable(page):
            tokens = ([t for t in re.findall(r'"([^"]+)"', body) if t.startswith(("tests/", "examples/"))]
                      if lang in ("python", "py") else [t for c in gen.commands(body) for t in _path_tokens(c)])
            for tok in tokens:
                matches = [f for f in tracked | dirs if Path(f).match(tok)] if "*" in tok else (
                    [tok.rstrip("/")] if tok.rstrip("/") in tracked | dirs else [])
                if not matches:
                    missing.append(f"{_rel(page)}:{line}: {tok}")
    assert not missing, f"paths a fresh clone does not have: {missing}"


def test_no_page_names_a_path_outside_a_clone():
    bad = [f"{_rel(p)}:{i}" for p in PAGES for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if "../shared" in line or "shared/data" in line or "shared/lmeval" in line]
    assert not bad, bad


def test_no_help_names_a_path_outside_a_clone():
    runner = CliRunner()
    names = list(COMMANDS)
    bad = []
    for args in [["--help"], *([n, "--help"] for n in names)]:
        out = runner.invoke(app, args, env={"COLUMNS": "200"}).output
        if "../shared" in out or "shared/data" in out:
            bad.append(" ".join(args))
        for tok in re.findall(r"\b(?:tests|examples|fingerprints)/[\w./*-]+", out):
            if not list(ROOT.glob(tok.rstrip("."))):
                bad.append(f"{' '.join(args)}: {tok}")
    assert not bad, bad


def test_the_site_has_its_pages():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    docs = ROOT / "docs"
    wanted = ["index.md", "tutorials/quickstart.md", "how-to/install.md", "how-to/extending.md",
              "reference/cli/index.md", "reference/factors.md", "reference/file-formats.md", "reference/run-file.md",
              "reference/api.md", "reference/measurements.md", "explanation/statistics.md",
              "explanation/security.md", "changelog.md", "eee.md", "series.md"]
    wanted += [f"reference/cli/{name}.md" for name in COMMANDS]
    for page in wanted:
        assert (docs / page).is_file(), page
        assert f": {page}\n" in nav, f"{page} is not in mkdocs.yml's nav"
    assert "font: false" in nav  # no web fonts: the site builds and renders offline
    assert (docs / "img" / "site_compare.png").read_bytes().startswith(b"\x89PNG")


def test_api_reference_covers_every_public_function():
    from repaudit import api

    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    missing = [name for name in api.__all__ if f"::: repaudit.api.{name}\n" not in page]
    assert not missing, missing


def test_run_file_reference_lists_every_field():
    """Every field of every record a run file holds, recursively, has its row (the generated page; the drift test
    keeps it current, this one that nothing is left out)."""
    from pydantic import BaseModel

    from repaudit.run.records import RunRecord

    page = (ROOT / "docs" / "reference" / "run-file.md").read_text(encoding="utf-8")
    seen, todo, missing = set(), [RunRecord], []
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            if f"| `{info.alias or name}` |" not in page:
                missing.append(f"{model.__name__}.{name}")
            todo += [m for m in gen._models_in(info.annotation) if issubclass(m, BaseModel)]
    assert len(seen) > 10 and not missing, missing
