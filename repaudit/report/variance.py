"""Render ``repaudit variance`` reports: terminal rows, Markdown and LaTeX.

Accuracies and probabilities are shown in points (× 100); ``logp_gold_norm`` in nats. Every string
from a run (task, model, metric names) goes through :mod:`repaudit.escape`.
"""

from __future__ import annotations

from repaudit.audit.stats import level
from repaudit.audit.variance import VarianceReport
from repaudit.escape import latex as e
from repaudit.escape import md
from repaudit.report.audit import latex_rows, latex_table
from repaudit.report.glossary import plural


def head(r: VarianceReport) -> tuple[str, ...]:
    """The noise table's columns, the interval's level and the MDE's power from the report."""
    return ("format", "metric", "score", f"±{level(r.alpha)}% CI (docs, 1 run)", "seed sd", "seed range", "order sd",
            "SNR", f"MDE {r.power:.0%}", "MDE unpaired", "docs for 1 pt", "seeds for 1 pt")


def _v(x: float | None, metric: str) -> str:
    """Points with 2 decimals; nats (``logp_gold_norm``) with 3."""
    if x is None or x != x:
        return "–"
    return f"{x:.3f}" if metric == "logp_gold_norm" else f"{100 * x:.2f}"


def noise_rows(r: VarianceReport) -> list[tuple[str, ...]]:
    """One row per (format, metric), in :func:`head` order; continuous metrics named with their counterpart."""
    rows: list[tuple[str, ...]] = []
    for x in r.noise:
        name = x.metric if x.counterpart is None else f"{x.metric} (≈ {x.counterpart})"
        ci = "±" + _v((x.boot_high - x.boot_low) / 2, x.metric)
        rows.append((x.format, name, _v(x.score, x.metric), ci,
                     _v(x.seed_sd, x.metric), f"{_v(x.seed_min, x.metric)}–{_v(x.seed_max, x.metric)}",
                     _v(x.order_sd, x.metric), "–" if x.snr is None else f"{x.snr:.1f}", _v(x.mde, x.metric),
                     _v(x.mde_unpaired, x.metric),
                     "–" if x.docs_for_1pt is None else f"{x.docs_for_1pt:,}",
                     "–" if x.seeds_for_1pt is None else f"{x.seeds_for_1pt:,}"))
    return rows


SPLIT_HEAD = ("format", "metric", "seeds", "docs", "prediction sd", "data sd", "prediction share", "score SE",
              "SE, 2× seeds", "SE, 2× docs", "SE, unlimited seeds")


def split_rows(r: VarianceReport) -> list[tuple[str, ...]]:
    """Per (format, metric): the seed runs' prediction and data noise (standard deviations) and the score's
    standard error now, with twice the seeds, twice the docs and unlimited seeds, in points (nats for
    ``logp_gold_norm``); :data:`SPLIT_HEAD` order."""
    out = []
    for x in r.noise:
        sp = x.split
        if sp is None:
            continue
        share = "–" if sp.prediction_share is None else f"{100 * sp.prediction_share:.0f} %"
        out.append((x.format, x.metric, str(sp.repeats), str(sp.n_docs), f"{sp.prediction_var ** 0.5:.2f}",
                    f"{sp.data_var ** 0.5:.2f}", share, *(f"{v:.3f}" for v in (sp.se, sp.se_double_repeats,
                                                                                sp.se_double_docs, sp.se_data_floor))))
    return out


SPLIT_CAPTION = ("Prediction vs data noise of the seed runs (law of total variance over docs × seeds; Wang 2025, "
                 "arXiv 2512.21326): prediction sd = √(mean over docs of the variance across seeds of one doc), data "
                 "sd = √(variance of the docs' mean scores − prediction variance / seeds); score SE = √(data var / "
                 "docs + prediction var / (docs × seeds)), and the same with twice the seeds, twice the docs or "
                 "unlimited seeds. Points (× 100) except logp_gold_norm (nats).")


def spread_rows(r: VarianceReport) -> list[tuple[str, ...]]:
    """(metric, score per format…, spread) rows."""
    return [(s.metric, *(_v(s.scores[f], s.metric) for f in r.formats), _v(s.spread, s.metric))
            for s in r.format_spread]


def variance_summary(r: VarianceReport, esc=str) -> str:
    """What ran: task, model, docs, n-shot, seeds, orders, formats, intervals and cost."""
    seeds = f"{r.fewshot_seeds[0]}–{r.fewshot_seeds[-1]}"
    return (f"{esc(r.task)} · {esc(r.model)} · {r.n_docs} docs · {r.num_fewshot}-shot · {len(r.fewshot_seeds)} "
            f"few-shot seeds ({seeds}) and {len(r.order_seeds)} other orders of the first seed's examples · formats "
            f"{', '.join(esc(f) for f in r.formats)}. Points (× 100) except logp_gold_norm (nats). {level(r.alpha)} % "
            "intervals: "
            f"percentile bootstrap over docs ({r.n_boot} replicates) of one run (the first seed's), shown as its "
            f"half-width; MDE: paired test, "
            f"α = {r.alpha:g}, power {r.power:.0%}, {r.n_docs} docs, per-doc disagreement of runs whose prompts "
            f"differ (MDE unpaired: two independent samples). {len(r.runs)} runs, "
            f"{plural(r.computed_batches, 'batch')} computed, {r.cached_batches} from the store."
            + (" The sampler is first_n: seeds do not change the examples, only orders do." if r.sampler == "first_n"
               else ""))


def variance_markdown(r: VarianceReport) -> str:
    """The report as Markdown: summary, the noise table and the format spread."""
    lines = [f"## Benchmark noise: {md(r.task)}", "", md(variance_summary(r)), "",
             "| " + " | ".join(head(r)) + " |", "|" + "---|" * len(head(r))]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in noise_rows(r)]
    if r.format_spread:
        cols = ("metric", *r.formats, "spread (max − min)")
        lines += ["", "| " + " | ".join(md(h) for h in cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in spread_rows(r)]
    if split_rows(r):
        lines += ["", md(SPLIT_CAPTION), "", "| " + " | ".join(SPLIT_HEAD) + " |", "|" + "---|" * len(SPLIT_HEAD)]
        lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in split_rows(r)]
    return "\n".join(lines) + "\n"


def variance_latex(r: VarianceReport, label: str | None = None) -> str:
    """The noise table as a booktabs fragment (the format spread as a second table)."""
    out = latex_table(e(variance_summary(r)), "ll" + "r" * (len(head(r)) - 2),
                      [latex_rows([head(r)]), latex_rows(noise_rows(r))], label)
    if r.format_spread:
        cols = ("metric", *r.formats, "spread")
        out += latex_table(e(f"Score per prompt format (seed means), {r.task}."), "l" + "r" * (len(cols) - 1),
                           [latex_rows([cols]), latex_rows(spread_rows(r))],
                           label and f"{label}-formats")
    if split_rows(r):
        out += latex_table(e(SPLIT_CAPTION), "ll" + "r" * (len(SPLIT_HEAD) - 2),
                           [latex_rows([SPLIT_HEAD]), latex_rows(split_rows(r))],
                           label and f"{label}-split")
    return out
