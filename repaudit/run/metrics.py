"""Per-doc metrics and their aggregation, as defined in lm-evaluation-harness 0.4.13.

* ``acc``: argmax of the choices' summed log-likelihoods equals the gold index.
* ``acc_norm``: argmax of log-likelihood divided by the choice's length in *characters*
  (lm-eval ``ConfigurableTask.process_results``: ``completion_len = len(choice)``); the
  normalisation is recorded as ``char_length``.
* ``exact_match`` (GSM8K): the filtered answer equals the target after lm-eval's
  ``regexes_to_ignore`` and case folding; ``strict-match`` extracts ``#### N``,
  ``flexible-extract`` the last number in the text.

Aggregates are means with lm-eval's standard error, ``stdev(x, ddof=1) / sqrt(n)``
(``lm_eval.api.metrics.mean_stderr``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np
from pydantic import BaseModel, ConfigDict

#: GSM8K answer-extraction filters (lm_eval/tasks/gsm8k/gsm8k.yaml): name -> (pattern, group_select).
GSM8K_FILTERS: dict[str, tuple[str, int]] = {
    "strict-match": (r"#### (\-?[0-9\.\,]+)", 0),
    "flexible-extract": (r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1),
}
_GSM8K_IGNORE = [",", "\\$", "(?s).*#### ", "\\.$"]
INVALID = "[invalid]"


class Metric(BaseModel):
    """One aggregate: ``value`` (a mean in [0, 1]), its ``stderr``, over ``n`` docs.

    ``variant`` names how it was computed: the filter for generation (``strict-match``), the
    normalisation for acc_norm (``char_length``), ``subject_macro`` / ``micro`` for MMLU.
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    variant: str
    value: float
    stderr: float | None
    n: int


def argmax_first(values: list[float]) -> int:
    """Index of the largest value; ties go to the first (numpy's and lm-eval's rule)."""
    return int(np.argmax(np.asarray(values, dtype=np.float64)))


def multiple_choice_metrics(loglikelihoods: list[float], choices: list[str], gold: int) -> dict[str, float]:
    """Per-doc ``acc`` and ``acc_norm`` (char-length normalised) from per-choice log-likelihoods."""
    lengths = [float(len(c)) for c in choices]
    norm = [ll / n if n else ll for ll, n in zip(loglikelihoods, lengths)]
    return {"acc": float(argmax_first(loglikelihoods) == gold), "acc_norm": float(argmax_first(norm) == gold)}


def extract_answer(text: str, filter_name: str) -> str:
    """lm-eval's ``RegexFilter`` then ``take_first``: the selected match, or ``[invalid]``."""
    pattern, group_select = GSM8K_FILTERS[filter_name]
    matches = re.findall(pattern, text)
    if not matches:
        return INVALID
    match = matches[group_select]
    if isinstance(match, tuple):
        match = [m for m in match if m]
        if not match:
            return INVALID
        match = match[0]
    return match.strip()


def _normalise_em(s: str) -> str:
    for pattern in _GSM8K_IGNORE:
        s = re.sub(pattern, "", s)
    return s.lower()


def exact_match(prediction: str, target: str) -> float:
    """HF ``evaluate``'s exact_match with GSM8K's settings (ignore_case, regexes_to_ignore)."""
    return float(_normalise_em(prediction) == _normalise_em(target))


def mean_stderr(values: list[float]) -> float | None:
    """``stdev(ddof=1)/sqrt(n)``; ``None`` for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    return float(np.std(np.asarray(values, dtype=np.float64), ddof=1) / math.sqrt(n))


def aggregate(per_doc: list[dict[str, float]], metric_variants: dict[str, str],
              clusters: list[str | None] | None = None) -> list[Metric]:
    """Mean and stderr of every metric over docs; with clusters, also the cluster macro average.

    The macro average (``variant='subject_macro'``) is the unweighted mean of per-cluster means,
    and its stderr is ``sqrt(sum(se_c^2)) / C`` over the C clusters (clusters independent).
    lm-eval's MMLU group score is the micro mean (``weight_by_size: True``), reported as
    ``variant='micro'``.
    """
    out: list[Metric] = []
    for name, variant in metric_variants.items():
        values = [d[name] for d in per_doc if name in d]
        if not values:
            continue
        if clusters is None or all(c is None for c in clusters):
            out.append(Metric(name=name, variant=variant, value=float(np.mean(values)),
                              stderr=mean_stderr(values), n=len(values)))
            continue
        by: dict[str, list[float]] = defaultdict(list)
        for d, c in zip(per_doc, clusters):
            if name in d:
                by[str(c)].append(d[name])
        out.append(Metric(name=name, variant="micro", value=float(np.mean(values)),
                          stderr=mean_stderr(values), n=len(values)))
        means = [float(np.mean(v)) for v in by.values()]
        ses = [mean_stderr(v) or 0.0 for v in by.values()]
        out.append(Metric(name=name, variant="subject_macro", value=float(np.mean(means)),
                          stderr=math.sqrt(sum(s * s for s in ses)) / len(ses), n=len(values)))
    return out
