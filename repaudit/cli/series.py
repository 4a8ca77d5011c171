"""``repaudit variance FILE… --across checkpoint|seed|model``: what a benchmark does across a series of existing
runs (the other half of ``variance``, which measures evaluation-side noise by running a model)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from repaudit.audit.labels import given_twice
from repaudit.cli.common import Format, check_outputs, emit_report, err, print_table, report_format
from repaudit.errors import RepauditError, UsageError
from repaudit.escape import rich_text
from repaudit.importers.detect import run_files


class Across(str, Enum):
    """What varies between the runs of a series."""

    checkpoint = "checkpoint"
    seed = "seed"
    model = "model"


FilesArgument = Annotated[Optional[list[Path]], typer.Argument(
    metavar="FILE", show_default=False, readable=False,
    help=f"With --across: run files of a series (anything compare reads: {run_files()}). Nothing is run.")]
AcrossOption = Annotated[Optional[Across], typer.Option(
    help="Measure FILE… as a series: checkpoint (Kendall tau-b of score over training step, range, noise of the "
         "last checkpoints), seed (mean, sd, t (1 − alpha) interval over training seeds) or model (signal-to-noise "
         "across models).")]
LastOption = Annotated[int, typer.Option(help="With --across: checkpoints in the noise window (their standard "
                                              "deviation).")]
StepFromOption = Annotated[Optional[str], typer.Option(
    help="With --across: a regular expression with one group that reads the training step from a file name "
         "(else its folders' names, nearest first), where the file records no step (e.g. 'step(\\d+)').")]


def _keys(plot_metric: Optional[str]) -> list[tuple[str, str]] | None:
    """``--plot-metric TASK:METRIC,…`` as (task, metric) pairs.

    Raises:
        RepauditError: an entry without a ``:``.
    """
    if not plot_metric:
        return None
    out = []
    for item in (x.strip() for x in plot_metric.split(",") if x.strip()):
        task, sep, metric = item.rpartition(":")
        if not sep or not task or not metric:
            raise UsageError(f"--plot-metric '{item}': with --across, name panels as TASK:METRIC "
                                "(e.g. piqa:acc,lambada_openai:ppl)")
        out.append((task, metric))
    return out


def _rich(r, console: Console) -> None:
    from repaudit.report.series import confounder_lines, head, headline, is_numeric, other_lines, rows, summary

    console.print(rich_text(headline(r)), soft_wrap=True)
    cols = [rich_text(c) for c in head(r)]
    print_table(console, rich_text(f"variance · series across {r.across}s"), cols,
                [[rich_text(c) for c in row] for row in rows(r)],
                {rich_text(c) for c in head(r) if is_numeric(c)})
    console.print(rich_text(summary(r)), soft_wrap=True)
    for title, items in [("Confounders: settings that differ between runs", confounder_lines(r)), *other_lines(r)]:
        if items:
            console.print(rich_text(title + ":"), style="bold")
            for line in items:
                console.print(rich_text("  - " + line), soft_wrap=True)


def series_mode(files: list[Path], across: Optional[Across], tasks: Optional[str], last: int,
                step_from: Optional[str], stat, fmt: Format, output: Optional[Path], plot: Optional[Path],
                plot_metric: Optional[str], as_json: bool, mkdir: bool = False) -> None:
    """Read ``files``, measure the series (``stat``: its :class:`~repaudit.audit.stat_settings.StatSettings`), plot
    and render (the CLI's part of ``variance FILE… --across``).

    Raises:
        RepauditError: files without ``--across``, a plot of a seed series or of panels the report has no row for,
            and everything :func:`repaudit.audit.series.series` raises.
    """
    from repaudit.audit.series import series
    from repaudit.importers.detect import load_run
    from repaudit.report.frames import series_frame, to_csv
    from repaudit.report.html import render_series_html
    from repaudit.report.series import latex, markdown

    if across is None:
        raise UsageError(f"{len(files)} run file(s) given without --across: say what varies between them "
                            "(--across checkpoint, seed or model); without files, variance runs the model")
    if len(files) < 2:  # before any file is read: a count of arguments is usage
        raise UsageError(f"--across {across.value} needs two or more run files, got {len(files)}"
                         + (f" ('{files[0]}')" if files else ""))
    twice = given_twice(files)
    if twice is not None:  # one run counted twice would be two checkpoints, seeds or models
        raise UsageError(f"files {twice[0] + 1} and {twice[1] + 1} are the same ('{files[twice[1]]}'): give each run "
                         "once")
    check_outputs(output, plot, fmt, as_json, csv=True, html=True, mkdir=mkdir)
    if plot is not None and across is Across.seed:
        raise UsageError("--plot draws score over training step: it needs --across checkpoint or model")
    runs = [load_run(f) for f in files]
    patterns = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    report = series(runs, across.value, last=last, step_from=step_from, tasks=patterns, stat=stat)
    keys = _panels(report, _keys(plot_metric))
    if plot is not None and not report.checkpoint and all(s.step is None for s in report.runs):
        raise RepauditError("--plot draws score over training step, and no run records one (--step-from reads it "
                            "from file names)")
    if plot is not None:
        from repaudit.report.plots import trajectory_plot

        err.print(rich_text("wrote " + ", ".join(str(p) for p in trajectory_plot(report, plot, keys))))
    emit_report(report_format(fmt, output, as_json, csv=True, html=True), output, lambda c: _rich(report, c),
                lambda: markdown(report), lambda: latex(report), lambda: report.model_dump_json(indent=1),
                csv=lambda: to_csv(series_frame(report)), html=lambda: render_series_html(report, keys))


def _panels(report, wanted: list[tuple[str, str]] | None) -> list[tuple[str, str]]:
    """The trajectory's panels: ``--plot-metric`` (each must be a row of the report), else the top of the ranking;
    none for a seed series."""
    from repaudit.report.plots import trajectory_keys

    if report.across == "seed":
        return []
    have = {(x.task, x.metric) for x in [*report.checkpoint, *report.model]}
    missing = [f"{t}:{m}" for t, m in wanted or [] if (t, m) not in have]
    if missing:
        raise RepauditError(f"--plot-metric {', '.join(missing)}: no such row in this series (rows are task × metric "
                            "pairs every run reports, e.g. " + ", ".join(f"{t}:{m}" for t, m in sorted(have)[:3]) + ")")
    return trajectory_keys(report, wanted)
