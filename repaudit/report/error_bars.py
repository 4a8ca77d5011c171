"""The appendix's "what the error bars are" paragraph, generated from what the appendix holds, so that it answers
the NeurIPS checklist's question 7 — the factors of variability the bars capture, how they were computed, the
assumptions, and whether they are a standard deviation or a confidence interval (and at which level) — and ACL's
items on the number of runs and the summary statistic.

The sentences are plain text; a table is referred to as ``@@key@@`` (``scores``, ``setup``, ``compare-1``,
``attribution-1``, ``variance-1``, ``sweep-1``), which the renderer turns into a reference in its language.
"""

from __future__ import annotations

from collections import Counter

from repaudit.audit.appendix import Appendix
from repaudit.audit.series import SeriesReport
from repaudit.audit.stats import level
from repaudit.report.audit import interval_label
from repaudit.report.glossary import ADJUST, METHODS, plural


def _varies(a: Appendix) -> str:
    out = ("Each score's interval (@@scores@@) captures the sampling of evaluation docs only: how far the score "
           "could move had the benchmark drawn other docs of the same kind. It does not include run-to-run variation "
           f"of the model or the protocol, since each of the {plural(len(a.runs), 'run')} was evaluated once")
    if a.comparisons:
        out += ("; a difference's interval (@@compare-1@@ and after) is paired — both runs scored the same docs — "
                "and likewise captures only which docs were drawn, not how a repeated run of either would vary")
    for i, v in enumerate(a.variances, 1):
        if isinstance(v, SeriesReport):
            out += (f"; @@variance-{i}@@ measures the spread across {plural(len(v.runs), 'run')} that differ by "
                    f"{v.across}")
        else:
            out += (f"; @@variance-{i}@@ measures the spread over {plural(len(v.fewshot_seeds), 'few-shot seed')}, "
                    f"{plural(len(v.order_seeds), 'other order')} of the examples and "
                    f"{plural(len(v.formats), 'prompt format')}")
    return out + "."


def _computed(a: Appendix) -> str:
    count = Counter(s.method for s in a.scores)
    parts = []
    if n := count["bootstrap over docs"] + count["bootstrap over clusters"]:
        clustered = (f", whole clusters (subjects) resampled for {count['bootstrap over clusters']}"
                     if count["bootstrap over clusters"] else "")
        parts.append(f"a percentile bootstrap over docs ({a.n_boot:,} replicates{clustered}) for "
                     f"{plural(n, 'score')} whose file holds per-doc results")
    if n := count["normal from the recorded stderr"]:
        parts.append(f"score ± z · stderr from the standard error the harness recorded, cut to the metric's range, "
                     f"for {plural(n, 'score')} without per-doc results")
    if n := count["none"]:
        parts.append(f"no interval for {plural(n, 'score')} with neither (a corpus-level statistic)")
    out = "Score intervals: " + "; ".join(parts) + "."
    for i, c in enumerate(a.comparisons, 1):
        methods = sorted({METHODS.get(r.method, r.method) for r in c.scores if r.method != "none"})
        out += (f" Differences in @@compare-{i}@@: {'; '.join(methods) or 'no test'}; p-values from the exact "
                f"McNemar test (0/1 metrics) or a z-test, {ADJUST[c.adjust]}-adjusted over the rows; beside each "
                "paired row, the smallest move its test detects with 80 % power.")
    for i, r in enumerate(a.attributions, 1):
        how = ("a " if r.sequential is None else "") + interval_label(r.sequential)
        out += (f" @@attribution-{i}@@: Shapley values over every hybrid configuration, intervals from {how} "
                f"({level(r.alpha)} %).")
    for i, s in enumerate(a.sweeps, 1):
        out += (f" @@sweep-{i}@@: Δ against the base with its {level(s.alpha)} % interval "
                f"({interval_label(s.sequential)}).")
    return out


def _assumptions(a: Appendix) -> str:
    out = ("The docs are taken as exchangeable draws from the population the benchmark stands for (clusters, where "
           "docs carry one, as the units drawn); intervals from a recorded stderr and z-tests assume the mean over "
           "docs is near normal")
    if a.comparisons:
        out += "; paired tests assume the runs are scored on identical docs, matched by id and content"
    if any(isinstance(v, SeriesReport) and v.across == "seed" for v in a.variances):
        out += "; the t interval over seeds assumes the runs' scores are near normal (a run that drives the spread " \
               "alone is named)"
    return out + "."


def _bars(a: Appendix) -> str:
    lv = level(a.alpha)
    out = (f"Every interval is a two-sided {lv} % confidence interval (α = {a.alpha:g}), not a standard deviation "
           "or a standard error")
    if any(not isinstance(v, SeriesReport) for v in a.variances):
        out += "; the seed and order spreads of the variance table are sample standard deviations (n − 1)"
    return out + "."


def _runs(a: Appendix) -> str:
    tasks = len({s.task for s in a.scores})  # distinct tasks, however many runs evaluated each
    return (f"Every setting the run files record (hyper-parameters, decoding, software, hardware) is in @@setup@@, "
            f"with what a file does not record marked as such. {plural(len(a.runs), 'run')} of "
            f"{plural(tasks, 'task')} in all, each evaluated once; every score is the mean over the evaluated docs "
            "of a per-doc metric (a corpus-level statistic where the metric is one), as the harness reports it.")


def error_bar_items(a: Appendix) -> list[tuple[str, str]]:
    """(lead-in, sentences): what varies, how the bars were computed, the assumptions, what the bars are (NeurIPS Q7)
    and the runs and the summary statistic (ACL)."""
    return [("What the error bars capture.", _varies(a)), ("How they were computed.", _computed(a)),
            ("Assumptions.", _assumptions(a)), ("What they are.", _bars(a)),
            ("Runs and summary statistic.", _runs(a))]
