"""``repaudit sweep``: vary one factor, hold the rest, and measure its effect against the noise floor."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from repaudit.cli.common import (
    check_precision,
    emit_dry_run,
    emit_report,
    err,
    grid_progress,
    user_errors,
)
from repaudit.cli.groups import (
    BaseOptions,
    GridOptions,
    PrecisionOptions,
    ReportOptions,
    StatOptions,
    grouped,
)
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.escape import rich_text


def _sweep_rich(result, console: Console) -> None:
    from rich.table import Table

    from repaudit.audit.stats import level
    from repaudit.report.audit import sweep_floor, sweep_rows

    table = Table(title=rich_text(f"sweep {result.factor} · {result.task} · {result.metric} (points)"))
    for col in ("value", "score", "Δ (pts)", f"{level(result.alpha)}% CI (pts)", "flip rate", "verdict"):
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


@dataclass
class SweepOptions:
    """The factor, its values, and how its effect is judged and drawn."""

    factor: Annotated[str, typer.Option(help=_factor_help())]
    values: Annotated[str, typer.Option(help="Comma-separated values, e.g. '1,4,16' (fewshot_order: seeds, "
                                             "'none' = sampler order; until: a|b per value).")]
    metric: Annotated[Optional[str], typer.Option(help="Metric to judge (default: the task's first).")] = None
    noise_seeds: Annotated[int, typer.Option(help="Extra few-shot seeds for the noise floor (n-shot bases).")] = 3
    noise_floor: Annotated[Optional[Path], typer.Option(
        help="A repaudit determinism report (JSON) of the base's task, backend and dtype: the spread of the metric "
             "over its configurations is the noise floor (the backend's numerics), and no floor run is made.",
        readable=False)] = None
    plot: Annotated[Optional[Path], typer.Option(help="Draw score vs value with the noise band to PATH.png and "
                                                      "PATH.pdf.")] = None
    stats: StatOptions = field(default_factory=StatOptions)


@with_factor_options()
@grouped
def sweep_command(what: SweepOptions, base: BaseOptions, report: ReportOptions, precision: PrecisionOptions,
                  grid: GridOptions, **factors: Any) -> None:
    """Vary one factor, hold the rest, and measure its effect against the noise floor. The base is the run
    given with --base, or the factor options (every factor is one; see repaudit factors).

    Example: repaudit sweep --factor batch_size --values 1,4,16 --dtype bfloat16 --limit 200

    Example: repaudit sweep --factor num_fewshot --values 0,5 --precision 2 --dry-run

    Example: repaudit sweep --factor batch_size --values 1,64 --noise-floor determinism.json
    """
    from repaudit.audit.sweep import parse_values, sweep
    from repaudit.report.audit import sweep_latex, sweep_markdown

    pr = precision
    with user_errors():
        stat = what.stats.settings()
        report.check(what.plot, html=not grid.dry_run)
        check_precision(pr.precision, pr.round_docs)
        vals = parse_values(what.factor, what.values)
        cfg = base.config(**factor_settings(factors))
        if grid.dry_run:
            _dry_run(cfg, what, vals, report, pr)
            return
        with grid_progress("sweep") as tick:
            result = sweep(cfg, what.factor, vals, grid.open_executor(base), noise_seeds=what.noise_seeds,
                           metric=what.metric, progress=tick,
                           precision=None if pr.precision is None else pr.precision / 100,
                           precision_seed=pr.precision_seed, round_docs=pr.round_docs, noise_floor=what.noise_floor,
                           stat=stat)
        if what.plot is not None:
            from repaudit.report.plots import sweep_plot

            err.print(rich_text("wrote " + ", ".join(str(p) for p in sweep_plot(result, what.plot))))
        from repaudit.report.html import render_sweep_html

        emit_report(report.format(html=True), report.output, lambda c: _sweep_rich(result, c),
                    lambda: sweep_markdown(result), lambda: sweep_latex(result),
                    lambda: result.model_dump_json(indent=1), html=lambda: render_sweep_html(result))


def _dry_run(cfg, what: SweepOptions, vals: list, report: ReportOptions, pr: PrecisionOptions) -> None:
    """``--dry-run``: the sweep's configurations (noise seeds included), the store's batches and what is left."""
    from repaudit.audit.plan import plan_grid
    from repaudit.audit.sweep import sweep_grid

    rounds = None
    if pr.precision is not None:
        from repaudit.audit.sequential import plan_rounds
        from repaudit.audit.sweep import sweep_doc_ids

        rounds = plan_rounds(sweep_doc_ids(cfg), pr.precision_seed, pr.round_docs)
    plan = plan_grid(f"sweep --factor {what.factor} --values {what.values}",
                     sweep_grid(cfg, what.factor, vals, what.noise_seeds, what.noise_floor is not None), rounds=rounds)
    emit_dry_run(plan, report.format(), report.output)
