"""Render a Comparison as a rich terminal view, Markdown, LaTeX (booktabs) or JSON.

Every piece of text taken from a run file goes through :func:`latex_escape` in LaTeX output and
through :func:`md_escape` in Markdown, so that run contents cannot break the table.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from repaudit.audit.compare import Comparison

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: Any) -> str:
    """Escape LaTeX's special characters; newlines become spaces."""
    return "".join(_LATEX_SPECIALS.get(c, c) for c in str(text).replace("\n", " "))


def md_escape(text: Any) -> str:
    """Escape pipes and newlines so a value stays inside one Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", "\\n")


def _short(value: Any, width: int = 48) -> str:
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= width else s[: width - 1] + "…"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:+.2f}"


def _ci(r) -> str:
    return "" if r.ci_low is None else f"[{100 * r.ci_low:+.2f}, {100 * r.ci_high:+.2f}]"


def _p(p: float | None) -> str:
    return "" if p is None else (f"{p:.3g}" if p >= 1e-4 else f"{p:.1e}")


def _flips(r) -> str:
    if r.right_to_wrong is None:
        return ""
    return f"{r.right_to_wrong}↓ {r.wrong_to_right}↑ ({r.near_tie_flips} near-tie)"


SCORE_HEAD = ("task", "metric", "A", "B", "Δ (pts)", "95% CI (pts)", "method", "McNemar p", "flips", "verdict")


def _score_cells(r) -> list[str]:
    return [r.task, r.metric, f"{100 * r.a:.2f}", f"{100 * r.b:.2f}", _pct(r.delta), _ci(r), r.method,
            _p(r.mcnemar_p), _flips(r), r.verdict + (f" ({r.note})" if r.note else "")]


def agreement_lines(c: Comparison) -> list[str]:
    """One sentence per task on how the shared docs line up (content, targets, prompts, predictions)."""
    return [f"{ag.task}: {ag.n_shared} shared docs (A {ag.n_a}, B {ag.n_b}); identical doc content "
            f"{ag.doc_hash_equal}, targets {ag.target_equal}, prompt texts {ag.prompt_hash_equal}, "
            f"predictions {ag.prediction_equal}" for ag in c.docs]


def render_rich(c: Comparison, console: Console, top: int = 10) -> None:
    """The default terminal view."""
    console.print(Text(f"A: {c.a['path']} ({c.a['source']})\nB: {c.b['path']} ({c.b['source']})"))
    diff = Table(title="Factors that differ", title_justify="left")
    for col in ("task", "factor", "field", "A", "B"):
        diff.add_column(col)
    for f in c.differing():
        diff.add_row(f.task, f.group, f.field, _short(f.a), _short(f.b))
    if not c.differing():
        diff.add_row("", "(none recorded)", "", "", "")
    unknown = sorted({f"{f.group}.{f.field}" for f in c.factors if f.status == "unknown"})
    same = len({(f.group, f.field) for f in c.factors if f.status == "same"})
    scores = Table(title="Scores (points)", title_justify="left")
    for h in SCORE_HEAD:
        scores.add_column(h, justify="left" if h in ("task", "metric", "method", "verdict", "flips") else "right")
    for r in c.scores:
        scores.add_row(*_score_cells(r))
    parts: list[Any] = [diff, Text(f"{same} factor fields are the same; not recorded by one run (unknown): "
                                   f"{', '.join(unknown) or 'none'}"), scores]
    parts += [Text(line) for line in agreement_lines(c)]
    if c.flips:
        ft = Table(title=f"Flipped docs (top {top} by margin; all in --format json)", title_justify="left")
        for h in ("task", "metric", "doc_id", "direction", "target", "A pred", "B pred", "A margin", "B margin"):
            ft.add_column(h)
        for f in top_flips(c, top):
            ft.add_row(f.task, f.metric, str(f.doc_id), f.direction + (" (near-tie)" if f.near_tie else ""),
                       _short(f.target, 20), _short(f.a_prediction, 20), _short(f.b_prediction, 20),
                       "" if f.a_margin is None else f"{f.a_margin:.3f}", "" if f.b_margin is None else f"{f.b_margin:.3f}")
        parts.append(ft)
    for n in c.notes:
        parts.append(Text("note: " + n))
    console.print(Group(*parts))


def top_flips(c: Comparison, top: int):
    """The ``top`` flips with the largest margins (a flip both runs were sure about comes first)."""
    return sorted(c.flips, key=lambda f: -min(f.a_margin or 0.0, f.b_margin or 0.0))[:top]


def render_markdown(c: Comparison, top: int = 10) -> str:
    """GitHub-flavoured Markdown: factor table, score table, flipped docs, notes."""
    out = [f"**A**: `{md_escape(c.a['path'])}` ({md_escape(c.a['source'])})  ",
           f"**B**: `{md_escape(c.b['path'])}` ({md_escape(c.b['source'])})", "", "### Factors that differ", "",
           "| task | factor | field | A | B |", "|---|---|---|---|---|"]
    for f in c.differing():
        out.append(f"| {md_escape(f.task)} | {f.group} | {md_escape(f.field)} | {md_escape(_short(f.a))} | "
                   f"{md_escape(_short(f.b))} |")
    unknown = sorted({f"{f.group}.{f.field}" for f in c.factors if f.status == "unknown"})
    out += ["", f"Not recorded by one of the runs (unknown): {md_escape(', '.join(unknown) or 'none')}.", "",
            "### Scores (points)", "", "| " + " | ".join(SCORE_HEAD) + " |", "|" + "---|" * len(SCORE_HEAD)]
    for r in c.scores:
        out.append("| " + " | ".join(md_escape(x) for x in _score_cells(r)) + " |")
    out += [""] + [md_escape(line) + "  " for line in agreement_lines(c)]
    if c.flips:
        out += ["", f"### Flipped docs (top {top} by margin)", "",
                "| task | metric | doc_id | direction | target | A | B | near-tie |", "|---|---|---|---|---|---|---|---|"]
        for f in top_flips(c, top):
            out.append(f"| {md_escape(f.task)} | {f.metric} | {f.doc_id} | {f.direction} | {md_escape(_short(f.target, 20))} "
                       f"| {md_escape(_short(f.a_prediction, 20))} | {md_escape(_short(f.b_prediction, 20))} | "
                       f"{'yes' if f.near_tie else ''} |")
    out += [""] + [f"> {md_escape(n)}" for n in c.notes]
    return "\n".join(out).rstrip() + "\n"


def render_latex(c: Comparison, top: int = 10) -> str:
    """A LaTeX fragment with booktabs tables (needs ``\\usepackage{booktabs}``)."""
    e = latex_escape
    lines = [r"% repaudit compare: " + e(c.a["path"]) + " vs " + e(c.b["path"]),
             r"\begin{table}[t]", r"\centering", r"\small",
             r"\caption{Factors that differ between run A (" + e(c.a["source"]) + ") and run B (" + e(c.b["source"]) + ")}",
             r"\begin{tabular}{llll}", r"\toprule", r"factor & field & A & B \\", r"\midrule"]
    for f in c.differing():
        lines.append(f"{e(f.group)} & {e(f.field)} & {e(_short(f.a, 32))} & {e(_short(f.b, 32))} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
              r"\begin{table}[t]", r"\centering", r"\small",
              r"\caption{Scores in points; $\Delta$ = B $-$ A with a paired 95\,\% interval}",
              r"\begin{tabular}{llrrrlrl}", r"\toprule",
              r"task & metric & A & B & $\Delta$ & 95\,\% CI & McNemar $p$ & verdict \\", r"\midrule"]
    for r in c.scores:
        lines.append(f"{e(r.task)} & {e(r.metric)} & {100 * r.a:.2f} & {100 * r.b:.2f} & {e(_pct(r.delta))} & "
                     f"{e(_ci(r))} & {e(_p(r.mcnemar_p))} & {e(r.verdict)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def render_json(c: Comparison) -> str:
    """The complete Comparison (every factor row, every flip) as JSON."""
    return c.model_dump_json(indent=1)
