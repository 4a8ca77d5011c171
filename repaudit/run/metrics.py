"""Per-doc metrics and their aggregation, as defined in lm-evaluation-harness 0.4.13.

* ``acc``: argmax of the choices' summed log-likelihoods equals the gold index.
* ``acc_norm``: argmax of log-likelihood divided by the choice's length in *characters*
  (lm-eval ``ConfigurableTask.process_results``: ``completion_len = len(choice)``); the
  normalisation is recorded as ``char_length``; ``acc_bytes`` divides by UTF-8 bytes.
* ``exact_match`` of generations: see :mod:`repaudit.tasks.filters` (answer filters and options).

Aggregates are means with lm-eval's standard error, ``stdev(x, ddof=1) / sqrt(n)``
(``lm_eval.api.metrics.mean_stderr``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import get_args

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.settings import AccNorm


class Metric(BaseModel):
    """One aggregate: ``value`` (a mean in [0, 1]), its ``stderr``, over ``n`` docs.

    ``variant`` names how it was computed: the filter for generation (``strict-match``), the
    normalisation for acc_norm (``char_length``), ``subject_macro`` / ``micro`` for MMLU.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The metric's per-doc key (``acc``, ``acc_norm``, ``exact_match,strict-match``)."""
    variant: str
    """How it was computed: the filter, acc_norm's normalisation, ``micro`` / ``subject_macro``, suffixed
    ``+leaderboard_normalised`` for the normalised copy."""
    value: float
    """The mean of the per-doc values (a fraction 0–1 for accuracies; the leaderboard-normalised copy rescales
    it); a cluster macro average for ``subject_macro``."""
    stderr: float | None
    """Standard error of ``value`` (``stdev(ddof=1)/sqrt(n)``; per-cluster errors combined for ``subject_macro``),
    same unit as ``value``; None for fewer than 2 docs."""
    n: int
    """Docs the aggregate is over."""


def argmax_first(values: list[float]) -> int:
    """Index of the largest value; ties go to the first (numpy's and lm-eval's rule)."""
    return int(np.argmax(np.asarray(values, dtype=np.float64)))


#: ``--acc-norm``: what acc_norm divides a choice's log-likelihood by (``pmi``: subtracts)
ACC_NORMS: tuple[str, ...] = get_args(AccNorm)


def multiple_choice_metrics(loglikelihoods: list[float], choices: list[str], gold: int,
                            is_greedy: list[bool] | None = None, acc_norm: str = "char_length",
                            n_tokens: list[int] | None = None,
                            unconditional: list[float] | None = None) -> dict[str, float]:
    """Per-doc metrics of one multiple-choice doc, as lm-eval 0.4.13's ``process_results``:

    * ``acc`` — argmax of the summed log-likelihoods is the gold index;
    * ``acc_norm`` — argmax of log-likelihood / the choice's length: in characters (``char_length``,
      lm-eval's), in continuation tokens (``token_length``, lm-eval's ``acc_norm`` of 0.3's
      ``gpt2``-era papers and GPT-3's per-token normalisation, Brown et al. 2020 §2.4), or in UTF-8
      bytes (``byte_length``, as ``acc_bytes``); or ``pmi``: argmax of log-likelihood minus the
      choice's ``unconditional`` log-likelihood (pointwise mutual information; lm-eval's
      ``acc_mutual_info``, used by OLMES for some tasks, Gu et al. 2024; Holtzman et al. 2021);
    * ``acc_bytes`` — argmax of log-likelihood / the choice's length in UTF-8 bytes;
    * ``exact_match`` — greedy decoding reproduces the gold continuation (``is_greedy[gold]``).

    Raises:
        ValueError: an unknown ``acc_norm``, ``token_length`` without ``n_tokens`` or ``pmi`` without
            ``unconditional``.
    """
    chars = [float(len(c)) for c in choices]
    nbytes = [float(len(c.encode("utf-8"))) for c in choices]
    if acc_norm == "char_length":
        norm = chars
    elif acc_norm == "byte_length":
        norm = nbytes
    elif acc_norm == "token_length" and n_tokens is not None:
        norm = [float(n) for n in n_tokens]
    elif acc_norm == "pmi" and unconditional is not None:
        norm = []
    else:
        need = {"token_length": "n_tokens", "pmi": "unconditional"}.get(acc_norm, ACC_NORMS)
        raise ValueError(f"acc_norm '{acc_norm}' needs {need}")
    normed = ([ll - u for ll, u in zip(loglikelihoods, unconditional, strict=True)]
              if acc_norm == "pmi" and unconditional is not None
              else [ll / n if n else ll for ll, n in zip(loglikelihoods, norm)])
    out = {"acc": float(argmax_first(loglikelihoods) == gold),
           "acc_norm": float(argmax_first(normed) == gold),
           "acc_bytes": float(argmax_first([ll / n if n else ll for ll, n in zip(loglikelihoods, nbytes)]) == gold)}
    if is_greedy is not None:
        out["exact_match"] = float(bool(is_greedy[gold]))
    return out


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


#: the variant suffix of a leaderboard-normalised aggregate (``acc`` -> ``none+leaderboard_normalised``)
NORMALISED_SUFFIX = "+leaderboard_normalised"


def normalised_metrics(metrics: list[Metric], baseline: float) -> list[Metric]:
    """Each aggregate again, leaderboard-normalised (:func:`repaudit.run.normalise.leaderboard_normalise`):
    value ``max(v - b, 0)/(1 - b)``, stderr ``se/(1 - b)``, variant suffixed ``+leaderboard_normalised``.
    Per-doc values stay raw, so paired statistics are unchanged."""
    from repaudit.run.normalise import leaderboard_normalise

    return [Metric(name=m.name, variant=m.variant + NORMALISED_SUFFIX, value=leaderboard_normalise(m.value, baseline),
                   stderr=None if m.stderr is None else m.stderr / (1.0 - baseline), n=m.n) for m in metrics]
