"""``repaudit appendix``: a paper appendix from the run files — the evaluation setup, the scores with their
intervals, what the error bars are, and the comparison, attribution, noise and sweep tables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional

import typer

from repaudit.cli.common import user_errors
from repaudit.cli.groups import StatOptions, grouped
from repaudit.importers.detect import run_files


@dataclass
class ReportFiles:
    """Reports written with ``--json`` by other commands, shown as tables of the appendix."""

    attribution: Annotated[Optional[list[Path]], typer.Option(
        help="An attribution report (repaudit attribute --json); repeatable.")] = None
    variance: Annotated[Optional[list[Path]], typer.Option(
        help="A noise report (repaudit variance --json, with or without --across); repeatable.")] = None
    sweep: Annotated[Optional[list[Path]], typer.Option(help="A sweep report (repaudit sweep --json); repeatable.")
                     ] = None


@grouped
def appendix_command(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", show_default=False, help=(
        f"Run files: anything compare reads ({run_files()})."))],
    reports: ReportFiles,
    intervals: StatOptions,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", show_default=False, help=(
        "Write the appendix here: .tex (LaTeX: booktabs, longtable, array, siunitx) or .md (Markdown, the same "
        "content); without it, the Markdown goes to stdout."))] = None,
    names: Annotated[Optional[str], typer.Option(help="Comma-separated names of the runs, in order (default: "
                                                      "their file names).")] = None,
    compare: Annotated[Optional[list[str]], typer.Option(metavar="A,B", help=(
        "Also compare two runs (names or 1-based positions), as repaudit compare; repeatable."))] = None,
    title: Annotated[str, typer.Option(help="The section's title.")] = "Evaluation details",
    document: Annotated[bool, typer.Option("--document", help="LaTeX: a whole article (preamble and "
                                                              "\\begin{document}) instead of a section to \\input.")
                        ] = False,
) -> None:
    """Write a paper appendix from the run files: an evaluation-setup table (one column per run; what a file does
    not record marked so), every score with its interval, a paragraph on what the error bars are (NeurIPS Q7, ACL),
    and the comparison, attribution, noise and sweep tables.

    Example: repaudit appendix tests/fixtures/lighteval/arc_easy_0shot tests/fixtures/lighteval/arc_easy_3shot
    --compare 1,2 -o appendix.md

    Example: repaudit appendix a.json b.json --names "cloze 0-shot,lettered 5-shot" --compare 1,2 --attribution
    att.json --document -o appendix.tex
    """
    from repaudit.audit.appendix import Requested, build_appendix
    from repaudit.cli.common import write_report
    from repaudit.errors import UsageError
    from repaudit.outputs import check_target
    from repaudit.report.appendix import render_latex, render_markdown

    with user_errors():
        suffix = ".md" if output is None else output.suffix.lower()
        if suffix not in (".tex", ".md"):
            raise UsageError(f"-o '{output}': the appendix is written as .tex (LaTeX) or .md (Markdown)")
        stat = intervals.settings()
        if output is not None:
            check_target(output, "output")
        split = [[x.strip() for x in p.split(",")] for p in compare or []]
        if any(len(p) != 2 or not all(p) for p in split):
            raise UsageError("--compare takes two runs as A,B (names or positions, e.g. 1,2)")
        pairs = [(p[0], p[1]) for p in split]
        req = Requested(paths=list(runs), names=[n.strip() for n in names.split(",")] if names else None,
                        pairs=pairs, attributions=reports.attribution or [], variances=reports.variance or [],
                        sweeps=reports.sweep or [], stat=stat)
        appendix = build_appendix(req)
        text = render_latex(appendix, title, document) if suffix == ".tex" else render_markdown(appendix, title)
        if output is None:
            typer.echo(text, nl=False)
        else:
            write_report(output, text)
