"""The three measures of a series of runs, on the points of one task × metric: monotonicity over checkpoints,
seed variance, signal-to-noise across models.

Scores are in each row's display unit (``pts`` = percentage points for proportions; a perplexity in its own
unit; :mod:`repaudit.importers.metric_kinds`). Every measure, with its source:

* ``--across checkpoint`` (Madaan et al. 2024, "Quantifying Variance in Evaluation Benchmarks", arXiv
  2406.10229, *monotonicity*): per series (model), the runs ordered by training step; **Kendall tau-b**
  between step and score with its two-sided p-value (``scipy.stats.kendalltau``, variant b, which counts tied
  steps and tied scores). ``kendall_tau`` is oriented by the metric's direction — positive means *improving*
  with training: tau(step, score) where higher is better, tau(step, −score) where lower is better (perplexity);
  ``kendall_tau_raw`` is tau(step, score as reported); a metric of unknown direction is not oriented (both
  equal, and the row says so). Also the score's range (max − min) and the **noise over the last k
  checkpoints**: their sample standard deviation (ddof 1; Heineman et al. 2025, "Signal and Noise", arXiv
  2508.13144; their code, ``snr/metrics.py`` in allenai/signal-and-noise, uses ddof 0 — smaller by
  √((k−1)/k)).
* ``--across seed`` (Madaan et al. 2024, *seed variance* and its confidence interval): mean, sample standard
  deviation (ddof 1) and the t-based (1 − α) interval for the mean, mean ± t₁₋α/₂,ₙ₋₁ · sd/√n
  (``scipy.stats.t.interval``), cut to the metric's range where it reaches past it (a perplexity below 1, an
  accuracy above 100 pts; the row says so), and a flag when one run drives the spread (without it the sd is less
  than half); next to it the average within-run standard error — the bootstrap SE over
  docs (:func:`repaudit.audit.stats.bootstrap_mean`) where every run has per-doc values, else the reported
  stderr — so that seed noise can be set against sampling noise (``sd_over_se``); and, where every run has
  per-doc values on the same docs, the split of that noise into prediction and data noise
  (:mod:`repaudit.audit.noise`).
* ``--across model`` (Heineman et al. 2025; ``signal_to_noise_ratio`` in their ``snr/metrics.py``): signal =
  the relative dispersion of the models' final scores, max_{j,k} |m_j − m_k| / m̄; noise = the relative
  standard deviation σ / m̄ₙ of the noise points — the last k checkpoints of each model with a step series, or
  every run of a model without steps (seeds); σ pooled over models as √(mean of their variances, ddof 1) —
  their code takes one model's last checkpoints, or the pooled final checkpoints of all models (which adds the
  spread between models to the noise); **SNR** = signal / noise. A model's final score is its score at its
  last step (the mean of its runs where no step is recorded).

Every row keeps its points (run, step, score, and the (1 − α) percentile bootstrap interval over docs where the
run has per-doc values).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from repaudit.audit.noise import NoiseSplit
from repaudit.importers.metric_kinds import MetricKind


class Point(BaseModel):
    """One run's score in one row."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    run: str
    """The run's label (:attr:`SeriesRun.name`)."""
    series: str
    """Its series (model name)."""
    step: int | None
    """Its training step, if known."""
    score: float
    """The reported score, in the row's unit."""
    ci_low: float | None = None
    """(1 − alpha) percentile bootstrap interval over docs, low end (row's unit); ``None`` without per-doc
    values."""
    ci_high: float | None = None
    """Its high end."""
    se: float | None = None
    """Bootstrap standard error over docs (row's unit), else the file's reported stderr; ``None`` if neither."""
    se_from: str | None = None
    """``bootstrap over docs`` or ``reported stderr``."""


class CheckpointRow(BaseModel):
    """One series × task × metric over training steps."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    series: str
    """The series (model name)."""
    task: str
    """Task name as the files record it."""
    metric: str
    """Metric key (``acc``, ``ppl``, ``exact_match,strict-match``)."""
    unit: str
    """Unit of every score in the row (``pts`` = percentage points)."""
    direction: str
    """``higher`` or ``lower`` is better, or ``unknown``."""
    n_runs: int
    """Checkpoints (runs) in the row."""
    kendall_tau: float | None
    """Kendall tau-b between step and score, oriented so that positive = improving (see ``tau_reads``);
    ``None`` when the score is constant."""
    kendall_tau_raw: float | None
    """Kendall tau-b between step and the score as reported (not oriented)."""
    kendall_p: float | None
    """Two-sided p-value of tau (scipy; the same for both orientations)."""
    tau_reads: str
    """How the sign of ``kendall_tau`` reads for this metric."""
    first: float
    """Score at the first step."""
    last: float
    """Score at the last step."""
    low: float
    """Lowest score of the series."""
    high: float
    """Highest score of the series."""
    range: float
    """high − low."""
    last_k: int
    """Checkpoints in the noise window (``--last``, at most n_runs)."""
    sd_last: float | None
    """Sample standard deviation (ddof 1) of the scores of the last ``last_k`` checkpoints; ``None`` if k < 2."""
    points: list[Point]
    """The runs in step order."""


class SeedRow(BaseModel):
    """One task × metric over runs that differ by seed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """Task name as the files record it."""
    metric: str
    """Metric key."""
    unit: str
    """Unit of every number in the row."""
    direction: str
    """``higher``, ``lower`` or ``unknown``."""
    n_runs: int
    """Seeds (runs) in the row."""
    mean: float
    """Mean score over the runs."""
    sd: float
    """Sample standard deviation (ddof 1) over the runs: the seed noise."""
    ci: tuple[float, float]
    """t-based (1 − alpha) interval for the mean (n − 1 degrees of freedom), cut to the metric's range (``cut``
    says where)."""
    cut: str = ""
    """Where the t interval reached past the metric's range and was cut, with its uncut ends; empty: not cut."""
    outlier: str | None = None
    """The run that alone drives the spread (without it the sd is less than half of ``sd``; five runs or more); None:
    none does."""
    sd_without_outlier: float | None = None
    """The sd without ``outlier``; None without one."""
    low: float
    """Lowest run score."""
    high: float
    """Highest run score."""
    within_se: float | None
    """Average within-run standard error (sampling noise over docs); ``None`` where runs record none."""
    within_se_from: str | None
    """``bootstrap over docs`` or ``reported stderr``."""
    sd_over_se: float | None
    """sd / within_se: above 1, seeds move the score more than the docs' sampling does."""
    split: NoiseSplit | None = None
    """Prediction vs data noise over the runs' per-doc values (:mod:`repaudit.audit.noise`); None where a run has
    no per-doc values of every shared doc."""
    points: list[Point]
    """The runs."""


class ModelRow(BaseModel):
    """One task × metric across models: signal, noise and their ratio."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """Task name as the files record it."""
    metric: str
    """Metric key."""
    unit: str
    """Unit of ``finals``, ``signal`` and ``noise``."""
    direction: str
    """``higher``, ``lower`` or ``unknown`` (SNR does not depend on it)."""
    n_models: int
    """Models with a final score."""
    finals: dict[str, float]
    """Model -> its final score."""
    signal: float
    """max − min of the final scores (absolute dispersion)."""
    rel_signal: float | None
    """signal / mean of the final scores; ``None`` where that mean is not positive."""
    noise: float | None
    """Pooled sample standard deviation of the noise points; ``None`` without a model with two of them."""
    rel_noise: float | None
    """noise / mean of the noise points."""
    noise_from: str
    """Which runs made the noise, per model (``EleutherAI/pythia-v1.1-160m steps 103000–143000 (5 checkpoints)``)."""
    snr: float | None
    """rel_signal / rel_noise; ``None`` with the reason in ``note``."""
    note: str = ""
    """Why a number is missing."""
    points: list[Point]
    """Every run used."""


def tau_reads(metric: str, direction: str) -> str:
    """How the sign of an oriented ``kendall_tau`` reads for ``metric``."""
    if direction == "higher":
        return f"positive = improving: {metric} rises with the step (higher is better)"
    if direction == "lower":
        return f"positive = improving: {metric} falls with the step (lower is better; tau of step and −{metric})"
    return f"positive = {metric} rises with the step (direction unknown: not oriented)"


def checkpoint_row(series: str, task: str, metric: str, kind: MetricKind, points: list[Point], last: int
                   ) -> CheckpointRow:
    """Monotonicity and late noise of one series × task × metric (see the module docstring).

    Args:
        points: two or more, each with a step.
        last: checkpoints in the noise window (k ≥ 2; fewer points: all of them).
    """
    pts = sorted(points, key=lambda p: (p.step, p.run))
    steps = np.array([p.step for p in pts], dtype=np.float64)
    y = np.array([p.score for p in pts], dtype=np.float64)
    res = sps.kendalltau(steps, y)  # tau-b (scipy's default variant), two-sided p
    raw = None if math.isnan(res.statistic) else float(res.statistic)
    sign = -1.0 if kind.direction == "lower" else 1.0
    k = min(last, len(y))
    return CheckpointRow(series=series, task=task, metric=metric, unit=kind.display_unit, direction=kind.direction,
                         n_runs=len(pts), kendall_tau=None if raw is None else sign * raw + 0.0, kendall_tau_raw=raw,
                         kendall_p=None if raw is None else float(res.pvalue), tau_reads=tau_reads(metric,
                                                                                                   kind.direction),
                         first=float(y[0]), last=float(y[-1]), low=float(y.min()), high=float(y.max()),
                         range=float(y.max() - y.min()), last_k=k,
                         sd_last=float(np.std(y[-k:], ddof=1)) if k >= 2 else None, points=pts)


def seed_row(task: str, metric: str, kind: MetricKind, points: list[Point], alpha: float = 0.05,
             split: NoiseSplit | None = None) -> SeedRow:
    """Mean, seed standard deviation, t interval (cut to the metric's range), the run that drives the spread, and
    within-run SE of one task × metric (two or more points); ``split``: its prediction/data noise, if measured."""
    y = np.array([p.score for p in points], dtype=np.float64)
    n, mean = len(y), float(y.mean())
    sd = float(np.std(y, ddof=1))
    # every run scored the same: the t interval degenerates to the point (scipy would return nan)
    lo, hi = sps.t.interval(1 - alpha, n - 1, loc=mean, scale=sd / math.sqrt(n)) if sd > 0 else (mean, mean)
    ci, cut = cut_to_range(float(lo), float(hi), kind)
    ses = [p.se for p in points if p.se is not None]
    within = float(np.mean(ses)) if len(ses) == len(points) else None
    froms = sorted({p.se_from for p in points if p.se_from})
    outlier, sd_without = one_outlier(y, [p.run for p in points])
    return SeedRow(task=task, metric=metric, unit=kind.display_unit, direction=kind.direction, n_runs=n, mean=mean,
                   sd=sd, ci=ci, cut=cut, outlier=outlier, sd_without_outlier=sd_without, low=float(y.min()),
                   high=float(y.max()), within_se=within, within_se_from=" and ".join(froms) if within is not None
                   else None, sd_over_se=sd / within if within else None, split=split, points=points)


def cut_to_range(lo: float, hi: float, kind: MetricKind) -> tuple[tuple[float, float], str]:
    """``(lo, hi)`` cut to the range a score of ``kind`` can take (display unit), and a note of what was cut (empty:
    nothing)."""
    low = None if kind.low is None else kind.low * kind.scale
    high = None if kind.high is None else kind.high * kind.scale
    parts = []
    if low is not None and lo < low:
        parts.append(f"low end {lo:.6g} below the metric's least value {low:g}")
        lo = low
    if high is not None and hi > high:
        parts.append(f"high end {hi:.6g} above the metric's greatest value {high:g}")
        hi = high
    return (lo, hi), ("t interval cut to the metric's range (" + "; ".join(parts) + ")" if parts else "")


def one_outlier(y: np.ndarray, names: list[str]) -> tuple[str | None, float | None]:
    """The run whose removal leaves less than half of the sample standard deviation (the one that alone drives the
    spread), and the sd without it; ``(None, None)`` with fewer than 5 runs (with 3 or 4, leaving one out says little
    about the rest) or none such."""
    if len(y) < 5:
        return None, None
    sd = float(np.std(y, ddof=1))
    if sd == 0:
        return None, None
    without = [float(np.std(np.delete(y, i), ddof=1)) for i in range(len(y))]
    i = int(np.argmin(without))
    return (names[i], without[i]) if without[i] < 0.5 * sd else (None, None)


def model_row(task: str, metric: str, kind: MetricKind, by_model: dict[str, list[Point]], last: int) -> ModelRow:
    """Signal, noise and SNR of one task × metric across models (Heineman et al. 2025; module docstring).

    Args:
        by_model: model -> its points (two or more models); a model whose points all have steps contributes its
            last step's score and its last ``last`` checkpoints as noise, one without steps the mean of its runs
            and all of them as noise.
    """
    finals, noise_sets, used = {}, [], []
    for model, pts in by_model.items():
        if all(p.step is not None for p in pts):
            pts = sorted(pts, key=lambda p: (p.step, p.run))
            top = pts[-1].step
            finals[model] = float(np.mean([p.score for p in pts if p.step == top]))
            tail = pts[-last:]
            what = f"{model} steps {tail[0].step}–{tail[-1].step} ({len(tail)} checkpoints)"
        else:
            finals[model] = float(np.mean([p.score for p in pts]))
            tail, what = pts, f"{model} {len(pts)} runs (no steps: seeds)"
        if len(tail) >= 2:
            noise_sets.append(np.array([p.score for p in tail], dtype=np.float64))
            used.append(what)
    f = np.array(list(finals.values()))
    signal, mbar = float(f.max() - f.min()), float(f.mean())
    rel_signal = signal / mbar if mbar > 0 else None
    noise = rel_noise = None
    if noise_sets:
        noise = math.sqrt(float(np.mean([np.var(x, ddof=1) for x in noise_sets])))
        nbar = float(np.mean(np.concatenate(noise_sets)))
        rel_noise = noise / nbar if nbar > 0 else None
    note = ("one model left in this row: no spread between models to measure" if len(finals) < 2 else
            "no model has two runs to measure noise on (give several checkpoints or seeds of a model)"
            if not noise_sets else "a mean score is not positive: relative dispersion is undefined"
            if rel_signal is None or rel_noise is None else "the noise is 0: the last scores are identical"
            if rel_noise == 0 else "")
    # no note: both relative dispersions are defined and the noise is not 0
    snr = rel_signal / rel_noise if not note and rel_signal is not None and rel_noise is not None else None
    return ModelRow(task=task, metric=metric, unit=kind.display_unit, direction=kind.direction, n_models=len(finals),
                    finals=finals, signal=signal, rel_signal=rel_signal, noise=noise, rel_noise=rel_noise,
                    noise_from="; ".join(used) or "no model has two runs",
                    snr=snr, note=note,
                    points=[p for pts in by_model.values() for p in pts])
