"""Human labels for repaudit's internal identifiers, so that a report pasted into a paper reads as prose.

The JSON output keeps the identifiers; every text format shows these labels instead.
"""

from __future__ import annotations

from repaudit.audit.intervals import COMMAND_STATISTICS, STATISTICS, stat_label  # noqa: F401  (re-exported)
from repaudit.audit.stat_settings import ADJUST  # noqa: F401  (re-exported: the reports import it from here)

METHODS = {
    "paired_score": "Tango 1998 score interval for paired proportions",
    "paired_bootstrap": "paired bootstrap over docs",
    "paired_cluster_bootstrap": "paired cluster bootstrap (clusters resampled whole)",
    "paired_corpus_bootstrap": "paired bootstrap of the corpus-level statistic",
    "unpaired_newcombe": "unpaired, Newcombe's hybrid score interval (Wilson intervals of each run)",
    "unpaired_stderr": "unpaired, from the recorded stderrs",
    "none": "no test",
}

#: when compare (and gate, appendix) uses each method: the "what it reports" of the reference pages and the
#: statistics page are generated from this and :data:`METHODS` (``docs/generate.py``: ``methods``)
METHOD_USE = {
    "paired_score": "a 0/1 metric on paired docs without clusters; p from the exact McNemar test",
    "paired_bootstrap": "any other metric on paired docs (percentile interval, `--n-boot` resamples); p from a "
                        "z-test of the paired standard error",
    "paired_cluster_bootstrap": "paired docs that carry a cluster (an MMLU subject): whole clusters resampled, "
                                "Miller's clustered SE (arXiv 2411.00640)",
    "paired_corpus_bootstrap": "a corpus-level statistic (perplexity, word/byte perplexity, bits per byte) "
                               "recomputed from per-doc log-likelihoods",
    "unpaired_newcombe": "a run without per-doc values, on a proportion of 0/1 docs whose counts both files record "
                         "(its stderr is a 0/1 mean's): Newcombe 1998's hybrid score interval from each run's Wilson "
                         "interval, with the p-value that inverts it; its coverage holds on 20–30 docs near 0 or 1 "
                         "where the normal one's does not",
    "unpaired_stderr": "any other run without per-doc values: Δ ± z·sqrt(se_A² + se_B²), clipped to the metric's range "
                       "(wider than a paired interval)",
    "none": "too few shared docs, a stderr of 0 or none: no verdict",
}


def methods_markdown(indent: int = 0) -> str:
    """One Markdown bullet per interval method, ``indent`` spaces in: the label the reports print, then when it
    is used."""
    return "".join(f"{' ' * indent}- *{METHODS[k]}*: {use}\n" for k, use in METHOD_USE.items())


def statistics_markdown(command: str, indent: int = 0) -> str:
    """One Markdown bullet per interval or test ``command`` reports (:data:`COMMAND_STATISTICS`), ``indent`` spaces
    in: the label its reports print, then when it is used; ``all``: every one of :data:`STATISTICS`.

    Raises:
        KeyError: ``command`` reports none.
    """
    keys = tuple(STATISTICS) if command == "all" else COMMAND_STATISTICS[command]
    return "".join(f"{' ' * indent}- *{STATISTICS[k][0]}*: {STATISTICS[k][1]}\n" for k in keys)


DIAGNOSTICS = {
    "fewshot_from_eval_split": "few-shot examples drawn from the evaluated split",
    "fewshot_leaked": "leaked (docs among their own few-shot examples)",
    "truncated": "truncated (generations cut at max_gen_toks)",
    "context_truncated": "context truncated (prompts cut to the context window)",
    "extraction_failed": "extraction failed (answers the filter could not extract)",
    "empty": "empty raw generations",
    "scored_empty": "empty scored answers (after the filter)",
    "ties": "ties (choices with equal log-likelihoods; the first wins)",
    "gen_tokens_mean": "generated tokens (mean)",
    "gen_tokens_max": "generated tokens (max)",
    "finish": "why generations ended",
}

#: verdict -> short word for tables (details in footnotes)
VERDICT_WORDS = {"within noise": "noise", "not comparable": "n/c", "no verdict": "—"}



#: factors whose own name is also a metric's, named as the setting they are
FACTOR_NAMES = {"acc_norm": "acc_norm normalisation"}


def factor_label(path: str) -> str:
    """The factor's own name where the path is one (``fewshot.num_fewshot`` → ``num_fewshot``, the name used on the
    command line, in sweeps and protocols; one that is also a metric's name as its setting, ``acc_norm
    normalisation``); otherwise ``group: field`` (``model: args``, ``software versions:
    lm_eval``)."""
    from repaudit.run.factors import by_path
    from repaudit.vocabulary import GROUPS

    name = by_path().get(path)
    if name is not None:
        return FACTOR_NAMES.get(name, name)
    group, _, field = path.partition(".")
    return f"{GROUPS.get(group, group)}: {field}"


def diagnostic_label(name: str) -> str:
    """``extraction_failed[strict-match]`` → ``answers the filter could not extract (strict-match)``."""
    base, _, flt = name.partition("[")
    label = DIAGNOSTICS.get(base, base)
    return f"{label} ({flt.rstrip(']')})" if flt else label


def verdict_word(verdict: str, moved: str | None) -> str:
    """The one word a table shows: better/worse/up/down for a significant row, else noise, n/c or —."""
    return moved if verdict == "significant" and moved else VERDICT_WORDS.get(verdict, verdict)


def plural(n: int, word: str) -> str:
    """``"1 batch"``, ``"2 batches"``, ``"0 docs"``: ``n`` and ``word`` with the English plural ending."""
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith(("s", "sh", "ch", "x")) else "s")
