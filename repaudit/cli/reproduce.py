"""``repaudit reproduce``: search this model's configurations for one that gives a reported number."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Optional

import typer

from repaudit.cli.common import (
    RoundDocsOption,
    check_precision,
    emit_dry_run,
    emit_report,
    grid_progress,
    user_errors,
)
from repaudit.cli.groups import BaseOptions, GridOptions, ReportOptions, StatOptions, grouped
from repaudit.cli.options import factor_settings, with_factor_options


def _moves_help() -> str:
    from repaudit.run.factors import moves

    return (f"Comma-separated one-factor moves (default: {', '.join(moves(default_only=True))}; also: "
            f"{', '.join(m for m in moves() if m not in moves(default_only=True))}).")


@dataclass
class TargetOptions:
    """The reported number, on which metric, and how many rows the report shows."""

    target: Annotated[str, typer.Option(help="The reported score: 41.3 (percent), 0.413 (a fraction) "
                                             "or 0.5% (a score of at most 1 point needs the sign).")]
    metric: Annotated[Optional[str], typer.Option(help="Only this metric (acc, acc_norm, acc_bytes, "
                                                       "acc,subject_macro, …); default: every metric.")] = None
    target_kind: Annotated[str, typer.Option(help="raw, normalised (Open LLM Leaderboard v2 form) or auto "
                                                  "(try both and say which one matches).")] = "auto"
    top: Annotated[int, typer.Option(help="Rows to show (all are in the JSON).")] = 15


@dataclass
class SearchOptions:
    """Which candidates are tried, how many, and whether they race."""

    budget: Annotated[int, typer.Option(help="Evaluate at most this many configurations (in search order).")] = 40
    moves: Annotated[Optional[str], typer.Option(help=_moves_help())] = None
    race: Annotated[bool, typer.Option("--race", help="Race the candidates: all advance through the same seeded "
                                                      "doc rounds, and one is dropped once its repeated "
                                                      "(1 − alpha) interval rules out every score that could match; "
                                                      "survivors are scored on every doc.")] = False
    tolerance: Annotated[float, typer.Option(metavar="PTS", help="With --race: keep a candidate while its interval "
                                                                 "is within PTS points of a matching score.")] = 0.0
    race_seed: Annotated[int, typer.Option(help="With --race: seed of the doc order.")] = 0
    round_docs: RoundDocsOption = None
    stats: StatOptions = field(default_factory=StatOptions)


@with_factor_options()
@grouped
def reproduce_command(target: TargetOptions, search: SearchOptions, base: BaseOptions, report: ReportOptions,
                      grid: GridOptions, **factors: Any) -> None:
    """Which settings of this model reproduce a reported number? Protocols first, then one- and two-factor moves.

    Example: repaudit reproduce --task arc_easy --target 41.3 --metric acc --limit 200

    Example: repaudit reproduce --task arc_easy --target 12.5 --target-kind auto --base run.json --budget 20

    Example: repaudit reproduce --task sciq --target 71.5 --limit 200 --race
    """
    from repaudit.audit.reproduce import DEFAULT_MOVES, reproduce
    from repaudit.audit.target import parse_target
    from repaudit.errors import RepauditError
    from repaudit.report.protocol import render_reproduce_latex, render_reproduce_markdown, render_reproduce_rich

    t, s = target, search
    with user_errors():
        stat = s.stats.settings()
        report.check()
        value = parse_target(t.target)
        check_precision(None, s.round_docs)
        if not 0 <= s.tolerance <= 100:
            raise RepauditError(f"--tolerance must be between 0 and 100 points, got {s.tolerance:g}")
        settings = factor_settings(factors)
        cfg = base.config(**settings)
        # the user's cost cap applies to a base run too
        if base.base_run is not None and settings.get("limit") is not None:
            cfg = cfg.model_copy(update={"limit": settings["limit"]})
        chosen = tuple(m.strip() for m in s.moves.split(",") if m.strip()) if s.moves else DEFAULT_MOVES
        if grid.dry_run:
            from repaudit.audit.plan import plan_grid
            from repaudit.audit.reproduce import candidates

            plan = plan_grid(f"reproduce --target {t.target}",
                             [(c.label, c.config) for c in candidates(cfg, chosen)[:s.budget]])
            emit_dry_run(plan, report.format(), report.output)
            return
        with grid_progress("reproduce") as tick:
            result = reproduce(cfg, value, grid.open_executor(base), target_kind=t.target_kind, metric=t.metric,
                               budget=s.budget, moves=chosen, progress=tick, race=s.race, tolerance=s.tolerance / 100,
                               race_seed=s.race_seed, round_docs=s.round_docs, stat=stat)
        emit_report(report.format(), report.output, lambda c: render_reproduce_rich(result, c, t.top),
                    lambda: render_reproduce_markdown(result, t.top), lambda: render_reproduce_latex(result, t.top),
                    lambda: result.model_dump_json(indent=1))
