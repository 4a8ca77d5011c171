"""``repaudit reproduce``: search this model's configurations for one that gives a reported number."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from repaudit.cli.common import (
    DryRunOption,
    ExecutorOption,
    Format,
    FormatOption,
    JsonOption,
    MkdirOption,
    OutputOption,
    RayAddressOption,
    RoundDocsOption,
    WorkersOption,
    base_config,
    check_outputs,
    check_precision,
    emit_dry_run,
    emit_report,
    grid_progress,
    make_executor,
    report_format,
    user_errors,
)
from repaudit.cli.options import factor_settings, with_factor_options


def _moves_help() -> str:
    from repaudit.run.factors import moves

    return (f"Comma-separated one-factor moves (default: {', '.join(moves(default_only=True))}; also: "
            f"{', '.join(m for m in moves() if m not in moves(default_only=True))}).")


@with_factor_options()
def reproduce_command(
    target: Annotated[str, typer.Option(help="The reported score: 41.3 (percent), 0.413 (a fraction) "
                                                "or 0.5% (a score of at most 1 point needs the sign).")],
    task: Annotated[str, typer.Option(help="Task the number was reported on.")] = "arc_easy",
    metric: Annotated[Optional[str], typer.Option(help="Only this metric (acc, acc_norm, acc_bytes, "
                                                       "acc,subject_macro, …); default: every metric.")] = None,
    target_kind: Annotated[str, typer.Option(help="raw, normalised (Open LLM Leaderboard v2 form) or auto "
                                                  "(try both and say which one matches).")] = "auto",
    base_run: Annotated[Optional[Path], typer.Option("--base", help="Take the base configuration from this run: "
                                                                    "anything compare reads (a repaudit run, an "
                                                                    "lm-eval results file or output directory); "
                                                                    "the base options are then ignored.")
                        ] = None,
    budget: Annotated[int, typer.Option(help="Evaluate at most this many configurations (in search order).")] = 40,
    moves: Annotated[Optional[str], typer.Option(help=_moves_help())] = None,
    race: Annotated[bool, typer.Option("--race", help="Race the candidates: all advance through the same seeded "
                                                      "doc rounds, and one is dropped once its repeated 95 % "
                                                      "interval rules out every score that could match; "
                                                      "survivors are scored on every doc.")] = False,
    tolerance: Annotated[float, typer.Option(metavar="PTS", help="With --race: keep a candidate while its interval "
                                                                 "is within PTS points of a matching score.")] = 0.0,
    race_seed: Annotated[int, typer.Option(help="With --race: seed of the doc order.")] = 0,
    round_docs: RoundDocsOption = None,
    model: Annotated[str, typer.Option(help="'default', a local directory or a hub id.")] = "default",
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data laid out as shared/data.")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    top: Annotated[int, typer.Option(help="Rows to show (all are in the JSON).")] = 15,
    fmt: FormatOption = Format.rich,
    output: OutputOption = None,
    mkdir: MkdirOption = False,
    dry_run: DryRunOption = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    as_json: JsonOption = False,
    **factors: Any,
) -> None:
    """Which settings of this model reproduce a reported number? Protocols first, then one- and two-factor moves.

    Example: repaudit reproduce --task arc_easy --target 41.3 --metric acc --limit 200

    Example: repaudit reproduce --task arc_easy --target 12.5 --target-kind auto --base run.json --budget 20

    Example: repaudit reproduce --task sciq --target 71.5 --limit 200 --race
    """
    from repaudit.audit.reproduce import DEFAULT_MOVES, parse_target, reproduce
    from repaudit.errors import RepauditError
    from repaudit.report.protocol import render_reproduce_latex, render_reproduce_markdown, render_reproduce_rich
    with user_errors():
        check_outputs(output, None, fmt, as_json, mkdir=mkdir)
        value = parse_target(target)
        check_precision(None, round_docs)
        if not 0 <= tolerance <= 100:
            raise RepauditError(f"--tolerance must be between 0 and 100 points, got {tolerance:g}")
        settings = factor_settings(factors)
        base = base_config(base_run, model, data_dir, cache_dir, task=task, **settings)
        if base_run is not None and settings.get("limit") is not None:  # the user's cost cap applies to a base run too
            base = base.model_copy(update={"limit": settings["limit"]})
        chosen = tuple(m.strip() for m in moves.split(",") if m.strip()) if moves else DEFAULT_MOVES
        if dry_run:
            from repaudit.audit.plan import plan_grid
            from repaudit.audit.reproduce import candidates

            plan = plan_grid(f"reproduce --target {target}", [(c.label, c.config) for c in
                                                              candidates(base, chosen)[:budget]])
            emit_dry_run(plan, report_format(fmt, output, as_json), output)
            return
        ex = make_executor(executor, ray_address, workers)
        with grid_progress("reproduce") as tick:
            result = reproduce(base, value, ex, target_kind=target_kind, metric=metric, budget=budget, moves=chosen,
                               progress=tick, race=race, tolerance=tolerance / 100, race_seed=race_seed,
                               round_docs=round_docs)
        emit_report(report_format(fmt, output, as_json), output, lambda c: render_reproduce_rich(result, c, top),
                    lambda: render_reproduce_markdown(result, top), lambda: render_reproduce_latex(result, top),
                    lambda: result.model_dump_json(indent=1))
