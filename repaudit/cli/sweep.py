"""``repaudit sweep``: vary one factor, hold the rest, and measure its effect against the noise floor."""

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
    PrecisionOption,
    PrecisionSeedOption,
    RayAddressOption,
    RoundDocsOption,
    WorkersOption,
    base_config,
    check_outputs,
    check_precision,
    emit_dry_run,
    emit_report,
    err,
    grid_progress,
    make_executor,
    report_format,
    user_errors,
)
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.escape import rich_text


def _sweep_rich(result, console: Console) -> None:
    from repaudit.report.audit import sweep_floor, sweep_rows

    table = Table(title=rich_text(f"sweep {result.factor} · {result.task} · {result.metric} (points)"))
    for col in ("value", "score", "Δ (pts)", "95% CI (pts)", "flip rate", "verdict"):
        table.add_column(col, justify="left" if col in ("value", "verdict") else "right")
    for row in sweep_rows(result):
        table.add_row(*(rich_text(c) for c in row))
    console.print(table)
    console.print(rich_text(sweep_floor(result)))


def _factor_help() -> str:
    from repaudit.run.factors import sweepable

    return ("Factor to vary: " + ", ".join(sweepable()) + ". Scoring-only factors (acc_norm, answer_match, the "
            "exact_match options, score_normalisation) reuse the base's batches; repaudit factors says why the "
            "others are not sweepable.")


@with_factor_options()
def sweep_command(
    factor: Annotated[str, typer.Option(help=_factor_help())],
    values: Annotated[str, typer.Option(help="Comma-separated values, e.g. '1,4,16' (fewshot_order: seeds, "
                                             "'none' = sampler order; until: a|b per value).")],
    base_run: Annotated[Optional[Path], typer.Option("--base", help="Take the base configuration from this run: "
                                                                    "a repaudit run, an lm-eval results file or "
                                                                    "output directory, a lighteval results file or "
                                                                    "an inspect_ai log; the base options are then "
                                                                    "ignored.")] = None,
    task: Annotated[str, typer.Option(help="Task of the base configuration.")] = "arc_easy",
    model: Annotated[str, typer.Option(help="'default', a local directory or a hub id.")] = "default",
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data laid out as shared/data.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric to judge (default: the task's first).")] = None,
    noise_seeds: Annotated[int, typer.Option(help="Extra few-shot seeds for the noise floor (n-shot bases).")] = 3,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    fmt: FormatOption = Format.rich,
    output: OutputOption = None,
    mkdir: MkdirOption = False,
    plot: Annotated[Optional[Path], typer.Option(help="Draw score vs value with the noise band to PATH.png and "
                                                      "PATH.pdf.")] = None,
    precision: PrecisionOption = None,
    precision_seed: PrecisionSeedOption = 0,
    round_docs: RoundDocsOption = None,
    dry_run: DryRunOption = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    as_json: JsonOption = False,
    **factors: Any,
) -> None:
    """Vary one factor, hold the rest, and measure its effect against the noise floor. The base is the run
    given with --base, or the factor options (every factor is one; see repaudit factors).

    Example: repaudit sweep --factor batch_size --values 1,4,16 --dtype bfloat16 --data-dir ../shared/data --limit 200

    Example: repaudit sweep --factor num_fewshot --values 0,5 --precision 2 --dry-run
    """
    from repaudit.audit.sweep import parse_values, sweep
    from repaudit.report.audit import sweep_latex, sweep_markdown
    with user_errors():
        check_outputs(output, plot, fmt, as_json, html=not dry_run, mkdir=mkdir)
        check_precision(precision, round_docs)
        vals = parse_values(factor, values)
        base = base_config(base_run, model, data_dir, cache_dir, task=task, **factor_settings(factors))
        if dry_run:
            from repaudit.audit.plan import plan_grid
            from repaudit.audit.sweep import sweep_grid

            rounds = None
            if precision is not None:
                from repaudit.audit.sequential import plan_rounds
                from repaudit.audit.sweep import sweep_doc_ids

                rounds = plan_rounds(sweep_doc_ids(base), precision_seed, round_docs)
            plan = plan_grid(f"sweep --factor {factor} --values {values}", sweep_grid(base, factor, vals, noise_seeds),
                             rounds=rounds)
            emit_dry_run(plan, report_format(fmt, output, as_json), output)
            return
        ex = make_executor(executor, ray_address, workers)
        with grid_progress("sweep") as tick:
            result = sweep(base, factor, vals, ex, noise_seeds=noise_seeds, metric=metric, progress=tick,
                           precision=None if precision is None else precision / 100, precision_seed=precision_seed,
                           round_docs=round_docs)
        if plot is not None:
            from repaudit.report.plots import sweep_plot

            err.print(rich_text("wrote " + ", ".join(str(p) for p in sweep_plot(result, plot))))
        from repaudit.report.html import render_sweep_html

        emit_report(report_format(fmt, output, as_json, html=True), output, lambda c: _sweep_rich(result, c),
                    lambda: sweep_markdown(result), lambda: sweep_latex(result),
                    lambda: result.model_dump_json(indent=1), html=lambda: render_sweep_html(result))
