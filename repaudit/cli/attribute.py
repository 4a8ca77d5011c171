"""``repaudit attribute``: re-execute the hybrids of two runs and attribute the score delta to each factor."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional

import typer

from repaudit.cli.attribution import attribute_runs, attribution_html, replay_sources
from repaudit.cli.common import (
    DocTextOption,
    check_outputs,
    check_precision,
    emit_dry_run,
    emit_report,
    report_format,
    user_errors,
)
from repaudit.cli.groups import (
    GridOptions,
    PrecisionOptions,
    ReplayEndpointOptions,
    ReportOptions,
    SourceOptions,
    StatOptions,
    grouped,
)
from repaudit.importers.detect import run_files


@dataclass
class AttributeOptions:
    """What is attributed, and how it is shown beyond the report."""

    metric: Annotated[Optional[str], typer.Option(help="Metric to attribute (default: the task's first).")] = None
    task_config: Annotated[Optional[Path], typer.Option(
        help="An lm-eval task YAML (or results file) that defines the task, for runs whose files record no "
             "configuration (lm-eval 0.3).", readable=False)] = None
    stats: StatOptions = field(default_factory=StatOptions)
    plot: Annotated[Optional[Path], typer.Option(help="Draw the waterfall to PATH.png and PATH.pdf.")] = None
    doc_text: DocTextOption = True
    noise_floor: Annotated[Optional[Path], typer.Option(
        help="A repaudit determinism report (JSON) of the runs' task: the backend's numerical noise floor, against "
             "which the residual and each factor's value are read.", readable=False)] = None


@grouped
def attribute_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help=f"Run A, one task with per-doc results: "
                                          f"{run_files(replayed=True)}.", readable=False)],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Run B, likewise.", readable=False)],
    what: AttributeOptions,
    source: SourceOptions,
    report: ReportOptions,
    precision: PrecisionOptions,
    grid: GridOptions,
    served: ReplayEndpointOptions,
) -> None:
    """Re-run every hybrid of two runs and attribute the score delta to each differing factor (Shapley values).

    Example: repaudit attribute tests/fixtures/inspect/arc_easy_a.eval tests/fixtures/inspect/arc_easy_b.eval

    Example: repaudit attribute a.json b.json --data-dir DATA -o attribution.md --plot waterfall

    Example: repaudit attribute a.json b.json --precision 2 --dry-run

    Example: repaudit attribute b1.json b64.json --noise-floor determinism.json

    Example: repaudit attribute served_0shot.json served_5shot.json --base-url http://127.0.0.1:8000/v1
    """
    from repaudit.report.audit import attribution_latex, attribution_markdown, attribution_rich

    r, pr = report, precision
    with user_errors():
        stat = what.stats.settings()
        check_outputs(r.output, what.plot, r.fmt, r.as_json, csv=not grid.dry_run, html=not grid.dry_run,
                      mkdir=r.mkdir)
        check_precision(pr.precision, pr.round_docs)
        if what.noise_floor is not None:  # an unreadable or empty report is refused before anything runs
            from repaudit.audit.determinism import check_floor

            check_floor(what.noise_floor)
        if grid.dry_run:
            _dry_run(run_a, run_b, what, source, r, pr, served)
            return
        result = attribute_runs(run_a, run_b, source.data_dir, source.model, what.metric, stat,
                                source.cache_dir, what.plot, grid.open_executor(served),
                                None if pr.precision is None else pr.precision / 100, pr.precision_seed,
                                pr.round_docs, what.task_config, served)
        if what.noise_floor is not None:
            from repaudit.audit.determinism import noise_floor

            floor = noise_floor(what.noise_floor, result.task, result.metric)
            result = result.model_copy(update={"noise_floor_sd": floor.sd, "noise_floor_method": floor.method})
        from repaudit.report.frames import attribution_frame, to_csv

        emit_report(report_format(r.fmt, r.output, r.as_json, csv=True, html=True), r.output,
                    lambda c: attribution_rich(result, c), lambda: attribution_markdown(result),
                    lambda: attribution_latex(result), lambda: result.model_dump_json(indent=1),
                    lambda: to_csv(attribution_frame(result)),
                    lambda: attribution_html(result, run_a, run_b, source.data_dir, source.model, source.cache_dir,
                                             what.doc_text))


def _dry_run(run_a: Path, run_b: Path, what: AttributeOptions, source: SourceOptions, r: ReportOptions,
             pr: PrecisionOptions, served: ReplayEndpointOptions) -> None:
    """``--dry-run``: the configurations, what the store holds and what is left, with ``--precision``'s rounds."""
    from repaudit.audit.attribution import attribution_grid
    from repaudit.audit.plan import plan_grid

    src_a, src_b = replay_sources(run_a, run_b, source.data_dir, source.model, source.cache_dir, what.task_config,
                                  served)
    rounds = None
    if pr.precision is not None:
        from repaudit.audit.attribution import attribution_strata
        from repaudit.audit.sequential import plan_strata

        rounds = plan_strata(*attribution_strata(src_a, src_b, what.metric), pr.precision_seed, pr.round_docs)
    plan = plan_grid(f"attribute {run_a.name} {run_b.name}", attribution_grid(src_a, src_b), rounds=rounds)
    emit_dry_run(plan, report_format(r.fmt, r.output, r.as_json), r.output)
