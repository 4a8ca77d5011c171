"""Render a Comparison as a rich terminal view, Markdown, LaTeX (booktabs) or JSON.

Every string that comes from a run file (paths, task, metric and factor names, factor values,
targets, predictions, notes) goes through the escaper of its output language
(:mod:`repaudit.escape`); numbers formatted here are ours and need none in Markdown.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from repaudit.audit.compare import Comparison, ScoreRow
from repaudit.escape import latex, md, md_code, one_line, rich_text, visible_controls
from repaudit.report.diagnostics import DIAG_HEAD, diagnostic_cells, mechanism_line


def short(value: Any, width: int = 48) -> str:
    """A value on one line, at most ``width`` characters (JSON for non-strings)."""
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    s = visible_controls(s).replace("\n", " ").replace("\t", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def pts(x: float | None) -> str:
    """A metric difference in points, signed; empty for ``None`` or a non-finite value."""
    return "" if x is None or not math.isfinite(x) else f"{100 * x:+.2f}"


def score(x: float | None) -> str:
    """A metric value in points; ``n/a`` when missing or not finite."""
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.2f}"


def ci(r: ScoreRow) -> str:
    return "" if r.ci_low is None else f"[{100 * r.ci_low:+.2f}, {100 * r.ci_high:+.2f}]"


def _p(p: float | None) -> str:
    return "" if p is None else (f"{p:.3g}" if p >= 1e-4 else f"{p:.1e}")


def _flips(r: ScoreRow) -> str:
    if r.right_to_wrong is None:
        return ""
    return f"{r.right_to_wrong}↓ {r.wrong_to_right}↑ ({r.near_tie_flips} near-tie)"


SCORE_HEAD = ("task", "metric", "A", "B", "Δ (pts)", "95% CI (pts)", "method", "McNemar p", "flips", "verdict")


def _score_cells(r: ScoreRow, esc) -> list[str]:
    """Cells of one score row; ``esc`` is applied to the strings that come from the runs."""
    verdict = r.verdict + (f" ({esc(r.note)})" if r.note else "")
    return [esc(r.task), esc(r.metric), score(r.a), score(r.b), pts(r.delta), ci(r), r.method, _p(r.mcnemar_p),
            _flips(r), verdict]


def agreement_lines(c: Comparison, esc=str) -> list[str]:
    """One sentence per task on how the shared docs line up (content, targets, prompts, predictions)."""
    def n(v: int | None) -> str:
        return "not recorded" if v is None else str(v)

    return [f"{esc(ag.task)}: {ag.n_shared} shared docs (A {ag.n_a}, B {ag.n_b}); identical doc content "
            f"{n(ag.doc_hash_equal)}, choices {n(ag.choices_equal)}, targets {n(ag.target_equal)}, prompt texts "
            f"{n(ag.prompt_hash_equal)}, few-shot ids {n(ag.fewshot_equal)}, predictions {n(ag.prediction_equal)}"
            for ag in c.docs]


def unknown_fields(c: Comparison) -> list[str]:
    """``group.field`` of every factor one run does not record."""
    return sorted({f"{f.group}.{f.field}" for f in c.factors if f.status == "unknown"})


def top_flips(c: Comparison, top: int):
    """The ``top`` flips with the largest margins (a flip both runs were sure about comes first)."""
    return sorted(c.flips, key=lambda f: -min(f.a_margin or 0.0, f.b_margin or 0.0))[:top]


def render_rich(c: Comparison, console: Console, top: int = 10) -> None:
    """The default terminal view. Every cell is a :class:`rich.text.Text` or escaped markup."""
    console.print(Text(visible_controls(f"A: {c.a['path']} ({c.a['source']})\nB: {c.b['path']} ({c.b['source']})")))
    for w in c.warnings:
        console.print(Text(one_line("WARNING: " + w), style="bold red"))
    diff = Table(title="Factors that differ", title_justify="left")
    for col in ("task", "factor", "field", "A", "B"):
        diff.add_column(col)
    for f in c.differing():
        diff.add_row(*(rich_text(x) for x in (f.task, f.group, f.field, short(f.a), short(f.b))))
    if not c.differing():
        diff.add_row("", "(none recorded)", "", "", "")
    same = len({(f.group, f.field) for f in c.factors if f.status == "same"})
    scores = Table(title="Scores (points)", title_justify="left")
    for h in SCORE_HEAD:
        scores.add_column(h, justify="left" if h in ("task", "metric", "method", "verdict", "flips") else "right")
    for r in c.scores:
        scores.add_row(*(rich_text(x) for x in _score_cells(r, str)))
    parts: list[Any] = [diff, Text(one_line(f"{same} factor fields are the same; not recorded by one run "
                                            f"(unknown): {', '.join(unknown_fields(c)) or 'none'}")), scores]
    parts += [Text(one_line(line)) for line in agreement_lines(c)]
    if c.diagnostics:
        dt = Table(title="Diagnostics", title_justify="left")
        for h in DIAG_HEAD:
            dt.add_column(h)
        for r in c.diagnostics:
            dt.add_row(*(rich_text(x) for x in diagnostic_cells(r)))
        parts.append(dt)
    parts += [Text(one_line(mechanism_line(m))) for m in c.mechanisms]
    if c.flips:
        ft = Table(title=f"Flipped docs (top {top} by margin; all in --format json)", title_justify="left")
        for h in ("task", "metric", "doc_id", "direction", "target", "A pred", "B pred", "A margin", "B margin"):
            ft.add_column(h)
        for f in top_flips(c, top):
            ft.add_row(*(rich_text(x) for x in (
                f.task, f.metric, str(f.doc_id), f.direction + (" (near-tie)" if f.near_tie else ""),
                short(f.target, 20), short(f.a_prediction, 20), short(f.b_prediction, 20),
                "" if f.a_margin is None else f"{f.a_margin:.3f}", "" if f.b_margin is None else f"{f.b_margin:.3f}")))
        parts.append(ft)
    for n in c.notes:
        parts.append(Text(one_line("note: " + n)))
    console.print(Group(*parts))


def render_markdown(c: Comparison, top: int = 10) -> str:
    """GitHub-flavoured Markdown: factor table, score table, doc agreement, flipped docs, notes."""
    out = [f"> **Warning:** {md(w)}\n" for w in c.warnings]
    out += [f"**A**: {md_code(c.a['path'])} ({md(c.a['source'])})  ",
            f"**B**: {md_code(c.b['path'])} ({md(c.b['source'])})", "", "### Factors that differ", "",
           "| task | factor | field | A | B |", "|---|---|---|---|---|"]
    for f in c.differing():
        out.append(f"| {md(f.task)} | {md(f.group)} | {md(f.field)} | {md(short(f.a))} | {md(short(f.b))} |")
    out += ["", f"Not recorded by one of the runs (unknown): {md(', '.join(unknown_fields(c)) or 'none')}.", "",
            "### Scores (points)", "", "| " + " | ".join(SCORE_HEAD) + " |", "|" + "---|" * len(SCORE_HEAD)]
    for r in c.scores:
        out.append("| " + " | ".join(_score_cells(r, md)) + " |")
    out += [""] + [line + "  " for line in agreement_lines(c, md)]
    if c.diagnostics:
        out += ["", "### Diagnostics", "", "| " + " | ".join(DIAG_HEAD) + " |", "|---|---|---|---|"]
        out += ["| " + " | ".join(md(x) for x in diagnostic_cells(r)) + " |" for r in c.diagnostics]
    if c.mechanisms:
        out += [""] + [f"- {md(mechanism_line(m))}" for m in c.mechanisms]
    if c.flips:
        out += ["", f"### Flipped docs (top {top} by margin)", "",
                "| task | metric | doc_id | direction | target | A | B | near-tie |",
                "|---|---|---|---|---|---|---|---|"]
        for f in top_flips(c, top):
            out.append(f"| {md(f.task)} | {md(f.metric)} | {f.doc_id} | {f.direction} | {md(short(f.target, 20))} "
                       f"| {md(short(f.a_prediction, 20))} | {md(short(f.b_prediction, 20))} | "
                       f"{'yes' if f.near_tie else ''} |")
    out += [""] + [f"> {md(n)}" for n in c.notes]
    return "\n".join(out).rstrip() + "\n"


def render_latex(c: Comparison, top: int = 10) -> str:
    """A LaTeX fragment with booktabs tables (needs ``\\usepackage{booktabs}``); pure ASCII."""
    e = latex
    paired = {r.method for r in c.scores} <= {"paired_bootstrap", "paired_cluster_bootstrap"}
    interval = ("a paired 95\\,\\% bootstrap interval over the shared docs" if paired else
                "a 95\\,\\% interval (method per row: paired bootstrap over shared docs, or unpaired from the "
                "reported stderrs where per-doc results are missing)")
    lines = [r"% repaudit compare: " + e(c.a["path"]) + " vs " + e(c.b["path"]),
             r"\begin{table}[t]", r"\centering", r"\small",
             r"\caption{Factors that differ between run A (" + e(c.a["source"]) + ") and run B ("
             + e(c.b["source"]) + ")}",
             r"\begin{tabular}{llll}", r"\toprule", r"factor & field & A & B \\", r"\midrule"]
    for f in c.differing():
        lines.append(f"{e(f.group)} & {e(f.field)} & {e(short(f.a, 32))} & {e(short(f.b, 32))} \\\\")
    if not c.differing():
        lines.append(r"\multicolumn{4}{l}{(none recorded)} \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
              r"\begin{table}[t]", r"\centering", r"\small",
              r"\caption{Scores in points; $\Delta$ = B $-$ A with " + interval + "}",
              r"\begin{tabular}{llrrrllrl}", r"\toprule",
              r"task & metric & A & B & $\Delta$ & 95\,\% CI & method & McNemar $p$ & verdict \\", r"\midrule"]
    for r in c.scores:
        cells = _score_cells(r, str)
        lines.append(" & ".join(e(x) for i, x in enumerate(cells) if i != 8) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    if c.diagnostics:
        lines += ["", r"\begin{table}[t]", r"\centering", r"\small",
                  r"\caption{Diagnostics: docs truncated, failed extraction, exact ties, few-shot leakage}",
                  r"\begin{tabular}{p{0.12\linewidth}p{0.22\linewidth}p{0.28\linewidth}p{0.28\linewidth}}",
                  r"\toprule", r"task & diagnostic & A & B \\", r"\midrule"]
        lines += [" & ".join(e(x) for x in diagnostic_cells(r)) + r" \\" for r in c.diagnostics]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    lines += ["", *(r"\noindent\textbf{Warning:} " + e(w) + "\n" for w in c.warnings),
              *(r"\noindent " + e(mechanism_line(m)) + "\n" for m in c.mechanisms)]
    return "\n".join(lines).rstrip() + "\n"


def render_json(c: Comparison) -> str:
    """The complete Comparison (every factor row, every flip) as JSON; non-finite numbers as ``null``."""
    return c.model_dump_json(indent=1)
