"""Render a gate result: the terminal view (the decision on the first line), Markdown (also for
``$GITHUB_STEP_SUMMARY``), JSON, and JUnit XML (one testcase per row: a ``<failure>`` for FAIL, a
``<skipped>`` for INCONCLUSIVE, properties with d and its interval) written with ``junitparser``.

Every string from a file goes through its output's escaper; in XML, control characters are made
visible (XML 1.0 cannot carry them) and ``junitparser``/ElementTree escape the rest.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from repaudit.audit.gate import GateResult, GateRow
from repaudit.audit.stats import level
from repaudit.escape import md, one_line, visible_controls
from repaudit.report.compare_text import doc_name, interval, num, p_text
from repaudit.report.glossary import diagnostic_label, factor_label, plural
from repaudit.report.power import power_text
from repaudit.report.values import values_diff

_TESTS = {"non_inferiority": "non-inferiority", "equivalence": "equivalence", "superiority": "superiority"}
#: the row table's columns; the interval's (``CI``) is labelled with its level where shown (:func:`_level`)
HEAD = ("tier", "task", "metric", "test", "margin", "d", "CI", "p", "p adj", "MDE", "decision")
SHOW = 12  # doc ids listed per flip class in text reports (all are in the JSON)


def _claim(r: GateRow) -> str:
    m = num(r.margin, r.unit)
    return {"non_inferiority": f"d > −{m}", "equivalence": f"|d| < {m}", "superiority": f"d > {m}"}[r.test]


def d_cell(r: GateRow) -> str:
    """The d column: d (oriented, positive = better) where the row was tested, else compare's Δ = B − A."""
    if r.d is not None:
        return num(r.d, r.unit, True)
    return f"Δ {num(r.delta, r.unit, True)}" if r.delta is not None else ""


def cells(r: GateRow, level: float) -> list[str]:
    """The cells of one row; d and its interval are oriented (positive = better) in the row's unit."""
    return [r.tier, r.task, r.metric, _TESTS[r.test], f"{num(r.margin, r.unit)} {r.unit}".strip(),
            d_cell(r), interval(r.ci_low, r.ci_high, r.unit), p_text(r.p_raw), p_text(r.p_adjusted),
            "" if r.power is None else "–" if r.power.mde is None else f"{r.power.mde:.2f}", r.decision]


def outcome(r: GateRow) -> str:
    """What decided the row, in numbers: where d and its interval lie against the margin."""
    unit = f" {r.unit}" if r.unit else ""
    m = num(r.margin, r.unit)
    if r.d is None:
        delta = f"Δ = {num(r.delta, r.unit, True)}{unit} (B − A); " if r.delta is not None else ""
        return f"{delta}no test: {r.reason or 'compare gives none'}"
    d = f"d = {num(r.d, r.unit, True)} {interval(r.ci_low, r.ci_high, r.unit)}{unit}"
    lo, hi = r.ci_low, r.ci_high
    if r.test == "equivalence":
        where = {"PASS": f"lies inside ±{m}", "FAIL": f"lies outside ±{m}"}.get(r.decision, f"reaches past ±{m}")
    else:
        bound = f"−{m}" if r.test == "non_inferiority" else m
        what = "margin" if r.test == "non_inferiority" else "required gain"
        where = {"PASS": f"lies above the {what} {bound}", "FAIL": f"lies below the {what} {bound}"}.get(
            r.decision, f"straddles the {what} {bound}")
    said = f"{d} {where}" if lo is not None and hi is not None else d
    return f"{said}; {r.reason}" if r.reason and r.decision != "PASS" else said


def why_lines(r: GateRow) -> list[str]:
    """What explains a FAIL or INCONCLUSIVE row: the numbers that decided it, factors, mechanisms, flips."""
    out = [f"{r.task} {r.metric} — {r.decision} ({_claim(r)}): {outcome(r)}"]
    if r.factors:
        out.append("  factors that differ: " + "; ".join(
            "{}: {} → {}".format(factor_label(f.path), *values_diff(f.a, f.b, 30)) for f in r.factors))
    for m in r.mechanisms:
        out.append(f"  likely mechanism: {diagnostic_label(m.diagnostic)}: {m.reason}")
    if r.power is not None:
        out.append("  what the paired test can detect: " + power_text(r.power, r.unit, r.decision == "INCONCLUSIVE"))
    for label, ids in (("harmful (right → wrong)", r.harmful), ("beneficial (wrong → right)", r.beneficial),
                       ("churn (near-tie flips)", r.churn)):
        if ids:
            more = " …" if len(ids) > SHOW else ""
            names = ", ".join(doc_name(i, r.keys.get(i)) for i in ids[:SHOW])
            out.append(f"  {label}: {plural(len(ids), 'doc')} ({names}{more})")
    return out


def _level(g: GateResult) -> str:
    return f"{level(2 * g.policy.alpha)}% CI"


def render_rich(g: GateResult, console: Console) -> None:
    """Decision first, then one line per row, then why for every FAIL/INCONCLUSIVE row."""
    style = {"GO": "bold green", "NO-GO": "bold red", "INCONCLUSIVE": "bold yellow"}[g.decision]
    console.print(Text(one_line(f"gate: {g.summary}"), style=style))
    console.print(Text(one_line(f"A = {g.comparison.a.get('name')} ({g.comparison.a['source']}), B = "
                                f"{g.comparison.b.get('name')} ({g.comparison.b['source']}); d = B − A oriented "
                                f"so that positive is better; {_level(g)} (two one-sided tests at α)")))
    for r in g.rows:
        c = cells(r, g.policy.alpha)
        numbers = (f"d {c[5]} {c[6]}; p {c[7] or '—'}, adjusted {c[8] or '—'}" if r.d is not None else
                   "not tested" + (f" (Δ = B − A = {num(r.delta, r.unit, True)})" if r.delta is not None else ""))
        console.print(Text(one_line(f"  {c[-1]:<12} [{c[0]}] {c[1]} {c[2]}: {c[3]} margin {c[4]}; {numbers}"
                                    + (f"; MDE {c[9]}" if c[9] else "")),
                           style={"PASS": "green", "FAIL": "red"}.get(r.decision, "yellow")))
    for w in g.comparison.warnings:
        console.print(Text(one_line("WARNING: " + w), style="bold red"))
    for r in g.rows:
        if r.decision != "PASS":
            for line in why_lines(r):
                console.print(Text(one_line(line)))
    for n in g.notes:
        console.print(Text(one_line("note: " + n)))
    if g.not_gated:
        console.print(Text(one_line(f"not gated ({len(g.not_gated)}, no policy row matches): "
                                    + ", ".join(g.not_gated))))


def render_markdown(g: GateResult) -> str:
    """GitHub-flavoured Markdown (what ``$GITHUB_STEP_SUMMARY`` receives)."""
    icon = {"GO": "✅", "NO-GO": "❌", "INCONCLUSIVE": "⚠️"}[g.decision]
    out = [f"### {icon} repaudit gate: {md(g.summary)}", "",
           f"A = {md(g.comparison.a.get('name'))} ({md(g.comparison.a['source'])}), B = "
           f"{md(g.comparison.b.get('name'))} ({md(g.comparison.b['source'])}); d = B − A oriented so that positive "
           f"is better, in points for proportions; {_level(g)}.", ""]
    out += [f"> **Warning:** {md(w)}\n" for w in g.comparison.warnings]
    out += ["| " + " | ".join(HEAD[:6] + (_level(g),) + HEAD[7:]) + " |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in g.rows:
        c = cells(r, g.policy.alpha)
        out.append("| " + " | ".join([c[0], md(c[1], False), md(c[2], False), *c[3:10], f"**{c[10]}**"]) + " |")
    failing = [r for r in g.rows if r.decision != "PASS"]
    if failing:
        out += ["", "#### Why", ""]
        for r in failing:
            lines = why_lines(r)
            out.append(f"- {md(lines[0])}")
            out += [f"  - {md(x.strip())}" for x in lines[1:]]
    if g.not_gated:
        out += ["", md(f"Not gated ({len(g.not_gated)}): " + ", ".join(g.not_gated))]
    out += [""] + [f"> {md(n)}" for n in g.notes]
    return "\n".join(out) + "\n"


def render_json(g: GateResult) -> str:
    """Every row, test, interval, p raw/adjusted, decision and reasons, and the comparison behind them."""
    return g.model_dump_json(indent=1)


def _x(text: object) -> str:
    return visible_controls(str(text))


def write_junit(g: GateResult, path: Path) -> None:
    """JUnit XML: a testsuite with the gate's properties, one testcase per row (``classname`` = tier),
    ``<failure>`` for FAIL, ``<skipped>`` for INCONCLUSIVE; read back with junitparser to check it.

    Raises:
        RepauditError: what was written does not read back as the rows it should hold.
    """
    from junitparser import Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

    from repaudit.errors import RepauditError
    from repaudit.outputs import write_file

    suite = TestSuite("repaudit gate")
    for name, value in (("decision", g.decision), ("alpha", g.policy.alpha), ("multiplicity", g.policy.multiplicity),
                        ("run_a", g.comparison.a.get("name")), ("run_b", g.comparison.b.get("name")),
                        *((f"warning_{i}", w) for i, w in enumerate(g.comparison.warnings, 1))):
        suite.add_property(name, _x(value))
    for r in g.rows:
        case = TestCase(_x(f"{r.task} {r.metric}"), classname=f"repaudit.gate.{r.tier}")
        props = Properties()
        for name, value in (("test", r.test), ("margin", r.margin), ("unit", r.unit), ("d", r.d),
                            ("ci_low", r.ci_low), ("ci_high", r.ci_high), ("p", r.p_raw), ("p_adjusted", r.p_adjusted),
                            ("mde", None if r.power is None else r.power.mde), ("n_docs", r.n_docs),
                            ("decision", r.decision)):
            props.add_property(Property(name, _x("" if value is None else value)))
        case.append(props)
        message = _x(" | ".join(why_lines(r))) if r.decision != "PASS" else ""
        if r.decision == "FAIL":
            case.result = [Failure(message, type_="FAIL")]
        elif r.decision == "INCONCLUSIVE":
            case.result = [Skipped(message)]
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    raw = xml.tostring()
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    # checked before anything is written: it parses, and it holds the rows and decisions it should
    back = JUnitXml.fromstring(text)
    cases = [c for s in (back if isinstance(back, JUnitXml) else [back]) for c in s]
    failures = sum(1 for c in cases if any(isinstance(x, Failure) for x in c.result))
    skipped = sum(1 for c in cases if any(isinstance(x, Skipped) for x in c.result))
    if (len(cases), failures, skipped) != (len(g.rows), sum(r.decision == "FAIL" for r in g.rows),
                                           sum(r.decision == "INCONCLUSIVE" for r in g.rows)):
        raise RepauditError(f"'{path}': the JUnit XML does not read back as the gate's rows; nothing written")
    write_file(Path(path), text, "JUnit")
