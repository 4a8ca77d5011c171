"""Render a series report (``repaudit variance FILE… --across``): the ranked table of its mode, what was measured,
the confounders, the names that contradict what a file records, repeated steps and what was left out — as
terminal rows, Markdown and LaTeX (``\\usepackage{booktabs,longtable,array}``).

Numbers carry their row's unit (``pts`` = percentage points, with 2 decimals; other units with 4 significant
digits); every string from a file (task, metric, model and file names, recorded values) goes through
:mod:`repaudit.escape` in the format it lands in.
"""

from __future__ import annotations

import os

from repaudit.audit.noise import split_sentence
from repaudit.audit.series import SeriesReport
from repaudit.audit.series_runs import by_value
from repaudit.audit.stats import level
from repaudit.escape import latex as e
from repaudit.escape import md
from repaudit.report.compare_latex import _longtable, _par, _widths, brk

HEADS = {
    "checkpoint": ("model", "task", "metric", "unit", "n", "tau-b (+ = improving)", "p", "first → last", "range",
                   "sd last k"),
    "seed": ("task", "metric", "unit", "n", "mean", "sd", "CI (t)", "min – max", "within-run SE", "sd / SE"),
    "model": ("task", "metric", "unit", "models", "final min – max", "signal (max − min)", "noise (sd)", "SNR"),
}
#: columns that hold numbers (right-aligned)
NUMERIC = {"n", "tau-b (+ = improving)", "p", "first → last", "range", "sd last k", "mean", "sd", "CI (t)",
           "min – max", "within-run SE", "sd / SE", "models", "final min – max", "signal (max − min)", "noise (sd)",
           "SNR"}


def head(r: SeriesReport) -> tuple[str, ...]:
    """The columns of the report's table (:data:`HEADS`), the seed interval's labelled with its level."""
    return tuple(f"{level(r.alpha)} % CI (t)" if h == "CI (t)" else h for h in HEADS[r.across])


def is_numeric(column: str) -> bool:
    """The column holds numbers (right-aligned)."""
    return column in NUMERIC or column.endswith("% CI (t)")


def num(x: float | None, unit: str, more: int = 0) -> str:
    """A score in its unit: points with 2 decimals, anything else with 4 significant digits (``more`` adds to
    either), the minus sign U+2212 as in compare; ``–`` if missing."""
    if x is None or x != x:
        return "–"
    text = f"{x:.{2 + more}f}" if unit == "pts" else f"{x:.{4 + more}g}"
    return "−" + text[1:] if text.startswith("-") else text


def span(lo: float, hi: float, unit: str) -> str:
    """``[lo, hi]`` in the unit's format, with as many more digits as it takes for two different ends to print
    differently (a clean series' interval must not read [4.263, 4.263])."""
    more = 0
    while lo != hi and num(lo, unit, more) == num(hi, unit, more) and more < 10:
        more += 1
    return f"[{num(lo, unit, more)}, {num(hi, unit, more)}]"


def short_names(r: SeriesReport) -> tuple[dict[str, str], str]:
    """Series (model) names as the tables show them, without the prefix they all share up to a ``/`` or ``-``
    (``EleutherAI/pythia-v1.1-160m`` → ``160m`` beside ``…-1b-deduped``; one model: without its organisation),
    and that prefix."""
    names = list(dict.fromkeys(s.series for s in r.runs))
    common = names[0] if len(names) == 1 else os.path.commonprefix(names)
    cut = max(common.rfind("/"), common.rfind("-") if len(names) > 1 else -1) + 1
    prefix = common[:cut] if all(len(n) > cut for n in names) else ""
    return {n: n[len(prefix):] for n in names}, prefix


def rows(r: SeriesReport) -> list[tuple[str, ...]]:
    """The mode's table, one row per (series ×) task × metric, in the report's ranking order (:data:`HEADS`); series
    named as :func:`short_names` shows them."""
    if r.across == "checkpoint":
        short = short_names(r)[0]
        return [_checkpoint_cells(x, short.get(x.series, x.series), r.last) for x in r.checkpoint]
    if r.across == "seed":
        return [_seed_cells(x) for x in r.seed]
    return [(x.task, x.metric, x.unit, str(x.n_models),
             f"{num(min(x.finals.values()), x.unit)} – {num(max(x.finals.values()), x.unit)}", num(x.signal, x.unit),
             num(x.noise, x.unit), "–" if x.snr is None else f"{x.snr:.2f}") for x in r.model]


def _checkpoint_cells(x, series: str, last: int) -> tuple[str, ...]:
    tau = "–" if x.kendall_tau is None else (f"{x.kendall_tau:+.3f}".replace("-", "−")
                                             + (" (raw)" if x.direction == "unknown" else ""))
    return (series, x.task, x.metric, x.unit, str(x.n_runs), tau,
            "–" if x.kendall_p is None else f"{x.kendall_p:.2g}", f"{num(x.first, x.unit)} → {num(x.last, x.unit)}",
            num(x.range, x.unit), num(x.sd_last, x.unit) + (f" (k={x.last_k})" if x.last_k < last else ""))


def _seed_cells(x) -> tuple[str, ...]:
    return (x.task, x.metric, x.unit, str(x.n_runs), num(x.mean, x.unit), num(x.sd, x.unit),
            span(x.ci[0], x.ci[1], x.unit) + (" (cut)" if x.cut else ""),
            f"{num(x.low, x.unit)} – {num(x.high, x.unit)}", num(x.within_se, x.unit),
            "–" if x.sd_over_se is None else f"{x.sd_over_se:.2f}")


def headline(r: SeriesReport, alpha: float = 0.05) -> str:
    """The report in one sentence: trends at p < α (per row, not adjusted), seed noise against sampling noise, or
    the highest and lowest signal-to-noise."""
    if r.across == "checkpoint":
        sig = [x for x in r.checkpoint if x.kendall_p is not None and x.kendall_p < alpha]
        # (a row with a p-value has its tau)
        up = sum(1 for x in sig if x.direction != "unknown" and x.kendall_tau is not None and x.kendall_tau > 0)
        down = sum(1 for x in sig if x.direction != "unknown" and x.kendall_tau is not None and x.kendall_tau < 0)
        unknown = len(sig) - up - down
        top = r.checkpoint[0]
        best = ("" if top.kendall_tau is None else f"; most monotone: {top.task} {top.metric} on {top.series} "
                f"(tau-b {top.kendall_tau:+.3f})".replace(" -", " −"))
        return (f"{len(r.checkpoint)} rows: {up} improve with training and {down} worsen at p < {alpha:g} (Kendall "
                f"tau-b per row, not adjusted for the {len(r.checkpoint)} rows)"
                + (f", {unknown} move with training in a direction of unknown meaning" if unknown else "")
                + f", {len(r.checkpoint) - len(sig)} show no trend at that level{best}.")
    if r.across == "seed":
        known = [x.sd_over_se for x in r.seed if x.sd_over_se is not None]
        over = sum(1 for v in known if v > 1)
        return (f"{len(r.seed)} rows over {len(r.runs)} runs as seeds: the seed standard deviation "
                f"exceeds the average within-run standard error in {over} of the {len(known)} rows that have one.")
    ranked = [x for x in r.model if x.snr is not None]
    if not ranked:
        return f"{len(r.model)} rows, none with a signal-to-noise ratio: {r.model[0].note if r.model else ''}."
    hi, lo = ranked[0], ranked[-1]
    return (f"{len(r.model)} rows across {hi.n_models} models: highest signal-to-noise {hi.task} {hi.metric} "
            f"(SNR {hi.snr:.2f}), lowest {lo.task} {lo.metric} (SNR {lo.snr:.2f})"
            + (f"; {len(r.model) - len(ranked)} rows without one." if len(ranked) < len(r.model) else "."))


def _last_k(r: SeriesReport) -> str:
    """The k of the ``sd last k`` column as the rows use it: ``k = 5``, or where a series has fewer checkpoints
    than ``--last`` the k the rows have (``k = 3``: every row; ``k = 3 to 5``: per row, as its cell says)."""
    ks = sorted({x.last_k for x in r.checkpoint}) or [r.last]
    if len(ks) == 1:
        return f"k = {ks[0]}" + (f" (--last {r.last}; each series has {ks[0]} checkpoints)" if ks[0] < r.last else "")
    return (f"k = {ks[0]} to {ks[-1]} (--last {r.last}, or a series' checkpoints where it has fewer: then '(k=N)' "
            "beside the row's sd)")


def summary(r: SeriesReport) -> str:
    """What was measured, on which runs, with the definitions' sources; one paragraph."""
    series = list(dict.fromkeys(s.series for s in r.runs))
    runs = f"{len(r.runs)} runs of {len(series)} model{'s' if len(series) != 1 else ''}"
    units = "Scores in each row's unit (pts = percentage points)."
    if r.across == "checkpoint":
        prefix = short_names(r)[1]
        shown = f" (model column without '{prefix}')" if prefix else ""
        return (f"{runs}{shown} across training checkpoints; {len(r.checkpoint)} series × task × metric rows, most "
                "monotone first (largest |tau-b|, either way). Kendall tau-b between step and score (Madaan et al. "
                "2024, arXiv 2406.10229), oriented so that + = improving (for a lower-is-better metric such as "
                "perplexity, tau of step and −score; '(raw)': direction unknown, not oriented); p two-sided (scipy). "
                f"sd last k: sample standard deviation (n − 1) of the last k checkpoints' scores, {_last_k(r)} (noise, "
                f"as Heineman et al. 2025, arXiv 2508.13144). {units}")
    if r.across == "seed":
        return (f"{runs}, read as seeds of one configuration; {len(r.seed)} task × metric rows. Mean, sample "
                f"standard deviation (n − 1) and t-based {level(r.alpha)} % interval for the mean over runs (Madaan et "
                "al. 2024, arXiv 2406.10229), cut to the metric's range where it reaches past it; within-run SE: the "
                "average standard error of one run over its docs (bootstrap "
                f"where runs have per-doc values, {r.n_boot} replicates; else the reported stderr); sd / SE above 1: "
                f"the seeds move the score more than sampling docs does. {units}")
    return (f"{runs}; {len(r.model)} task × metric rows, highest signal-to-noise first. Signal: relative dispersion "
            "of the models' final scores, (max − min) / mean; noise: relative sample standard deviation (n − 1, pooled "
            f"over models) of each model's last {r.last} checkpoints, or of its runs where no step is recorded; "
            f"SNR = signal / noise (Heineman et al. 2025, 'Signal and Noise', arXiv 2508.13144). {units}")


def confounder_lines(r: SeriesReport) -> list[str]:
    """One line per confounder: series, field, how compare judges it, and the runs per recorded value."""
    out = []
    for c in r.confounders:
        scope = f" (tasks: {', '.join(c.tasks[:4])}{', …' if len(c.tasks) > 4 else ''})" if c.tasks else ""
        if c.by_design:
            out.append(f"{c.series}: {c.path}{scope}: varies by design ({len(set(c.values.values()))} "
                       "values)")
            continue
        values = "; ".join(by_value(c.values, [s for s in r.runs if s.name in c.values]))
        name = f"{c.series}: {c.path}"
        out.append(f"{name} differs{scope}: {values}" if c.judged == "differs" else
                   f"{name} is not recorded by every run{scope}: {values}" if c.judged == "not recorded by every run"
                   else f"{name} is recorded differently{scope}: {values} (compare judges them one setting: {c.note})")
    return out


def other_lines(r: SeriesReport) -> list[tuple[str, list[str]]]:
    """(heading, lines) for names that contradict their files, repeated steps, what was left out, and notes."""
    named = [f"{s.name}: {c}" for s in r.runs for c in s.contradictions]
    left = [f"{x.series + ': ' if x.series else ''}{x.task}{' ' + x.metric if x.metric else ''}: "
            f"{', '.join(x.runs) + ' — ' if x.runs else ''}{x.reason}" for x in r.left_out]
    return [(h, lines) for h, lines in (("File names that contradict what the file records", named),
                                        ("Seed intervals and spread", seed_lines(r)),
                                        ("Prediction vs data noise (Wang 2025, arXiv 2512.21326)", split_lines(r)),
                                        ("Repeated steps", r.duplicates), ("Left out", left), ("Notes", r.notes))
            if lines]


def seed_lines(r: SeriesReport) -> list[str]:
    """A seed row's interval cut to the metric's range, and the one run that drives its spread."""
    out = []
    for x in r.seed:
        if x.cut:
            out.append(f"{x.task} {x.metric}: {x.cut}")
        if x.outlier is not None:
            out.append(f"{x.task} {x.metric}: the spread is driven by one run, {x.outlier} "
                       f"({num(next(p.score for p in x.points if p.run == x.outlier), x.unit)} {x.unit}); without it "
                       f"the sd is {num(x.sd_without_outlier, x.unit)} instead of {num(x.sd, x.unit)} {x.unit}: check "
                       "that run before reading the interval")
    return out


def split_lines(r: SeriesReport) -> list[str]:
    """Per seed row with per-doc values: its prediction and data noise and what more repeats or docs would buy."""
    return [f"{x.task} {x.metric}: " + split_sentence(x.split, x.unit) for x in r.seed if x.split is not None]


def markdown(r: SeriesReport) -> str:
    """The report as Markdown: summary, the ranked table, confounders and the other lists."""
    cols = head(r)
    lines = [f"## Series across {r.across}s", "", md(headline(r)), "", md(summary(r)), "",
             "| " + " | ".join(cols) + " |",
             "|" + "|".join("---:" if is_numeric(h) else "---" for h in cols) + "|"]
    lines += ["| " + " | ".join(md(c, block=False) for c in row) + " |" for row in rows(r)]
    for title, items in [("Confounders: settings that differ between runs", confounder_lines(r)),
                         *other_lines(r)]:
        if items:
            lines += ["", f"### {title}", ""] + [f"- {md(x, block=False)}" for x in items]
    return "\n".join(lines) + "\n"


def latex(r: SeriesReport, label: str | None = None) -> str:
    """The ranked table as a longtable (labelled ``label``, default ``tab:repaudit-series-<across>``), then
    confounders and the other lists as paragraphs."""
    cols = head(r)
    body = rows(r)
    widths = _widths([list(x) for x in body], cols, flexible=(0, 1) if r.across == "checkpoint" else (0,))
    aligns = ["r" if is_numeric(h) else "l" for h in cols]
    lines = [r"% repaudit variance --across " + e(r.across), r"% needs \usepackage{booktabs,longtable,array}",
             _par(headline(r)), _par(summary(r)), ""]
    lines += _longtable(list(zip(widths, aligns)), brk(f"Series across {r.across}s: {len(body)} rows."),
                        label or f"tab:repaudit-series-{r.across}", [e(h) for h in cols],
                        [" & ".join(brk(c) if a == "l" else e(c) for c, a in zip(row, aligns)) + r" \\"
                         for row in body])
    for title, items in [("Confounders.", confounder_lines(r)), *((t + ".", x) for t, x in other_lines(r))]:
        lines += [_par(x, title if i == 0 else "") for i, x in enumerate(items)]
    return "\n".join(lines).rstrip() + "\n"

