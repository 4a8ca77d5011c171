r"""A paper appendix from the run files (``repaudit appendix``): the evaluation setup, the scores with their
intervals, what the error bars are, and the comparison, attribution, noise and sweep tables — as LaTeX and as
Markdown with the same content.

LaTeX: a ``\section`` (or, with ``document``, a whole article) that needs
``\usepackage{booktabs,longtable,array,siunitx}``; the scores sit in ``siunitx`` ``S`` columns (aligned on the
decimal point, the interval's two ends in columns of their own, so an asymmetric interval reads as one); every table
has a ``\label`` of its own (``tab:ra-setup``, ``tab:ra-scores``, ``tab:rc-<A>-vs-<B>-…``, ``tab:ra-attribution-1``,
…), so the file can be ``\input`` beside other reports. Every string from a file is escaped for its language.
"""

from __future__ import annotations

import re

from repaudit.audit.appendix import Appendix, ScoreLine
from repaudit.audit.series import SeriesReport
from repaudit.audit.stats import level
from repaudit.escape import latex as e
from repaudit.escape import md
from repaudit.report.compare_latex import _col, _longtable, _par, brk, label_stem
from repaudit.report.error_bars import error_bar_items
from repaudit.report.setup import SetupRow, setup_rows

PACKAGES = r"\usepackage{booktabs,longtable,array,siunitx}"
PREAMBLE = [r"\documentclass[10pt]{article}", r"\usepackage[T1]{fontenc}", r"\usepackage[margin=2cm]{geometry}",
            PACKAGES, r"\usepackage{flafter} % floats never before the text that introduces them",
            r"\begin{document}"]
DAGGER = "†"


def _decimals(x: float, unit: str) -> int:
    """Points 2 decimals, other units 4 significant digits (2 decimals at least, 6 at most)."""
    if unit in ("pts", "%"):
        return 2
    import math

    return 2 if x == 0 else max(2, min(6, 3 - math.floor(math.log10(abs(x)))))


def _num(x: float | None, d: int) -> str:
    return "" if x is None else f"{x:.{d}f}"


def score_cells(s: ScoreLine) -> list[str]:
    """(run, task, metric, unit, score, low, high, docs, interval) of one score, numbers as plain ASCII; the two ends
    printed with as many decimals as they need to differ."""
    d = _decimals(max(abs(s.score), abs(s.ci_low or 0), abs(s.ci_high or 0)), s.unit)
    while s.ci_low is not None and s.ci_low != s.ci_high and _num(s.ci_low, d) == _num(s.ci_high, d) and d < 10:
        d += 1
    arrow = {"higher": "↑", "lower": "↓"}.get(s.direction, "?")
    return [s.run, s.task, s.metric, f"{s.unit}{arrow}", _num(s.score, d), _num(s.ci_low, d), _num(s.ci_high, d),
            "" if s.n_docs is None else str(s.n_docs), s.method]


def _refs(a: Appendix, text: str, latex: bool) -> str:
    """``@@key@@`` → a table reference (LaTeX ``Table~\\ref{…}``, Markdown the table's name)."""
    labels = {"setup": ("tab:ra-setup", "the setup table"), "scores": ("tab:ra-scores", "the scores table")}
    for i, c in enumerate(a.comparisons, 1):
        labels[f"compare-{i}"] = (f"tab:{label_stem(c)}-scores", f"comparison {i}")
    for kind, items in (("attribution", a.attributions), ("variance", a.variances), ("sweep", a.sweeps)):
        for i, _ in enumerate(items, 1):
            labels[f"{kind}-{i}"] = (f"tab:ra-{kind}-{i}", f"the {kind} table {i}")
    return re.sub(r"@@([a-z0-9-]+)@@", lambda m: (rf"Table~\ref{{{labels[m.group(1)][0]}}}" if latex
                                                   else labels[m.group(1)][1]), text)


def _marks(rows: list[SetupRow]) -> tuple[dict[tuple[int, int], int], list[str]]:
    """Footnote numbers of the cells with a provenance note, and the notes (one number per distinct note)."""
    notes: list[str] = []
    marks = {}
    for i, row in enumerate(rows):
        for j, c in enumerate(row.cells):
            if c.note:
                if c.note not in notes:
                    notes.append(c.note)
                marks[(i, j)] = notes.index(c.note) + 1
    return marks, notes


def _setup_latex(a: Appendix) -> list[str]:
    rows = setup_rows(a.runs)
    marks, notes = _marks(rows)
    k = len(a.runs)
    first = 0.24 if k > 1 else 0.3
    each = (1 - first) / k
    body = []
    for i, row in enumerate(rows):
        name = brk(row.setting) + ("" if row.same or k == 1 else r"\textsuperscript{\dag}")
        cells = [brk(c.text) + (rf"\textsuperscript{{{marks[(i, j)]}}}" if (i, j) in marks else "")
                 for j, c in enumerate(row.cells)]
        if row.same and k > 1:
            span = rf">{{\centering\arraybackslash}}p{{\dimexpr {each * k:.2f}\linewidth-2\tabcolsep\relax}}"
            cells = [rf"\multicolumn{{{k}}}{{{span}}}{{{cells[0]}}}"]
        body.append(name + " & " + " & ".join(cells) + r" \\")
    legend = (("A value shown once spans every run; " + DAGGER + " marks a setting that differs between runs. ")
              if k > 1 else "")
    cap = brk(f"Evaluation setup: every setting the run files record. {legend}'not recorded': the file does not "
              "say (never guessed).".replace(DAGGER, "DAGGERMARK"), prose=True).replace("DAGGERMARK", r"\dag{}")
    out = _longtable([(first, "l")] + [(each, "l")] * k, cap, "tab:ra-setup", ["setting", *(brk(n) for n in a.names)],
                     body)
    if notes:
        out += [r"{\footnotesize", *(_par(f"[{n}] {t}") for n, t in enumerate(notes, 1)), "}", ""]
    return out


def _s_format(values: list[str]) -> str:
    """siunitx's table-format of a column of plain decimal numbers: sign, integer and decimal digits."""
    nums = [v for v in values if v]
    if not nums:
        return "1.2"
    ints = max(len(v.lstrip("-").split(".")[0]) for v in nums)
    decs = max((len(v.split(".")[1]) if "." in v else 0) for v in nums)
    return ("-" if any(v.startswith("-") for v in nums) else "") + f"{ints}.{decs}"


def _scores_latex(a: Appendix) -> list[str]:
    rows = [score_cells(s) for s in a.scores]
    lv = level(a.alpha)
    fmts = [_s_format([r[i] for r in rows]) for i in (4, 5, 6)]
    spec = ("@{}" + _col(0.13) + _col(0.15) + _col(0.12) + "l" + "".join(f"S[table-format={f}]" for f in fmts)
            + "r" + _col(0.16) + "@{}")
    head = (["run", "task", "metric", "unit"] + [f"{{{h}}}" for h in ("score", f"{lv}\\,\\% low", "high")]
            + ["docs", "interval"])
    cap = (brk(f"Scores of every run with their two-sided {lv} % confidence intervals (low, high: the interval's "
                f"ends; points for proportions, ↑ higher is better, ↓ lower is better). How each was computed and "
                f"what it captures: see the text.", prose=True))
    body = [" & ".join([brk(r[0]), brk(r[1]), brk(r[2]), e(r[3]), *r[4:7], r[7], brk(r[8])]) + r" \\" for r in rows]
    header = " & ".join(head) + r" \\"
    return [r"{\footnotesize\setlength{\tabcolsep}{3pt}", r"\begin{longtable}{" + spec + "}",
            r"\caption{" + cap + r"}\label{tab:ra-scores}\\", r"\toprule", header, r"\midrule", r"\endfirsthead",
            r"\toprule", header, r"\midrule", r"\endhead", r"\bottomrule", r"\endlastfoot", *body,
            r"\end{longtable}}", ""]


def render_latex(a: Appendix, title: str = "Evaluation details", document: bool = False) -> str:
    """The appendix as LaTeX: a section (``document``: a whole article) with the setup, the scores, what the error
    bars are, and every comparison, attribution, noise and sweep table given (headings numbered, the names of what
    they hold in the tables' own captions: a long run name cannot run into the margin)."""
    from repaudit.report.audit import attribution_latex, sweep_latex
    from repaudit.report.compare_latex import render_latex as compare_latex
    from repaudit.report.series import latex as series_latex
    from repaudit.report.variance import variance_latex

    lines = [r"% repaudit appendix: " + e(", ".join(a.names)), r"% needs " + PACKAGES,
             r"\section{" + brk(title, prose=True) + r"}\label{sec:ra-appendix}", _par(_runs_line(a)), "",
             r"\subsection*{Evaluation setup}", *_setup_latex(a), r"\subsection*{Scores}", *_scores_latex(a),
             r"\subsection*{What the error bars are}"]
    lines += [_ref_par(a, lead, text) for lead, text in error_bar_items(a)]
    for i, c in enumerate(a.comparisons, 1):
        lines += ["", rf"\subsection*{{Comparison {i}}}",
                  compare_latex(c)]
    for i, r in enumerate(a.attributions, 1):
        lines += ["", rf"\subsection*{{Attribution {i}}}",
                  attribution_latex(r, f"tab:ra-attribution-{i}")]
    for i, v in enumerate(a.variances, 1):
        lines += ["", rf"\subsection*{{Noise {i}}}", _par(_variance_title(v)),
                  series_latex(v, f"tab:ra-variance-{i}") if isinstance(v, SeriesReport)
                  else variance_latex(v, f"tab:ra-variance-{i}")]
    for i, s in enumerate(a.sweeps, 1):
        lines += ["", rf"\subsection*{{Sweep {i}}}",
                  sweep_latex(s, f"tab:ra-sweep-{i}")]
    text = unique_labels("\n".join(lines).rstrip() + "\n")
    return "\n".join(PREAMBLE) + "\n" + text + "\\end{document}\n" if document else text


def _ref_par(a: Appendix, lead: str, text: str) -> str:
    """A paragraph whose ``@@key@@`` become ``Table~\\ref{…}`` after the text is escaped."""
    marker: dict[str, str] = {}

    def keep(m: re.Match) -> str:
        marker[f"RAREF{len(marker)}X"] = m.group(0)
        return f"RAREF{len(marker) - 1}X"

    body = _par(re.sub(r"@@[a-z0-9-]+@@", keep, text), lead)
    for k, v in marker.items():
        body = body.replace(k, _refs(a, v, True))
    return body


def _variance_title(v) -> str:
    return f"series across {v.across}s" if isinstance(v, SeriesReport) else f"{v.task}, {v.model}"


def _runs_line(a: Appendix) -> str:
    return "Runs: " + "; ".join(f"{n} = {r.path.rsplit('/', 1)[-1]} ({r.source})" for n, r in zip(a.names, a.runs)) \
        + "."


def unique_labels(tex: str) -> str:
    """Every ``\\label`` once: a repeated one gets ``-2``, ``-3``, … (references keep pointing at the first)."""
    seen: dict[str, int] = {}

    def one(m: re.Match) -> str:
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        return m.group(0) if seen[name] == 1 else r"\label{" + f"{name}-{seen[name]}" + "}"

    return re.sub(r"\\label\{([^}]*)\}", one, tex)


def _setup_markdown(a: Appendix) -> list[str]:
    rows = setup_rows(a.runs)
    marks, notes = _marks(rows)
    k = len(a.runs)
    out = ["| setting | " + " | ".join(md(n, False) for n in a.names) + " |", "|---" * (k + 1) + "|"]
    for i, row in enumerate(rows):
        cells = [md(c.text, False) + (f" [{marks[(i, j)]}]" if (i, j) in marks else "")
                 for j, c in enumerate(row.cells)]
        if row.same and k > 1:
            cells = [cells[0] + " (all runs)"] + ["″"] * (k - 1)
        mark = "" if row.same or k == 1 else " " + DAGGER
        out.append(f"| {md(row.setting, False)}{mark} | " + " | ".join(cells) + " |")
    legend = f"{DAGGER}: differs between runs; ″: the same as the first run. " if k > 1 else ""
    out += ["", md(legend + "'not recorded': the file does not say (never guessed).")]
    out += [f"{n}. {md(t, False)}" for n, t in enumerate(notes, 1)]
    return out


def render_markdown(a: Appendix, title: str = "Evaluation details") -> str:
    """The same content as :func:`render_latex`, as Markdown."""
    from repaudit.report.audit import attribution_markdown, sweep_markdown
    from repaudit.report.compare import render_markdown as compare_md
    from repaudit.report.series import markdown as series_md
    from repaudit.report.variance import variance_markdown

    lv = level(a.alpha)
    out = [f"## {md(title)}", "", md(_runs_line(a)), "", "### Evaluation setup", "", *_setup_markdown(a), "",
           "### Scores", "", md(f"Two-sided {lv} % confidence intervals; points for proportions."), "",
           f"| run | task | metric | unit | score | {lv} % low | high | docs | interval |",
           "|---|---|---|---|---:|---:|---:|---:|---|"]
    out += ["| " + " | ".join([md(c, False) for c in r[:3]] + r[3:8] + [r[8]]) + " |"
            for r in (score_cells(s) for s in a.scores)]
    out += ["", "### What the error bars are", ""]
    out += [f"- **{lead}** {md(_refs(a, text, False))}" for lead, text in error_bar_items(a)]
    for i, c in enumerate(a.comparisons, 1):
        out += ["", f"### Comparison {i}: {md(c.a.get('name', ''))} vs {md(c.b.get('name', ''))}", "", compare_md(c)]
    for i, r in enumerate(a.attributions, 1):
        out += ["", f"### Attribution {i}: {md(r.task)} {md(r.metric)}", "", attribution_markdown(r)]
    for i, v in enumerate(a.variances, 1):
        out += ["", f"### Noise {i}: {md(_variance_title(v))}", "",
                series_md(v) if isinstance(v, SeriesReport) else variance_markdown(v)]
    for i, s in enumerate(a.sweeps, 1):
        out += ["", f"### Sweep {i}: {md(s.factor)} on {md(s.task)}", "", sweep_markdown(s)]
    return "\n".join(out).rstrip() + "\n"
