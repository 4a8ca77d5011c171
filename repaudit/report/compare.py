"""Render a Comparison for the terminal, as Markdown or as JSON (LaTeX: :mod:`repaudit.report.compare_latex`).

The headline comes first in every format. Every string that comes from a run file (task, metric and
factor names, values, targets, predictions, notes) goes through the escaper of its output language
(:mod:`repaudit.escape`); numbers formatted here are ours. The terminal score table is laid out here
(not by a table widget) so that no cell is ever cut: at a narrow width a metric goes on its own line.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from repaudit.audit.compare import Comparison
from repaudit.escape import md, md_code, one_line, rich_text
from repaudit.report.compare_text import (
    ARROW,
    ScoreBlock,
    agreement_lines,
    equivalence_notes,
    factor_lines,
    headline,
    na_fields,
    numeric_columns,
    run_lines,
    score_blocks,
    score_columns,
    scores_caption,
    task_lines,
    unknown_fields,
)
from repaudit.report.diagnostics import DIAG_HEAD, diagnostic_cells, mechanism_line
from repaudit.report.flipview import FLIP_HEAD, MARGIN_LEGEND, flip_cells, flip_groups, flip_reasons
from repaudit.report.glossary import plural
from repaudit.report.power import POWER_CAPTION, power_lines
from repaudit.report.values import short

__all__ = ["render_json", "render_markdown", "render_rich", "short", "layout_scores"]

NO_ROWS = "No score row: no shared task has a metric reported by both runs (the notes below list each side's)."
_STYLE = {"worse": "bold red", "better": "bold green", "up": "bold yellow", "down": "bold yellow"}


#: the columns of a stacked row's first line (the rest go on its second line, under their own header)
_FIRST_LINE = ("metric", "unit", "A", "B", "Δ", "verdict")


def layout_scores(blocks: list[ScoreBlock], width: int, head: tuple[str, ...]) -> list[Text]:
    """The score table (columns ``head``, :func:`~repaudit.report.compare_text.score_columns`) as lines of at most
    ``width`` characters where that is possible without cutting a cell, metrics indented under their task: one line
    per metric where every column fits (two spaces between columns, else one); otherwise each metric *stacked* on
    two lines — metric, unit, A, B, Δ and the verdict, then the interval, p, flips and MDE — under a two-line header,
    and a metric name too long even for that on a line of its own above its numbers."""
    rows = [r for b in blocks for r in b.rows]
    widths = [max([len(head[i])] + [len(r[i]) + (2 if i == 0 else 0) for r in rows]) for i in range(len(head))]
    for gap in (2, 1):
        if sum(widths) + gap * (len(head) - 1) <= width:
            return _lines(blocks, [list(range(len(head)))], head, widths, gap, False)
    first = [i for i, h in enumerate(head) if h in _FIRST_LINE]
    second = [i for i in range(len(head)) if i not in first]
    alone = sum(widths[i] for i in first) + 2 * (len(first) - 1) > width
    if alone:
        widths[0] = 2
    return _lines(blocks, [first, second], head, widths, 2, alone)


def _lines(blocks: list[ScoreBlock], groups: list[list[int]], head: tuple[str, ...], widths: list[int], gap: int,
           alone: bool) -> list[Text]:
    """The table's lines: a header line and a line per metric for each group of columns (``groups``: one group, or
    two for a stacked layout); ``alone``: each metric name on its own line first."""
    numeric = numeric_columns(head)

    def cell(i: int, s: str) -> str:
        return s.rjust(widths[i]) if i in numeric else s.ljust(widths[i])

    def line(cols: list[int], cells: list[str], style: str = "") -> Text | None:
        lead = "    " if cols[0] else ""  # a stacked row's second line sits under its metric
        texts = [cell(i, c) for i, c in zip(cols, cells)]
        if not any(c.strip() for c in cells):
            return None
        if head[cols[-1]] != "verdict":
            return Text(lead + (" " * gap).join(texts).rstrip(), style=style)
        t = Text(lead + (" " * gap).join(texts[:-1]) + " " * gap, style=style)
        t.append(cells[-1], style=style or _STYLE.get(cells[-1].split(" [")[0], ""))
        return t

    out: list[Text | None] = [Text("metric", style="bold")] if alone else []
    out += [line(g, [("" if alone else "metric") if i == 0 else head[i] for i in g], "bold") for g in groups]
    for b in blocks:
        out.append(Text(b.task + b.info, style="bold"))
        for r in b.rows:
            if alone:
                out.append(Text("  " + r[0]))
            out += [line(g, [("" if alone else "  " + r[0]) if i == 0 else r[i] for i in g]) for g in groups]
    return [t for t in out if t is not None]


def _section(console: Console, title: str) -> None:
    console.print(Text(title, style="bold underline"))


def _rich_factors(c: Comparison, console: Console) -> None:
    """The terminal's factor section: differing factors, spellings judged one setting, settings that apply to one
    run only, the task sets."""
    _section(console, "Factors that differ")
    lines = factor_lines(c)
    for f in lines:
        console.print(Text(one_line(f"  {f.scope + ' · ' if f.scope else ''}{f.label}: {f.a} {ARROW} {f.b}")))
    if not lines:
        console.print(Text("  (none recorded)"))
    for n in equivalence_notes(c):
        console.print(Text(one_line(f"  same, written differently: {n}")))
    na = na_fields(c)
    if na:
        console.print(Text(one_line("  applying to one run only (not a difference): " + "; ".join(na))))
    for line in task_lines(c):
        console.print(Text(one_line(line)))


def render_rich(c: Comparison, console: Console, top: int = 10) -> None:
    """The terminal view: headline first, then factors, tasks, scores with footnotes, docs, diagnostics,
    flipped docs, notes. Every string is shown literally (:class:`rich.text.Text`, never markup)."""
    head = headline(c)
    console.print(Text(one_line(head[0]), style="bold"))
    for line in head[1:] + run_lines(c):
        console.print(Text(one_line(line)))
    for w in c.warnings:
        console.print(Text(one_line("WARNING: " + w), style="bold red"))
    console.print()
    _rich_factors(c, console)
    console.print()
    _section(console, "Scores")
    console.print(Text(scores_caption(c)))
    blocks, footnotes = score_blocks(c)
    for text in layout_scores(blocks, console.width, score_columns(c)) if blocks else [Text(NO_ROWS)]:
        console.print(text)
    for i, n in enumerate(footnotes, 1):
        console.print(Text(one_line(f"[{i}] {n}")))
    if lines := power_lines(c.scores):
        console.print(Text("What each paired row can detect: " + POWER_CAPTION))
        for line in lines:
            console.print(Text(one_line("  " + line)))
    for line in agreement_lines(c):
        console.print(Text(one_line(line)))
    if c.diagnostics:
        dt = Table(title="Diagnostics", title_justify="left")
        for h in DIAG_HEAD:
            dt.add_column(h)
        for r in c.diagnostics:
            dt.add_row(*(rich_text(x) for x in diagnostic_cells(r)))
        console.print(dt)
    for m in c.mechanisms:
        console.print(Text(one_line(mechanism_line(m))))
    groups = flip_groups(c, top)
    for task, metric, flips, total in groups:
        # a title is rendered as markup unless it is a Text: the task and metric names come from a file
        ft = Table(title=Text(one_line(f"Flipped docs · {task} {metric}: {plural(total, 'doc')}"
                                       + (f" (top {len(flips)} by margin; all in --format json)" if total > len(flips)
                                          else "") + " · ↓ right → wrong, ↑ wrong → right")), title_justify="left")
        for h in FLIP_HEAD:
            ft.add_column(h, no_wrap=h in ("A margin", "B margin"))
        for f in flips:
            ft.add_row(*(Text(one_line(x)) for x in flip_cells(f)))
        console.print(ft)
        for why in flip_reasons(flips):
            console.print(Text(one_line(why)))
    if groups:
        console.print(Text(one_line(MARGIN_LEGEND)))
    for n in c.notes:
        console.print(Text(one_line("note: " + n)))
    unknown = unknown_fields(c)
    if unknown:
        console.print(Text(one_line(f"Not recorded by one or both runs ({len(unknown)} fields, cannot be told): "
                                    + ", ".join(unknown))))


def render_markdown(c: Comparison, top: int = 10) -> str:
    """GitHub-flavoured Markdown: headline, runs, factor table, score table with footnotes, task sets,
    doc agreement, diagnostics, flipped docs, notes."""
    head = headline(c)
    out = [f"**{md(head[0])}**", ""] + [md(x) + "  " for x in head[1:]] + [""]
    out += [f"- {md(x)}" for x in run_lines(c)] + [""]
    out += [f"> **Warning:** {md(w)}\n" for w in c.warnings]
    out += ["### Factors that differ", "", "| scope | factor | A | B |", "|---|---|---|---|"]
    for f in factor_lines(c):
        out.append(f"| {md(f.scope or 'all tasks', False)} | {md(f.label, False)} | {md_code(f.a)} | {md_code(f.b)} |")
    if not c.differing():
        out.append("| | (none recorded) | | |")
    out += [""] + [f"- Same, written differently: {md(n)}" for n in equivalence_notes(c)]
    if na_fields(c):
        out.append("- Applying to one run only (not a difference): " + md("; ".join(na_fields(c))))
    out += [f"- {md(line)}" for line in task_lines(c)]
    blocks, footnotes = score_blocks(c)
    out += ["", "### Scores", "", md(scores_caption(c)), "",
            "| task | " + " | ".join(score_columns(c)) + " |",
            "|---|---|---|" + "---:|" * (len(score_columns(c)) - 3) + "---|"]
    for b in blocks:
        for r in b.rows:
            # the metric comes from a file; unit, numbers and verdict words are repaudit's own
            out.append(f"| {md(b.task, False)} | {md(r[0], False)} | " + " | ".join(r[1:]) + " |")
    if not blocks:
        out[-2:] = [md(NO_ROWS)]
    out += [""] + [f"{i}. {md(n, False)}" for i, n in enumerate(footnotes, 1)]
    if lines := power_lines(c.scores):
        out += ["", "#### What each paired row can detect", "", md(POWER_CAPTION), ""] + [f"- {md(x)}" for x in lines]
    out += [""] + [md(line) + "  " for line in agreement_lines(c)]
    if c.diagnostics:
        out += ["", "### Diagnostics", "", "| " + " | ".join(DIAG_HEAD) + " |", "|---|---|---|---|"]
        out += ["| " + " | ".join(md(x, False) for x in diagnostic_cells(r)) + " |" for r in c.diagnostics]
    if c.mechanisms:
        out += [""] + [f"- {md(mechanism_line(m))}" for m in c.mechanisms]
    groups = flip_groups(c, top)
    for task, metric, flips, total in groups:
        shown = f" (top {len(flips)} by margin; all in --format json)" if total > len(flips) else ""
        out += ["", f"### Flipped docs · {md(task, False)} {md(metric, False)}: {plural(total, 'doc')}{shown}", "",
                "| doc | direction | target | A pred | B pred | A margin (nats) | B margin (nats) | near-tie |",
                "|---|---|---|---|---|---:|---:|---|"]
        for fd in flips:
            doc, _, target, pa, pb, ma, mb = flip_cells(fd, 20)
            out.append(f"| {md(doc, False)} | {fd.direction.replace('_', ' ')} | {md(target, False)} | "
                       f"{md(pa, False)} | {md(pb, False)} | {ma} | {mb} | {'yes' if fd.near_tie else ''} |")
        out += [""] + [f"- {md(why)}" for why in flip_reasons(flips)]
    if groups:
        out += ["", md(MARGIN_LEGEND)]
    out += [""] + [f"> {md(n)}" for n in c.notes]
    unknown = unknown_fields(c)
    if unknown:
        out += ["", md(f"Not recorded by one or both runs ({len(unknown)} fields, cannot be told): "
                       + ", ".join(unknown))]
    return "\n".join(out).rstrip() + "\n"


def render_json(c: Comparison) -> str:
    """The complete Comparison (every factor row, every flip) as JSON; non-finite numbers as ``null``."""
    return c.model_dump_json(indent=1)


def render_latex(c: Comparison, top: int = 10) -> str:
    """See :func:`repaudit.report.compare_latex.render_latex`."""
    from repaudit.report.compare_latex import render_latex as _render

    return _render(c, top)
