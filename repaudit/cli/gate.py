"""``repaudit gate``: GO / NO-GO / INCONCLUSIVE for a candidate run against a baseline, for CI.

Exit codes: 0 GO, 1 NO-GO, 2 INCONCLUSIVE (1 with ``--strict``); 64 usage error, 65 bad input (a run
or policy file; one ``error:`` line), 74 a report cannot be written, 130 interrupted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from repaudit.cli.common import Format, check_outputs, emit_report, err
from repaudit.cli.groups import DocTextOptions, PairOptions, SourceOptions, StatOptions, grouped
from repaudit.errors import EX_DATAERR, EX_IOERR, EX_USAGE
from repaudit.escape import rich_text

EXIT = {"GO": 0, "NO-GO": 1, "INCONCLUSIVE": 2}


@dataclass
class PolicyOptions:
    """The gate's policy: a YAML file, or one test on every task and metric; its statistics."""

    policy: Annotated[Optional[Path], typer.Option(help="Policy YAML: alpha, multiplicity, rows of task/metric "
                                                        "globs with test, margin and tier.", readable=False)] = None
    max_drop: Annotated[Optional[float], typer.Option(
        "--max-drop", metavar="PTS", help="One-line gate: non-inferiority with this margin on every task and "
                                          "metric (points for proportions).")] = None
    margin: Annotated[Optional[float], typer.Option(
        "--margin", metavar="PTS", help="One-line gate: equivalence (TOST) with this margin on every task and "
                                        "metric.")] = None
    stats: StatOptions = field(default_factory=StatOptions)


class GateFormat(str, Enum):
    """The formats gate writes (its help and its refusals list these only; JUnit XML comes with --junit)."""

    rich = "rich"
    markdown = "markdown"
    json = "json"
    html = "html"


@dataclass
class GateReportOptions:
    """The gate's reports: the terminal, Markdown, JSON or HTML, and JUnit XML."""

    fmt: Annotated[GateFormat, typer.Option("--format", help="Report format: rich (terminal), markdown, json or "
                                                             "html (one self-contained page with a per-doc "
                                                             "browser); JUnit XML with --junit.")] = GateFormat.rich
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the report here (.md, .json, .html, "
                                                                          ".txt).")] = None
    mkdir: Annotated[bool, typer.Option("--mkdir", help="Create the folders of -o and --junit that do not exist.")
                     ] = False
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False
    junit: Annotated[Optional[Path], typer.Option(help="Also write JUnit XML here (one testcase per row).")] = None
    strict: Annotated[bool, typer.Option("--strict", help="INCONCLUSIVE exits 1, like NO-GO.")] = False


@dataclass
class GateAttribution:
    """``--attribute``: re-execute a failing row's runs and attribute its delta."""

    attribute: Annotated[bool, typer.Option("--attribute", help="Re-execute and attribute a failing row's delta "
                                                                "to each factor (one-task replayable runs).")] = False
    precision: Annotated[Optional[float], typer.Option(metavar="PTS", help="With --attribute: as attribute "
                                                                           "--precision.")] = None


@grouped
def gate_command(
    baseline: Annotated[Path, typer.Argument(metavar="BASELINE", help="The baseline run: anything compare reads.",
                                             readable=False)],
    candidate: Annotated[Path, typer.Argument(metavar="CANDIDATE", help="The candidate run, likewise.",
                                              readable=False)],
    policy: PolicyOptions,
    pair: PairOptions,
    report: GateReportOptions,
    attribution: GateAttribution,
    source: SourceOptions,
    html: DocTextOptions,
) -> None:
    """Gate a candidate run against a baseline: non-inferiority, equivalence (TOST) or superiority per task and
    metric, with multiplicity control; exit 0 GO, 1 NO-GO, 2 INCONCLUSIVE (64 usage, 65 bad input).

    Markdown goes to $GITHUB_STEP_SUMMARY too when it is set.

    Example: repaudit gate tests/fixtures/lighteval/arc_easy_0shot tests/fixtures/lighteval/arc_easy_3shot --margin 5

    Example: repaudit gate baseline/ candidate/ --max-drop 1 --junit gate.xml -o gate.md

    Example: repaudit gate base.json cand.json --policy gate.yaml -o gate.html
    """
    from repaudit.cli.common import user_errors
    from repaudit.report.gate import render_json, render_markdown, render_rich, write_junit

    r = report
    with user_errors(EX_DATAERR, EX_IOERR, EX_USAGE):
        stat = policy.stats.settings()
        chosen = _check_gate_outputs(r)
        result, runs, task_map = _run_gate(baseline, candidate, policy, pair, stat)
        if attribution.attribute:
            _attribution(result, baseline, candidate, source, attribution.precision)
        emit_report(chosen, r.output, lambda c: render_rich(result, c), lambda: render_markdown(result),
                    lambda: "", lambda: render_json(result),
                    html=lambda: _html(result, baseline, candidate, runs, task_map, source, html.doc_text))
        if r.output is not None or chosen is not Format.rich:  # the decision reaches the log whatever the format
            err.print(rich_text(f"gate: {result.summary}"), highlight=False, soft_wrap=True)
        if r.junit is not None:
            write_junit(result, r.junit)
            err.print(rich_text(f"wrote {r.junit}"), highlight=False, soft_wrap=True)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            from repaudit.outputs import append_text

            append_text(Path(summary), render_markdown(result), "$GITHUB_STEP_SUMMARY")
    code = EXIT[result.decision]
    raise typer.Exit(code=1 if r.strict and code == 2 else code)


def _check_gate_outputs(r: GateReportOptions) -> Format:
    """The report format, and every output checked before any file is read.

    Raises:
        UsageError: a format gate does not write.
        OutputError: an output that cannot be written.
    """
    from repaudit.cli.common import report_format

    fmt = Format(r.fmt.value)
    chosen = report_format(fmt, r.output, r.as_json, html=True, latex=False)  # JUnit XML: --junit
    check_outputs(r.output, None, fmt, r.as_json, html=True, mkdir=r.mkdir, latex=False)
    if r.junit is not None:
        from repaudit.outputs import check_target

        check_target(r.junit, "JUnit", r.mkdir)
    return chosen


def _run_gate(baseline: Path, candidate: Path, opts: PolicyOptions, pair: PairOptions, stat):
    """The policy, both runs, their comparison (``stat``'s bootstrap and near ties, the policy's alpha and
    multiplicity) and the gate's result.

    Raises:
        UsageError: a policy file with --max-drop/--margin, or neither; RepauditError: what the inputs raise.
    """
    from repaudit.audit.compare import compare, load_run
    from repaudit.audit.gate import gate, inline_policy, read_policy
    from repaudit.audit.stat_settings import for_command
    from repaudit.cli.common import task_map_of
    from repaudit.errors import UsageError

    if opts.policy is not None and (opts.max_drop is not None or opts.margin is not None):
        raise UsageError("give --policy or --max-drop/--margin, not both")
    policy = read_policy(opts.policy) if opts.policy is not None else inline_policy(opts.max_drop, opts.margin, stat)
    stat = for_command("gate", stat, alpha=policy.alpha, adjust=policy.multiplicity)
    task_map = task_map_of(pair.pair_tasks or [])
    runs = load_run(baseline, pair.samples_a), load_run(candidate, pair.samples_b)
    comparison = compare(*runs, stat, task_map=task_map, names=(pair.name_a, pair.name_b))
    return gate(comparison, policy), runs, task_map


def _html(result, baseline, candidate, runs, task_map, source: SourceOptions, doc_text: bool) -> str:
    """The gate's HTML page, with the per-doc browser of the comparison behind it."""
    from repaudit.report.docview import doc_browser
    from repaudit.report.html import render_gate_html

    return render_gate_html(result, *doc_browser(result.comparison, (baseline, runs[0]), (candidate, runs[1]),
                                                 task_map, source.data_dir, source.model, source.cache_dir, doc_text))


def _attribution(result, baseline, candidate, source: SourceOptions, precision) -> None:
    """Attribute the first failing row's delta where both runs are one-task replayable runs; else say why."""
    from repaudit.audit.executor import LocalExecutor
    from repaudit.cli.attribution import attribute_runs
    from repaudit.errors import RepauditError

    failing = [r for r in result.rows if r.decision != "PASS" and r.d is not None]
    if not failing:
        result.notes.append("--attribute: no failing or inconclusive row with a test to attribute")
        return
    row = failing[0]
    try:
        att = attribute_runs(baseline, candidate, source.data_dir, source.model, row.metric,
                             result.stat_settings.model_copy(update={"n_boot": 2000}), source.cache_dir, None,
                             LocalExecutor(), None if precision is None else precision / 100)
    except RepauditError as exc:  # the gate's decision stands; the note says why nothing was attributed
        result.notes.append(f"--attribute: {row.task} {row.metric} could not be re-executed: {exc}")
        return
    result.attribution = att.model_dump(mode="json")
    result.notes.append(f"--attribute: {row.task} {row.metric} attributed (see 'attribution')")
