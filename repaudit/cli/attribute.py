"""``repaudit attribute``: re-execute the hybrids of two runs and attribute the score delta to each factor."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from repaudit.cli.attribution import attribute_runs, attribution_html, replay_sources
from repaudit.cli.common import (
    DocTextOption,
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
    check_outputs,
    check_precision,
    emit_dry_run,
    emit_report,
    make_executor,
    report_format,
    user_errors,
)


def attribute_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="Run A: a repaudit run, an lm-eval results file or "
                                          "output directory, a lighteval results file (ARC log-likelihood) or an "
                                          "inspect_ai log (multiple_choice on hf/); one task, per-doc results.")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Run B, likewise.")],
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data the runs read (shared/data layout).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Override the model location recorded in the runs: 'default' "
                                                 "(the packaged SmolLM2-135M-Instruct), a local directory or a hub "
                                                 "id.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric to attribute (default: the task's first).")] = None,
    task_config: Annotated[Optional[Path], typer.Option(
        help="An lm-eval task YAML (or results file) that defines the task, for runs whose files record no "
             "configuration (lm-eval 0.3).")] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates over docs.")] = 2000,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    fmt: FormatOption = Format.rich,
    output: OutputOption = None,
    mkdir: MkdirOption = False,
    plot: Annotated[Optional[Path], typer.Option(help="Draw the waterfall to PATH.png and PATH.pdf.")] = None,
    precision: PrecisionOption = None,
    precision_seed: PrecisionSeedOption = 0,
    round_docs: RoundDocsOption = None,
    dry_run: DryRunOption = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    as_json: JsonOption = False,
    doc_text: DocTextOption = True,
) -> None:
    """Re-run every hybrid of two runs and attribute the score delta to each differing factor (Shapley values).

    Example: repaudit attribute a.json b.json --data-dir ../shared/data -o attribution.md --plot waterfall

    Example: repaudit attribute a.json b.json --precision 2 --dry-run

    Example: repaudit attribute logs/a.eval logs/b.eval --model default   (inspect_ai logs)
    """
    from repaudit.report.audit import attribution_latex, attribution_markdown, attribution_rich

    with user_errors():
        check_outputs(output, plot, fmt, as_json, csv=not dry_run, html=not dry_run, mkdir=mkdir)
        check_precision(precision, round_docs)
        if dry_run:
            from repaudit.audit.attribution import attribution_grid
            from repaudit.audit.plan import plan_grid

            srcs = replay_sources(run_a, run_b, data_dir, model, cache_dir, task_config)
            rounds = None
            if precision is not None:
                from repaudit.audit.attribution import attribution_strata
                from repaudit.audit.sequential import plan_strata

                rounds = plan_strata(*attribution_strata(*srcs, metric), precision_seed, round_docs)
            plan = plan_grid(f"attribute {run_a.name} {run_b.name}", attribution_grid(*srcs), rounds=rounds)
            emit_dry_run(plan, report_format(fmt, output, as_json), output)
            return
        result = attribute_runs(run_a, run_b, data_dir, model, metric, n_boot, cache_dir, plot,
                            make_executor(executor, ray_address, workers),
                            None if precision is None else precision / 100, precision_seed, round_docs, task_config)
        from repaudit.report.frames import attribution_frame, to_csv

        emit_report(report_format(fmt, output, as_json, csv=True, html=True), output,
                    lambda c: attribution_rich(result, c), lambda: attribution_markdown(result),
                    lambda: attribution_latex(result), lambda: result.model_dump_json(indent=1),
                    lambda: to_csv(attribution_frame(result)),
                    lambda: attribution_html(result, run_a, run_b, data_dir, model, cache_dir, doc_text))
