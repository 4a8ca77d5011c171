"""Every interval and test repaudit reports outside compare's rows, by key: the label the reports print and when it
is used, and which command reports which. The reference pages' statistics blocks and the statistics page are
generated from here (:func:`repaudit.report.glossary.statistics_markdown`); the commands name their intervals
with :func:`stat_label`, so the pages and the reports cannot drift apart. compare's row methods are
:data:`repaudit.report.glossary.METHODS`."""

from __future__ import annotations

#: key -> (the label a report prints, when it is used)
STATISTICS = {
    "score_bootstrap": ("bootstrap over docs", "one run's score from its per-doc values of a mean metric: the "
                        "percentile interval of `--n-boot` resamples of its docs"),
    "score_cluster_bootstrap": ("bootstrap over clusters", "the same where every doc carries a cluster (an MMLU "
                                "subject): whole clusters resampled"),
    "score_stderr": ("normal from the recorded stderr", "a run without per-doc values: score ± z·stderr from its "
                     "file, cut to the metric's range"),
    "paired_bootstrap": ("paired bootstrap over docs", "Δ of a configuration against another on the same docs: the "
                         "percentile interval of `--n-boot` resamples of the per-doc outcomes (whole clusters where "
                         "docs carry one); no new inference"),
    "repeated_ci": ("repeated confidence intervals", "with `--precision`: docs run in seeded rounds until every "
                    "interval is narrow enough; each interval keeps its level whichever round it stops at "
                    "(a sequential design)"),
    "gate_score": ("score test (Tango 1998)", "a 0/1 metric on paired docs: Tango's score test of the difference "
                   "against the margin, one-sided at α, and the (1 − 2α) interval that inverts it"),
    "gate_z": ("z test", "any other row: the Wald z of the row's paired (clustered) or unpaired standard error "
               "against the margin"),
    "noise_floor": ("noise floor", "the spread of the base's score across few-shot seeds (n-shot) or across a "
                    "repeated, uncached run (0-shot); a value exceeds it when its interval excludes 0 and "
                    "|Δ| > 2 × the floor's sd"),
    "eee_normal": ("normal approximation", "an EEE record's `uncertainty.confidence_interval` of every score: "
                   "score ± z × its standard error (the file's, or lm-eval's stdev/√n from the per-doc values), cut "
                   "to the metric's range and said so in the record's `method`"),
    "race_stderr": ("score ± z·stderr", "a candidate's score with lm-eval's stderr of its docs, "
                    "sqrt(p(1 − p)/(n − 1)) for a 0/1 metric, at the (1 − α) level"),
    "seed_spread": ("spread over seeds", "the sd and min–max of the score over few-shot seeds, over orders of the "
                    "same examples, and between prompt formats"),
    "mde": ("MDE (80 % power)", "the smallest true move a row's own test detects with 80 % power at its α, before "
            "the multiplicity adjustment (exact McNemar for a 0/1 metric on paired docs, else the z-test)"),
}

#: the intervals and tests each command reports (its reference page's statistics block); compare's rows and the
#: commands that print them (gate, appendix) use :data:`repaudit.report.glossary.METHODS` as well
COMMAND_STATISTICS = {
    "gate": ("gate_score", "gate_z", "mde"),
    "sweep": ("paired_bootstrap", "repeated_ci", "noise_floor"),
    "attribute": ("paired_bootstrap", "repeated_ci"),
    "appendix": ("score_bootstrap", "score_cluster_bootstrap", "score_stderr", "mde"),
    "variance": ("score_bootstrap", "score_cluster_bootstrap", "seed_spread", "mde"),
    "reproduce": ("race_stderr", "repeated_ci"),
    "export": ("eee_normal",),
}


def stat_label(key: str) -> str:
    """The label a report prints for :data:`STATISTICS` ``key``."""
    return STATISTICS[key][0]
