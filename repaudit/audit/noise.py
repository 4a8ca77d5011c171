"""Prediction noise and data noise of repeated runs on the same docs (few-shot seeds, sampling seeds, training
seeds), and what more repeats or more docs would buy.

For a score ``x_ij`` of doc ``i`` (``n`` docs) in repeat ``j`` (``K`` repeats), the law of total variance splits the
variance of one doc's score into the *prediction* variance — the same doc, different outcomes across repeats — and
the *data* variance — which docs were drawn (Wang 2025, "Measuring all the noises of LLM evals", arXiv 2512.21326,
eq. 1–2)::

    Var(x) = E_i[Var_j(x_ij)] + Var_i(E_j[x_ij])          (prediction + data)

Estimated as in a balanced one-way random-effects analysis of variance (docs as groups; e.g. Searle, Casella &
McCulloch 1992, *Variance Components*, §3.5), unbiased for both parts:

* ``prediction_var`` = mean over docs of the within-doc sample variance (ddof 1) over the K repeats;
* ``data_var`` = sample variance (ddof 1) of the docs' mean scores − ``prediction_var``/K, cut at 0 (the doc means
  carry 1/K of the prediction variance);
* the score (the mean over docs and repeats) then has variance ``data_var/n + prediction_var/(n·K)``, whose square
  root is ``se`` (uncut, it equals the sample variance of the doc means over n); the same formula at 2K repeats or
  2n docs is what doubling either buys.

Wang (2025) measures the same two parts on per-doc *differences* between two models (paired) and finds the paired
prediction noise usually exceeds the paired data noise; here they are measured on one configuration's repeats, so
the split says whether more repeats (prediction) or more docs (data) would narrow its score's interval.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict


class NoiseSplit(BaseModel):
    """One task × metric's noise of repeated runs split into prediction and data noise (module docstring); every
    variance in the row's unit squared, every standard error in its unit."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    n_docs: int
    """Docs every repeat scored (n)."""
    repeats: int
    """Repeats (runs) per doc (K ≥ 2)."""
    prediction_var: float
    """E over docs of the variance across repeats of the same doc (ddof 1): prediction noise."""
    data_var: float
    """Variance of the docs' expected scores: the doc means' sample variance − prediction_var / K, cut at 0."""
    prediction_share: float | None
    """prediction_var / (prediction_var + data_var), in [0, 1]; None when both are 0."""
    se: float
    """Standard error of the score (mean over n docs and K repeats): √(data_var/n + prediction_var/(n·K))."""
    se_double_repeats: float
    """``se`` with 2K repeats on the same n docs."""
    se_double_docs: float
    """``se`` with 2n docs at K repeats (another, larger split)."""
    se_data_floor: float
    """√(data_var/n): ``se`` with unlimited repeats of these n docs, the least that repeats alone can reach."""


def split_noise(x: np.ndarray) -> NoiseSplit:
    """The :class:`NoiseSplit` of ``x``, shape (n docs, K repeats), every value finite.

    Raises:
        ValueError: fewer than 2 docs or 2 repeats, or a value that is not finite.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2 or not np.all(np.isfinite(x)):
        raise ValueError("x must be a finite (docs, repeats) array with at least 2 of each")
    n, k = x.shape
    pred = float(np.mean(np.var(x, axis=1, ddof=1)))
    data = max(float(np.var(x.mean(axis=1), ddof=1)) - pred / k, 0.0)

    def se(docs: int, repeats: int) -> float:
        return math.sqrt(data / docs + pred / (docs * repeats))

    total = pred + data
    return NoiseSplit(n_docs=n, repeats=k, prediction_var=pred, data_var=data,
                      prediction_share=pred / total if total > 0 else None, se=se(n, k),
                      se_double_repeats=se(n, 2 * k), se_double_docs=se(2 * n, k),
                      se_data_floor=math.sqrt(data / n))


def split_sentence(s: NoiseSplit, unit: str = "pts") -> str:
    """What the split says, in one sentence: both noises as standard deviations (``unit``), the prediction share and
    what doubling repeats or docs buys."""
    if s.prediction_share is None:
        return f"no noise: every doc scored the same in all {s.repeats} repeats"
    sd_p, sd_d = math.sqrt(s.prediction_var), math.sqrt(s.data_var)
    return (f"prediction noise sd {sd_p:.3g} {unit}, data noise sd {sd_d:.3g} {unit}: prediction noise is "
            f"{100 * s.prediction_share:.0f} % of the per-doc variance ({s.repeats} repeats of {s.n_docs} docs); the "
            f"score's standard error {s.se:.3g} {unit} would fall to {s.se_double_repeats:.3g} with {s.repeats} more "
            f"repeats (to {s.se_data_floor:.3g} at most, with unlimited repeats) and to "
            f"{s.se_double_docs:.3g} with {s.n_docs} more docs")
