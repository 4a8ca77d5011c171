"""``repaudit variance``: how much a benchmark's score moves with the few-shot draw, their order and the
prompt format, and the smallest difference a comparison on it can detect."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from repaudit.cli.common import (
    DryRunOption,
    ExecutorOption,
    Format,
    FormatOption,
    JsonOption,
    MkdirOption,
    OutputOption,
    RayAddressOption,
    WorkersOption,
    base_config,
    check_outputs,
    emit_dry_run,
    emit_report,
    err,
    grid_progress,
    make_executor,
    report_format,
    user_errors,
)
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.cli.series import AcrossOption, FilesArgument, LastOption, StepFromOption
from repaudit.errors import RepauditError
from repaudit.escape import rich_text


def _variance_rich(r, console: Console) -> None:
    from repaudit.report.variance import HEAD, noise_rows, spread_rows, variance_summary

    table = Table(title=rich_text(f"variance · {r.task} · {r.model}"))
    for col in HEAD:
        table.add_column(col, justify="left" if col in ("format", "metric") else "right")
    for row in noise_rows(r):
        table.add_row(*(rich_text(c) for c in row))
    console.print(table)
    if r.format_spread:
        spread = Table(title="score per prompt format (seed means)")
        for col in ("metric", *r.formats, "spread"):
            spread.add_column(rich_text(col), justify="left" if col == "metric" else "right")
        for row in spread_rows(r):
            spread.add_row(*(rich_text(c) for c in row))
        console.print(spread)
    console.print(rich_text(variance_summary(r)), soft_wrap=True)


TaskOption = Annotated[Optional[str], typer.Option(help="Task (default arc_easy). With --across: only rows of "
                                                      "these tasks (comma-separated, * wildcards).")]
NBootOption = Annotated[int, typer.Option(help="Bootstrap replicates of the intervals over docs (with --across: per "
                                               "run that has per-doc values).")]
PlotOption = Annotated[Optional[Path], typer.Option(help="Draw every run's score per seed and format to PATH.png and "
                                                         "PATH.pdf (with --across: score over training step).")]
PlotMetricOption = Annotated[Optional[str], typer.Option(help="Metric of --plot and of the HTML plot (default: the "
                                                              "first); with --across, TASK:METRIC panels, "
                                                              "comma-separated (default: the six most monotone).")]


@with_factor_options()
def variance_command(
    files: FilesArgument = None,
    across: AcrossOption = None,
    last: LastOption = 5,
    step_from: StepFromOption = None,
    task: TaskOption = None,
    num_fewshot: Annotated[int, typer.Option(help="n-shot (> 0: the few-shot draw is what varies).")] = 3,
    fewshot_seeds: Annotated[int, typer.Option(help="Few-shot seeds per format (from --fewshot-seed on).")] = 5,
    fewshot_seed: Annotated[int, typer.Option(help="First few-shot seed.")] = 1234,
    order_seeds: Annotated[Optional[int], typer.Option(
        help="Other orders of the first seed's examples (default: --fewshot-seeds − 1).")] = None,
    formats: Annotated[str, typer.Option(help="Comma-separated prompt formats: lmeval, lettered, cloze.")
                       ] = "cloze,lettered",
    base_run: Annotated[Optional[Path], typer.Option("--base", help="Take the base configuration from this run: "
                                                                    "anything compare reads (a repaudit run, an "
                                                                    "lm-eval results file or output directory); "
                                                                    "the base options are then ignored.")] = None,
    model: Annotated[str, typer.Option(help="'default', a local directory or a hub id.")] = "default",
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data laid out as shared/data.")] = None,
    doc_ids: Annotated[Optional[str], typer.Option(help="Only these doc ids, e.g. '0,7,42'.")] = None,
    n_boot: NBootOption = 2000,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    fmt: FormatOption = Format.rich,
    output: OutputOption = None,
    mkdir: MkdirOption = False,
    plot: PlotOption = None,
    plot_metric: PlotMetricOption = None,
    dry_run: DryRunOption = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    as_json: JsonOption = False,
    **factors: Any,
) -> None:
    """Measure a benchmark's noise: bootstrap intervals over docs, spread over few-shot seeds and orders and
    over prompt formats, continuous counterparts with their signal-to-noise, and the minimum detectable
    effect at 80 % power with the docs or seeds one point would need.

    Example: repaudit variance --task arc_easy --num-fewshot 3 --fewshot-seeds 5 --data-dir ../shared/data

    Example: repaudit variance --task mmlu --limit 300 --plot variance.png -o variance.md

    With run files and --across, nothing runs: the files are measured as a series of checkpoints (Kendall tau-b
    over training step), training seeds (mean, sd, t interval) or models (signal-to-noise).

    Example: repaudit variance tests/fixtures/pythia/160m/*.json --across checkpoint --task piqa,sciq --plot traj.png
    """
    from repaudit.audit.variance import variance, variance_grid
    if files or across is not None:
        from repaudit.cli.series import series_mode

        with user_errors():
            series_mode(files or [], across, task, last, step_from, n_boot, fmt, output, plot, plot_metric, as_json,
                        mkdir)
        return
    task = task or "arc_easy"
    with user_errors():
        check_outputs(output, plot, fmt, as_json, html=not dry_run, mkdir=mkdir)
        fmts = [f.strip() for f in formats.split(",") if f.strip()]
        from repaudit.tasks.fewshot import parse_fewshot_ids

        base = base_config(base_run, model, data_dir, cache_dir, task=task,
                           doc_ids=parse_fewshot_ids(doc_ids, "--doc-ids") if doc_ids else None,
                           num_fewshot=num_fewshot, fewshot_seed=fewshot_seed, **factor_settings(factors))
        if dry_run:
            from repaudit.audit.plan import plan_grid

            order = fewshot_seeds - 1 if order_seeds is None else order_seeds
            plan = plan_grid(f"variance --fewshot-seeds {fewshot_seeds} --formats {formats}",
                             variance_grid(base, fmts, fewshot_seeds, order))
            emit_dry_run(plan, report_format(fmt, output, as_json), output)
            return
        ex = make_executor(executor, ray_address, workers)
        with grid_progress("variance") as tick:
            result = variance(base, ex, fmts, fewshot_seeds, order_seeds, n_boot=n_boot, progress=tick)
        _emit(result, fmt, output, as_json, plot, plot_metric)


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
