"""Conformance and reproduce reports: terminal, Markdown, LaTeX (JSON is the models' own dump).

Every string from a file (task and metric names, protocol values and notes) is escaped for the
language it lands in (:mod:`repaudit.escape`).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from repaudit.audit.conformance import Conformance
from repaudit.audit.reproduce import ReproduceResult
from repaudit.audit.stats import level
from repaudit.escape import latex as e
from repaudit.escape import md, rich_text
from repaudit.report.audit import latex_rows, latex_table
from repaudit.report.compare import short

CONF_HEAD = ("task", "factor", "protocol", "run", "status", "note")
def repro_head(r: ReproduceResult) -> tuple[str, ...]:
    """The reproduce table's columns; the interval's level is the search's (1 − alpha)."""
    return ("configuration", "found by", "metric", "form", "score", f"{level(r.alpha)}% CI", "distance", "docs",
            "match")


def conformance_rows(c: Conformance) -> list[tuple[str, ...]]:
    """Deviations first, then unknowns, then conforming factors, then those that do not apply to the run."""
    order = {"deviates": 0, "unknown": 1, "conforms": 2, "n/a": 3}
    rows = sorted(c.rows, key=lambda r: (r.task, order[r.status]))
    return [(r.task, r.factor, short(r.protocol_value, 32), short(r.run_value, 32), r.status,
             short(r.note, 60) if r.note else "") for r in rows]


def conformance_summary(c: Conformance) -> list[str]:
    """Plain sentences: what deviates, what is unsaid, how scores read under the protocol."""
    dev = c.deviations()
    na = [r for r in c.rows if r.status == "n/a"]
    lines = [f"{c.run} ({c.run_source}) against protocol {c.protocol} — {c.protocol_title} "
             f"(sha256 {c.protocol_sha256[:12]}): "
             + (f"{len(dev)} deviation(s): " + ", ".join(f"{r.task} {r.factor}" for r in dev) if dev
                else "no deviation among the factors it fixes")
             + f"; {sum(r.status == 'unknown' for r in c.rows)} factor(s) the run does not record"
             + (f"; {len(na)} setting(s) that do not apply to the run, not deviations: "
                + ", ".join(f"{r.task} {r.factor}" for r in na) if na else "") + "."]
    for task, unsaid in c.unspecified.items():
        if unsaid:
            lines.append(f"{task}: the protocol's sources leave unspecified: {', '.join(unsaid)}.")
    if c.not_in_protocol:
        lines.append(f"not defined by the protocol: {', '.join(c.not_in_protocol)}.")
    for s in c.scores:
        if s.shown is not None:
            lines.append(f"{s.task} {s.metric}: raw {100 * s.raw:.2f} reads as {100 * s.shown:.2f} in the protocol's "
                         f"{s.form.replace('_', '-')} form.")
    return lines


def render_conformance_rich(c: Conformance, console: Console) -> None:
    table = Table(title=rich_text(f"conformance · {c.protocol}"))
    for col in CONF_HEAD:
        table.add_column(col)
    style = {"deviates": "bold red", "unknown": "yellow", "conforms": "green", "n/a": "dim"}
    for row in conformance_rows(c):
        table.add_row(*(rich_text(x) for x in row[:4]), f"[{style[row[4]]}]{row[4]}[/]", rich_text(row[5]))
    console.print(table)
    for line in conformance_summary(c):
        console.print(rich_text(line), soft_wrap=True, highlight=False)


def render_conformance_markdown(c: Conformance) -> str:
    out = [f"## Conformance with {md(c.protocol)}", "", "| " + " | ".join(CONF_HEAD) + " |",
           "|" + "---|" * len(CONF_HEAD)]
    out += ["| " + " | ".join(md(x) for x in row) + " |" for row in conformance_rows(c)]
    out += [""] + [md(line) for line in conformance_summary(c)]
    return "\n".join(out) + "\n"


def render_conformance_latex(c: Conformance) -> str:
    caption = e(f"Conformance of {c.run_source} run with protocol {c.protocol}. ") + e(conformance_summary(c)[0])
    return latex_table(caption, "llllll", [latex_rows([CONF_HEAD]), latex_rows(conformance_rows(c))])


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def reproduce_rows(r: ReproduceResult, top: int | None = 15) -> list[tuple[str, ...]]:
    views = r.views if top is None else r.views[:top]
    return [(v.label, v.kind, v.metric, v.form.replace("leaderboard_normalised", "normalised"), _pct(v.score),
             f"[{_pct(v.ci_low)}, {_pct(v.ci_high)}]", _pct(v.distance), str(v.n),
             "dropped" if v.dropped else "yes" if v.contains else "")
            for v in views]


def reproduce_summary(r: ReproduceResult) -> str:
    return (f"target {_pct(r.target)} ({r.target_kind}) on {r.task}: {r.evaluated} of {r.candidates} configurations "
            f"evaluated ({r.computed} needed forward passes, the rest came from the batch store), {r.wall_s:.0f} s. "
            f"{r.verdict}." + (race_summary(r) if r.race is not None else ""))


def race_summary(r: ReproduceResult) -> str:
    """The racing sentence: what was dropped, what the intervals of dropped rows mean, the cost; empty without a
    race."""
    x = r.race
    if x is None:
        return ""
    return (f" Racing (--race, seed {x.seed}, {x.rounds_run} of {x.rounds_planned} rounds of {x.round_docs} docs): "
            f"{len(x.dropped)} of {r.evaluated} configurations dropped; {x.doc_evaluations:,} of "
            f"{x.full_doc_evaluations:,} doc evaluations of a full search. A dropped row's score is its mean over the "
            f"docs it ran and its interval the repeated {level(x.alpha)} % interval for its score on all "
            f"{x.docs_available} docs (c = {x.constant:.3f}), which misses every score that could match"
            + (f" within {100 * x.tolerance:g} points" if x.tolerance else "") +
            f"; each such row is wrongly dropped with probability at most {100 * x.alpha:g} %.")


def render_reproduce_rich(r: ReproduceResult, console: Console, top: int = 15) -> None:
    table = Table(title=rich_text(f"reproduce {_pct(r.target)} · {r.task} (points)"))
    cols = repro_head(r)
    for col in cols:
        table.add_column(col, justify="right" if col in (*cols[4:6], "distance", "docs") else "left",
                         overflow="fold", min_width=24 if col == "configuration" else None)
    for row in reproduce_rows(r, top):
        table.add_row(*(rich_text(x) for x in row))
    console.print(table)
    console.print(rich_text(reproduce_summary(r)), soft_wrap=True, highlight=False)


def render_reproduce_markdown(r: ReproduceResult, top: int = 15) -> str:
    cols = repro_head(r)
    out = [f"## Reproducing {_pct(r.target)} on {md(r.task)}", "", "| " + " | ".join(cols) + " |",
           "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(md(x) for x in row) + " |" for row in reproduce_rows(r, top)]
    return "\n".join(out + ["", md(reproduce_summary(r))]) + "\n"


def render_reproduce_latex(r: ReproduceResult, top: int = 15) -> str:
    return latex_table(e(reproduce_summary(r)), "llllrrrrl",
                       [latex_rows([repro_head(r)]), latex_rows(reproduce_rows(r, top))])
