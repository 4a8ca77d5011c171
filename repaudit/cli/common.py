"""What every command shares: the consoles, the error boundary, report formats and grid options.

Data goes to stdout, diagnostics to stderr; a user error is one ``error:`` line and exit 1.
"""

from __future__ import annotations

import io
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from repaudit.errors import RepauditError, UsageError
from repaudit.escape import rich_text

err = Console(stderr=True)
out = Console()


def fail(message: str, code: int = 1) -> None:
    """Print ``error: <message>`` (the message shown literally, never as markup) and exit ``code``."""
    err.print("[bold red]error:[/] " + rich_text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code=code)


@contextmanager
def user_errors(code: int = 1, io_code: int = 1, usage_code: int = 2):
    """Turn a RepauditError into one error line and exit ``code`` (a :class:`~repaudit.errors.UsageError`:
    ``usage_code``; an :class:`~repaudit.errors.UnsafeOutputError`: 64 in every command; an
    :class:`~repaudit.errors.OutputError` or OSError: ``io_code``); Ctrl-C into a resume hint and exit 130. ``gate``
    passes the sysexits codes 65, 74 and 64 (0–2 are its decisions)."""
    from repaudit.errors import EX_UNAVAILABLE, EX_USAGE, EndpointError, OutputError, UnsafeOutputError

    try:
        yield
    except EndpointError as exc:
        fail(str(exc), EX_UNAVAILABLE)
    except UnsafeOutputError as exc:  # every command's: a path that writing would replace (issue 63)
        fail(str(exc), EX_USAGE)
    except UsageError as exc:
        fail(str(exc), usage_code)
    except OutputError as exc:
        fail(str(exc), io_code)
    except RepauditError as exc:
        fail(str(exc), code)
    except OSError as exc:  # writing a report or plot: disk full, permissions changed meanwhile
        fail(f"'{exc.filename or ''}' cannot be written ({exc.strerror or type(exc).__name__})", io_code)
    except KeyboardInterrupt:
        err.print("interrupted: finished batches are cached; run the same command again to resume")
        raise typer.Exit(code=130) from None


def print_table(console: Console, title: str, head: list[str], rows: list[list[str]], right: set[str]) -> None:
    """A table of plain-text cells (each already escaped for rich), or — where it does not fit the console — one
    block per row: its first cell, then every other cell after its column's name, so that no number and no name is
    ever cut to '…' or folded mid-number (at 80 columns a task name read ``wino_…`` and a score ``42.…``)."""
    from rich.cells import cell_len
    from rich.table import Table

    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(head)]
    if sum(widths) + 3 * len(head) + 1 <= console.width:
        table = Table(title=title)
        for h in head:
            table.add_column(h, justify="right" if h in right else "left", no_wrap=True)
        for r in rows:
            table.add_row(*r)
        console.print(table)
        return
    console.print(title, style="italic", soft_wrap=True)
    for r in rows:
        console.print(r[0] + ": " + " · ".join(f"{h} {c}" for h, c in zip(head[1:], r[1:]) if c), soft_wrap=True)


@contextmanager
def grid_progress(label: str):
    """Progress over the configurations of a grid, moving inside a configuration, with the time left from the tokens
    still to compute and the tokens per second measured (:class:`repaudit.run.progress.WorkMeter`); yields
    ``tick(done=None, total=None)``."""
    from repaudit.run.progress import grid_meter, progress

    with grid_meter() as meter, progress(err, label, None, unit="configurations", transient=True,
                                         detail=meter.text) as bar:
        def tick(done: float | None = None, total: int | None = None) -> None:
            if done is None:
                bar.advance(1)
            else:
                bar.update(done, total)

        yield tick


class Format(str, Enum):
    """Report formats."""

    rich = "rich"
    markdown = "markdown"
    latex = "latex"
    json = "json"
    csv = "csv"
    html = "html"


FormatOption = Annotated[Format, typer.Option("--format", help="Report format: rich (terminal), markdown, latex, "
                                                               "json, csv (compare: the score table; attribute: "
                                                               "the Shapley values; variance --across: its rows) "
                                                               "or html (one self-contained "
                                                               "page; compare, gate, attribute: with a per-doc "
                                                               "browser).")]
OutputOption = Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the report here; the suffix picks "
                                                      "the format (.json, .md, .tex, .txt, .csv, .html) and must agree "
                                                      "with --format.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
DocTextOption = Annotated[bool, typer.Option("--doc-text/--no-doc-text", help="HTML: show each doc's prompts, "
                                                                              "choices and generations (default), "
                                                                              "or only ids, outcomes and numbers (a "
                                                                              "report to share without the "
                                                                              "benchmark's text).")]
ExecutorOption = Annotated[str, typer.Option("--executor", help="Where configurations run: local (this process) "
                                                                "or ray (one Ray task per configuration).")]
RayAddressOption = Annotated[Optional[str], typer.Option("--ray-address", help="With --executor ray: a running "
                                                         "cluster (e.g. ray://head:10001 or auto); default: "
                                                         "start a local one.")]
WorkersOption = Annotated[Optional[int], typer.Option("--workers", help="With --executor ray and no address: "
                                                      "CPUs of the local cluster (default: all).")]


def make_executor(name: str, ray_address: Optional[str], workers: Optional[int], endpoints: Optional[list] = None):
    """The grid executor named on the command line (over the replicas ``endpoints`` of a served deployment where
    several are given). Raises RepauditError for an unknown one."""
    from repaudit.audit.executor import make_executor as _make

    return _make(name, ray_address, workers, endpoints=endpoints)


NameAOption = Annotated[Optional[str], typer.Option("--name-a", help="Name run A in every report (default: its "
                                                                  "file name; where both files share a name, "
                                                                  "the model, revision or folder that differs).")]
NameBOption = Annotated[Optional[str], typer.Option("--name-b", help="Name run B likewise.")]
MkdirOption = Annotated[bool, typer.Option("--mkdir", help="Create the folders of -o (and --plot, --junit, "
                                                           "--docs-csv) that do not exist; without it a missing "
                                                           "folder is an error before any work.")]


def check_outputs(output: Optional[Path], plot: Optional[Path] = None, fmt: Optional[Format] = None,
                  as_json: bool = False, csv: bool = False, html: bool = False, mkdir: bool = False,
                  latex: bool = True) -> None:
    """The report file and the plot's PNG/PDF can be written, and the report's suffix names a format that
    agrees with ``--format``; checked before any work.

    Raises:
        RepauditError: a path that cannot be written (see :func:`repaudit.outputs.check_target`), an
            unknown suffix, a suffix and ``--format`` that disagree, or a format the command does not write
            (``csv``, ``html``, ``latex``: whether it writes them).
    """
    from repaudit.outputs import check_target

    report_format(fmt or Format.rich, output, as_json, csv, html, latex)
    if output is not None:
        check_target(output, "output", mkdir)
    if plot is not None:
        for suffix in (".png", ".pdf"):
            check_target(Path(plot).with_suffix(suffix), "plot", mkdir)


#: report file suffix -> the format written into it (.txt: the terminal view as plain text)
SUFFIXES = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".tex": "latex", ".latex": "latex",
            ".txt": "rich", ".text": "rich", ".log": "rich", ".csv": "csv", ".html": "html", ".htm": "html"}


def report_format(fmt: Format, output: Optional[Path], as_json: bool, csv: bool = False,
                  html: bool = False, latex: bool = True) -> Format:
    """The format to write: ``--json`` or ``--format``, else the suffix of ``-o`` (``.json``, ``.md``, ``.tex``,
    ``.txt``); a file without a suffix gets ``--format``. ``csv``, ``html``, ``latex``: whether the command writes
    that format (every command writes rich, markdown and json).

    Raises:
        RepauditError: a suffix repaudit cannot write (``.pdf``), one that names another format than
            ``--format``/``--json`` (``--format latex -o x.md``), or a format the command does not write (the
            refusal lists the ones it does).
    """
    written = ["rich", "markdown", *(["latex"] if latex else []), "json", *(["csv"] if csv else []),
               *(["html"] if html else [])]
    chosen = _chosen_format(fmt, output, as_json, written)
    if chosen.value not in written:
        where = {"csv": "CSV is written by compare (its score table), attribute (its Shapley values) and variance "
                        "--across (its rows)",
                 "html": "HTML is written by compare, gate, attribute, sweep and variance",
                 "latex": "this command writes no LaTeX"}[chosen.value]
        raise UsageError(f"{where}; this command's report is {', '.join(written[:-1])} or {written[-1]}")
    return chosen


def _chosen_format(fmt: Format, output: Optional[Path], as_json: bool, written: list[str]) -> Format:
    asked = Format.json if as_json else fmt
    if output is None or not output.suffix:
        return asked
    by_suffix = SUFFIXES.get(output.suffix.lower())
    if by_suffix is None:  # the suffixes listed are those of the formats this command writes, and only those
        raise UsageError(f"-o '{output}': cannot write a report as '{output.suffix}' (suffixes: "
                         f"{', '.join(s for s, f in SUFFIXES.items() if f in written)}; plots are written with "
                         "--plot)")
    if asked is not Format.rich and asked.value != by_suffix:
        raise UsageError(f"--format {asked.value} does not match -o '{output}' ('{output.suffix}' is "
                            f"{by_suffix}): change one of them")
    return Format(by_suffix)


def emit_report(fmt: Format, output: Optional[Path], rich_view, markdown, latex, json_text, csv=None,
                html=None) -> None:
    """Print or write a report in ``fmt``: ``rich_view(console)`` for the terminal (plain text into
    ``output``), or the zero-argument ``markdown``/``latex``/``json_text``/``csv``/``html`` renderers. A written
    report says so on stderr (``wrote x.md``), as ``run`` and ``export`` do."""
    if fmt is Format.rich and output is None:
        rich_view(out)
        return
    if fmt is Format.rich:
        console = Console(record=True, width=160, file=io.StringIO())
        rich_view(console)
        text = console.export_text()
    else:
        text = {Format.json: json_text, Format.markdown: markdown, Format.latex: latex, Format.csv: csv,
                Format.html: html}[fmt]()
    if output is None:
        typer.echo(text, nl=False)
        return
    write_report(output, text)


def write_report(path: Path, text: str | bytes, what: str = "output") -> None:
    """Write a report file through :func:`repaudit.outputs.write_file` (atomic, a failed write detected), then say
    ``wrote PATH`` on stderr — only once it is written.

    Raises:
        UsageError: ``path`` is not a regular file; OutputError: the write failed (nothing was written).
    """
    from repaudit.outputs import write_file

    write_file(path, text, what)
    err.print(rich_text(f"wrote {path}"), highlight=False, soft_wrap=True)


PrecisionOption = Annotated[Optional[float], typer.Option(
    "--precision", metavar="PTS", help="Stop when every (1 − alpha) interval is at most ±PTS points wide on each "
                                       "side: docs run in seeded random rounds shared by all configurations (repeated "
                                       "confidence intervals). Default: every doc.")]
PrecisionSeedOption = Annotated[int, typer.Option("--precision-seed", help="Seed of the doc order of --precision.")]
RoundDocsOption = Annotated[Optional[int], typer.Option("--round-docs", help="Docs per round of --precision "
                                                                             "(default: a tenth of them, ≥ 20).")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the configurations, the batches already in the "
                                                              "store, the tokens still to compute and a time "
                                                              "estimate, then exit.")]


def check_precision(precision: float | None, round_docs: int | None) -> None:
    """``--precision`` in (0, 100] points and ``--round-docs`` ≥ 1, before any work.

    Raises:
        RepauditError: either out of range.
    """
    import math

    if precision is not None and not (math.isfinite(precision) and 0 < precision <= 100):
        raise UsageError(f"--precision must be between 0 and 100 points (exclusive of 0), got {precision}")
    if round_docs is not None and not 1 <= round_docs <= 10**7:
        raise UsageError(f"--round-docs must be between 1 and 10000000, got {round_docs}")


def emit_dry_run(plan, fmt: Format, output: Optional[Path]) -> None:
    """Print or write a ``--dry-run`` plan (:class:`repaudit.audit.plan.DryRun`) in ``fmt``."""
    from rich.text import Text

    from repaudit.escape import one_line
    from repaudit.report.plan import dry_run_latex, dry_run_lines, dry_run_markdown, dry_run_summary

    def view(console: Console) -> None:
        for i, line in enumerate(dry_run_lines(plan, console.width)):
            console.print(Text(one_line(line), style="bold" if i == 0 else ""))
        console.print(rich_text(dry_run_summary(plan)))

    emit_report(fmt, output, view, lambda: dry_run_markdown(plan), lambda: dry_run_latex(plan),
                lambda: plan.model_dump_json(indent=1))


def base_config(base_run: Optional[Path], model: str, data_dir: Optional[Path], cache_dir: Optional[Path],
                served=None, **fields):
    """The base RunConfig of a grid command: replayed from ``--base`` (anything ``compare`` reads: a repaudit
    run file, an lm-eval results file or output directory; ``model`` other than ``default`` replaces its
    model), else built from the command's options ``fields``; ``served`` (the endpoint options of a served model)
    points it at its endpoint.

    Raises:
        RepauditError: the run cannot be read or replayed (the reason as the replay finds it).
    """
    from repaudit.run.runner import RunConfig

    if base_run is not None:
        from repaudit.audit.replay import load_replay_source

        src = load_replay_source(base_run, data_dir, None if model == "default" else model, cache_dir,
                                 need_docs=False)
        return (served.point([src], None if model == "default" else model)[0] if served is not None else src).config
    endpoints = served.settings() if served is not None else []
    return RunConfig(model=model, data_dir=data_dir, cache_dir=cache_dir, endpoint=endpoints[0] if endpoints else None,
                     **fields)


def task_map_of(pairs: list[str]) -> dict[str, str]:
    """``["b=a", …]`` → ``{"b": "a"}``. Raises UsageError on an item without ``=``."""
    from repaudit.errors import UsageError

    out = {}
    for item in pairs:
        b, sep, a = item.partition("=")
        if not sep or not a or not b:
            raise UsageError(f"--pair-tasks takes B_TASK=A_TASK, got '{item}'")
        out[b] = a
    return out
