r"""A comparison as a LaTeX fragment for a paper appendix: pure ASCII, fits the text width.

Needs ``\usepackage{booktabs,longtable,array}`` (all in texlive-latex-base/recommended). Tables are
``longtable`` with ``p{}`` columns whose widths sum to ``\linewidth``, so they break across pages and
never run into the margin; names get break points after ``_ , - / .`` (a dot only before a letter, so
``0.1`` stays whole) and runs of more than 24 characters without one (hashes) every 12. Every table has
a caption naming the runs and a ``\label`` derived from the run labels (``tab:rc-<A>-vs-<B>-scores``,
``-factors``, ``-diagnostics``), so two reports in one appendix do not collide.
"""

from __future__ import annotations

import re

from repaudit.audit.compare import Comparison
from repaudit.escape import latex
from repaudit.report.compare_text import (
    equivalence_notes,
    factor_lines,
    headline,
    na_fields,
    run_lines,
    score_blocks,
    score_columns,
    scores_caption,
    task_lines,
    unknown_fields,
)
from repaudit.report.diagnostics import DIAG_HEAD, diagnostic_cells, mechanism_line
from repaudit.report.flipview import MARGIN_LEGEND, flip_cells, flip_groups, flip_reasons
from repaudit.report.glossary import plural
from repaudit.report.power import POWER_CAPTION, power_lines

_ZWSP = "\u200b"


def _breaks(token: str) -> str:
    token = re.sub(r"([_,/\-]|\.(?=[A-Za-z]))", r"\1" + _ZWSP, token)
    # a long unbroken run (a hash) breaks every 12 characters; a word of 24 or fewer never does
    return re.sub(r"[^" + _ZWSP + r"]{25,}", lambda m: re.sub(r"(.{12})(?=.)", r"\1" + _ZWSP, m.group()), token)


def brk(text: str, prose: bool = False) -> str:
    """``text`` escaped for LaTeX, with line-break points after ``_ , - /`` and inside long unbroken runs:
    in every word of a table cell, or (``prose``) only in words over 20 characters."""
    s = re.sub(r"\S+", lambda m: _breaks(m.group()) if not prose or len(m.group()) > 20 else m.group(), str(text))
    return latex(s).replace(r"\texttt{U+200B}", r"\allowbreak{}")


#: a character of \footnotesize Computer Modern as a share of an article's \linewidth (≈ 4.4 pt of 345 pt),
#: with a little to spare; and the padding of one column (2 × \tabcolsep = 6 pt)
_CHAR, _PAD = 0.0135, 0.018


def _widths(rows: list[list[str]], head: tuple[str, ...], flexible: tuple[int, ...]) -> list[float]:
    """Column widths (shares of ``\\linewidth``, summing to 1): a fixed column as wide as its longest cell (numbers
    never wrap), the ``flexible`` ones sharing what is left in proportion to their longest cell (they wrap)."""
    longest = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    fixed = {i: _CHAR * n + _PAD for i, n in enumerate(longest) if i not in flexible}
    left = max(1.0 - sum(fixed.values()), 0.12 * len(flexible))
    total = sum(longest[i] for i in flexible) or 1
    widths = [fixed.get(i, left * longest[i] / total) for i in range(len(head))]
    scale = 1.0 / sum(widths)
    return [w * scale for w in widths]


def _col(frac: float, align: str = "l") -> str:
    ragged = {"l": r"\raggedright", "r": r"\raggedleft"}[align]
    return rf">{{{ragged}\arraybackslash}}p{{\dimexpr {frac:.2f}\linewidth-2\tabcolsep\relax}}"


def _longtable(cols: list[tuple[float, str]], caption: str, label: str, head: list[str], body: list[str]) -> list[str]:
    spec = "@{}" + "".join(_col(f, a) for f, a in cols) + "@{}"
    header = " & ".join(head) + r" \\"
    return [r"{\footnotesize\setlength{\tabcolsep}{3pt}", r"\begin{longtable}{" + spec + "}",
            r"\caption{" + caption + r"}\label{" + label + r"}\\",
            r"\toprule", header, r"\midrule", r"\endfirsthead",
            r"\toprule", header, r"\midrule", r"\endhead",
            r"\bottomrule", r"\endlastfoot", *body, r"\end{longtable}}", ""]


def _par(text: str, bold: str = "") -> str:
    return (r"{\raggedright\noindent " + (r"\textbf{" + latex(bold) + "} " if bold else "") + brk(text, prose=True)
            + r"\par}")


def _slug(text: str, n: int = 24) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:n].strip("-") or "run"


def label_stem(c: Comparison) -> str:
    """``rc-<A>-vs-<B>`` from the run labels (ASCII letters, digits and ``-``; a label cannot carry anything
    else), so that the tables of two comparisons in one document get distinct ``\\label`` s."""
    return f"rc-{_slug(c.a.get('name', 'a'))}-vs-{_slug(c.b.get('name', 'b'))}"


def _small(paragraphs: list[str]) -> list[str]:
    """``paragraphs`` in ``\\footnotesize``; nothing at all when there are none."""
    return [r"{\footnotesize", *paragraphs, "}", ""] if paragraphs else []


def _flip_tables(c: Comparison, top: int) -> list[str]:
    """One table per task×metric with flips (the top ``top`` by margin): each run's prediction and margin by the
    metric, "—" where a run's file cannot tell them, the reasons and the legend below."""
    lines: list[str] = []
    groups = flip_groups(c, top)
    for n, (task, metric, flips, total) in enumerate(groups, 1):
        shown = f" (top {len(flips)} by margin)" if total > len(flips) else ""
        rows = [" & ".join(brk(x) for x in (*flip_cells(f, 20), "yes" if f.near_tie else "")) + r" \\"
                for f in flips]
        lines += _longtable([(0.10, "l"), (0.07, "l"), (0.12, "l"), (0.17, "l"), (0.17, "l"), (0.11, "r"),
                             (0.11, "r"), (0.15, "l")],
                            # the runs are named in the scores table's caption: a second long caption of
                            # unbreakable names only leaves underfull lines
                            "Flipped docs of " + brk(f"{task} {metric} from run A to run B: {plural(total, 'doc')}"
                                                     f"{shown}"), f"tab:{label_stem(c)}-flips-{n}",
                            [latex(h) for h in ("doc", "", "target", "A pred", "B pred", "A margin (nats)",
                                                "B margin (nats)", "near-tie")], rows)
        lines += _small([_par(why) for why in flip_reasons(flips)])
    return lines + (_small([_par(MARGIN_LEGEND)]) if groups else [])


def render_latex(c: Comparison, top: int = 10) -> str:
    """The headline as text, then factor, score and diagnostics tables, footnotes, mechanisms and notes."""
    runs = f"run A ({c.a.get('name', '')}, {c.a['source']}) and run B ({c.b.get('name', '')}, {c.b['source']})"
    lead = headline(c)
    lines = [r"% repaudit compare: " + latex(f"A = {c.a.get('name', '')}, B = {c.b.get('name', '')}"),
             r"% needs \usepackage{booktabs,longtable,array}",
             _par(lead[0].removeprefix("Verdict: "), "Verdict."), *(_par(x) for x in lead[1:]),
             *(_par(x) for x in run_lines(c)), *(_par(w, "Warning:") for w in c.warnings), ""]
    factors = [" & ".join(brk(x) for x in (f.scope or "all tasks", f.label, f.a, f.b)) + r" \\"
               for f in factor_lines(c, 48)] or [r"\multicolumn{4}{@{}l}{(none recorded)} \\"]
    lines += _longtable([(0.18, "l"), (0.22, "l"), (0.30, "l"), (0.30, "l")],
                        "Factors that differ between " + brk(runs), f"tab:{label_stem(c)}-factors",
                        ["scope", "factor", "A", "B"], factors)
    lines += [_par("Same, written differently: " + n) for n in equivalence_notes(c)]
    if na_fields(c):
        lines.append(_par("Applying to one run only (not a difference): " + "; ".join(na_fields(c))))
    lines += [_par(t) for t in task_lines(c)]
    blocks, footnotes = score_blocks(c)
    head = score_columns(c)
    ncol = len(head)
    body = []
    for b in blocks:
        body.append(rf"\multicolumn{{{ncol}}}{{@{{}}p{{\dimexpr\linewidth\relax}}@{{}}}}{{\textbf{{" + brk(b.task) + "}"
                    + brk(b.info) + r"} \\")
        body += [" & ".join([r"\quad " + brk(r[0])] + [latex(x) for x in r[1:-1]] + [brk(r[-1])]) + r" \\"
                 for r in b.rows]  # numbers never break
    if not body:
        body = [rf"\multicolumn{{{ncol}}}{{@{{}}l}}{{" + latex("No score row: no metric is reported by both runs.")
                + r"} \\"]
    cells = [["\u2003" + r[0]] + r[1:] for b in blocks for r in b.rows]
    widths = _widths(cells, head, flexible=(0, ncol - 1))
    lines += _longtable(list(zip(widths, ["l", "l", *["r"] * (ncol - 3), "l"])),
                        "Scores of " + brk(runs), f"tab:{label_stem(c)}-scores", [latex(h) for h in head], body)
    # the legend is the table's note, not its caption: a List of Tables lists captions
    lines += _small([_par(scores_caption(c), "Note.")] + [_par(f"[{i}] {n}") for i, n in enumerate(footnotes, 1)])
    lines += _small([_par(POWER_CAPTION, "What each paired row can detect.")] + [_par(x) for x in power_lines(c.scores)]
                    if power_lines(c.scores) else [])
    if c.diagnostics:
        rows = [" & ".join(brk(x) for x in diagnostic_cells(r)) + r" \\" for r in c.diagnostics]
        lines += _longtable([(0.16, "l"), (0.28, "l"), (0.28, "l"), (0.28, "l")],
                            "Diagnostics of " + brk(runs), f"tab:{label_stem(c)}-diagnostics",
                            [latex(h) for h in DIAG_HEAD], rows)
    lines += [_par(mechanism_line(m)) for m in c.mechanisms]
    lines += _flip_tables(c, top)
    lines += _small([_par(n, "Note.") for n in c.notes])
    unknown = unknown_fields(c)
    if unknown:
        lines.append(_par(f"Not recorded by one or both runs ({len(unknown)} fields): " + ", ".join(unknown)))
    return "\n".join(lines).rstrip() + "\n"
