"""``repaudit variance``: how much a benchmark's score moves with the few-shot draw, their order and the
prompt format, and the smallest difference a comparison on it can detect."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from repaudit.cli.common import (
    Format,
    emit_dry_run,
    emit_report,
    err,
    grid_progress,
    print_table,
    report_format,
    user_errors,
)
from repaudit.cli.groups import BaseOptions, GridOptions, ReportOptions, StatOptions, grouped
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.cli.series import AcrossOption, FilesArgument, LastOption, StepFromOption
from repaudit.errors import RepauditError
from repaudit.escape import rich_text


def _variance_rich(r, console: Console) -> None:
    from repaudit.report.variance import (
        SPLIT_CAPTION,
        SPLIT_HEAD,
        head,
        noise_rows,
        split_rows,
        spread_rows,
        variance_summary,
    )

    def cells(rows) -> list[list[str]]:
        return [[rich_text(c) for c in row] for row in rows]

    # each table fits the console or is printed one block per row: never a number cut to '…' (print_table)
    cols = list(head(r))
    print_table(console, rich_text(f"variance · {r.task} · {r.model}"), cols, cells(noise_rows(r)),
                {c for c in cols if c not in ("format", "metric")})
    if r.format_spread:
        cols = [rich_text(c) for c in ("metric", *r.formats, "spread")]
        print_table(console, "score per prompt format (seed means)", cols, cells(spread_rows(r)), set(cols[1:]))
    if split_rows(r):
        print_table(console, "prediction vs data noise of the seed runs", list(SPLIT_HEAD), cells(split_rows(r)),
                    {c for c in SPLIT_HEAD if c not in ("format", "metric")})
        console.print(rich_text(SPLIT_CAPTION), soft_wrap=True)
    console.print(rich_text(variance_summary(r)), soft_wrap=True)


TaskOption = Annotated[Optional[str], typer.Option(help="Task (default arc_easy). With --across: only rows of "
                                                      "these tasks (comma-separated, * wildcards).")]
PlotOption = Annotated[Optional[Path], typer.Option(help="Draw every run's score per seed and format to PATH.png and "
                                                         "PATH.pdf (with --across: score over training step).")]
PlotMetricOption = Annotated[Optional[str], typer.Option(help="Metric of --plot and of the HTML plot (default: the "
                                                              "first); with --across, TASK:METRIC panels, "
                                                              "comma-separated (default: the six most monotone).")]


@dataclass
class SeriesOptions:
    """``--across``: measure run files as a series instead of running a grid."""

    across: AcrossOption = None
    last: LastOption = 5
    step_from: StepFromOption = None


@dataclass
class NoiseOptions:
    """What varies in the grid (few-shot draws, their order, prompt formats) and on which docs."""

    num_fewshot: Annotated[int, typer.Option(help="n-shot (> 0: the few-shot draw is what varies).")] = 3
    fewshot_seeds: Annotated[int, typer.Option(help="Few-shot seeds per format (from --fewshot-seed on).")] = 5
    fewshot_seed: Annotated[int, typer.Option(help="First few-shot seed.")] = 1234
    order_seeds: Annotated[Optional[int], typer.Option(
        help="Other orders of the first seed's examples (default: --fewshot-seeds − 1).")] = None
    formats: Annotated[str, typer.Option(help="Comma-separated prompt formats: lmeval, lettered, cloze.")
                       ] = "cloze,lettered"
    doc_ids: Annotated[Optional[str], typer.Option(help="Only these doc ids, e.g. '0,7,42'.")] = None
    stats: StatOptions = field(default_factory=StatOptions)


@dataclass
class VarianceBaseOptions(BaseOptions):
    """The base configuration (as for sweep); ``--task`` also filters the rows of ``--across``."""

    task: TaskOption = None


@dataclass
class PlotOptions:
    """The figure of the report."""

    plot: PlotOption = None
    plot_metric: PlotMetricOption = None


@with_factor_options()
@grouped
def variance_command(series: SeriesOptions, noise: NoiseOptions, base: VarianceBaseOptions, figure: PlotOptions,
                     report: ReportOptions, grid: GridOptions, files: FilesArgument = None, **factors: Any) -> None:
    """Measure a benchmark's noise: bootstrap intervals over docs, spread over few-shot seeds and orders and
    over prompt formats, continuous counterparts with their signal-to-noise, and the minimum detectable
    effect at 80 % power with the docs or seeds one point would need.

    Example: repaudit variance --task arc_easy --num-fewshot 3 --fewshot-seeds 5

    Example: repaudit variance --task mmlu --limit 300 --plot variance.png -o variance.md

    With run files and --across, nothing runs: the files are measured as a series of checkpoints (Kendall tau-b
    over training step), training seeds (mean, sd, t interval) or models (signal-to-noise).

    Example: repaudit variance tests/fixtures/pythia/160m/*.json --across checkpoint --task piqa,sciq --plot traj.png
    """
    from repaudit.audit.variance import variance, variance_grid

    r, n = report, noise
    if files or series.across is not None:
        from repaudit.cli.series import series_mode

        with user_errors():
            stat = n.stats.settings("series")  # variance's options, a series' record (its rows' p unadjusted)
            series_mode(files or [], series.across, base.task, series.last, series.step_from, stat, r.fmt,
                        r.output, figure.plot, figure.plot_metric, r.as_json, r.mkdir)
        return
    base.task = base.task or "arc_easy"
    with user_errors():
        stat = n.stats.settings()
        r.check(figure.plot, html=not grid.dry_run)
        fmts = [f.strip() for f in n.formats.split(",") if f.strip()]
        from repaudit.tasks.fewshot import parse_fewshot_ids

        cfg = base.config(doc_ids=parse_fewshot_ids(n.doc_ids, "--doc-ids") if n.doc_ids else None,
                          num_fewshot=n.num_fewshot, fewshot_seed=n.fewshot_seed, **factor_settings(factors))
        if grid.dry_run:
            from repaudit.audit.plan import plan_grid

            order = n.fewshot_seeds - 1 if n.order_seeds is None else n.order_seeds
            plan = plan_grid(f"variance --fewshot-seeds {n.fewshot_seeds} --formats {n.formats}",
                             variance_grid(cfg, fmts, n.fewshot_seeds, order))
            emit_dry_run(plan, r.format(), r.output)
            return
        with grid_progress("variance") as tick:
            result = variance(cfg, grid.open_executor(base), fmts, n.fewshot_seeds, n.order_seeds, stat=stat,
                              progress=tick)
        _emit(result, r.fmt, r.output, r.as_json, figure.plot, figure.plot_metric)


def _emit(result, fmt: Format, output: Optional[Path], as_json: bool, plot: Optional[Path],
          plot_metric: Optional[str]) -> None:
    """Plot and render a variance report (``--plot``, ``--format``, ``-o``).

    Raises:
        RepauditError: ``--plot-metric`` names a metric the grid did not measure.
    """
    from repaudit.report.html import render_variance_html
    from repaudit.report.variance import variance_latex, variance_markdown

    if plot_metric is not None and plot_metric not in result.runs[0].scores:
        raise RepauditError(f"--plot-metric '{plot_metric}' is not measured: choose one of "
                            f"{', '.join(result.runs[0].scores)}")
    if plot is not None:
        from repaudit.report.plots import variance_plot

        err.print(rich_text("wrote " + ", ".join(str(p) for p in variance_plot(result, plot, plot_metric))))
    emit_report(report_format(fmt, output, as_json, html=True), output, lambda c: _variance_rich(result, c),
                lambda: variance_markdown(result), lambda: variance_latex(result),
                lambda: result.model_dump_json(indent=1), html=lambda: render_variance_html(result, plot_metric))
