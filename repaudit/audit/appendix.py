"""What a paper appendix holds, from the run files and the reports given: every run's scores with (1 − alpha)
intervals, the comparisons asked for, and the attribution, variance and sweep reports read back from their JSON.

A run's score interval (Efron & Tibshirani 1993; for evals Miller 2024, arXiv 2411.00640, §3):

* **bootstrap over docs** — the run's file has a finite per-doc value of a mean-aggregated metric for every doc
  whose mean is the reported score: the percentile bootstrap of the mean (whole clusters resampled where every
  doc carries one, e.g. an MMLU subject; :func:`repaudit.audit.stats.bootstrap_mean`);
* **normal from the recorded stderr** — otherwise, where the file records a positive finite stderr:
  ``score ± z₁₋α/₂ · stderr``, cut to the metric's range;
* **none** — neither (a corpus-level metric without a stderr).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from repaudit.audit.attribution import AttributionReport
from repaudit.audit.compare import Comparison
from repaudit.audit.labels import given_twice
from repaudit.audit.series import SeriesReport
from repaudit.audit.stat_settings import COMMANDS, StatSettings, for_command
from repaudit.audit.stats import bootstrap_mean
from repaudit.audit.sweep import SweepResult
from repaudit.audit.variance import VarianceReport
from repaudit.errors import RepauditError, UsageError
from repaudit.importers.comparable import ComparableRun, TaskOutcome

Method = Literal["bootstrap over docs", "bootstrap over clusters", "normal from the recorded stderr", "none"]


class ScoreLine(BaseModel):
    """One run's score of one task and metric with its (1 − alpha) interval, in the metric's display unit (points
    for proportions)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    run: str
    """The run's name."""
    task: str
    """The task as the file names it."""
    metric: str
    """The metric key."""
    unit: str
    """``pts`` for proportions and percentages, else the metric's own unit."""
    direction: str
    """``higher``, ``lower`` or ``unknown`` is better."""
    score: float
    """The reported score."""
    ci_low: float | None
    """Lower end of the interval; None: no interval (``method`` none)."""
    ci_high: float | None
    """Upper end of the interval; None as ``ci_low``."""
    n_docs: int | None
    """Docs the score is over; None: not recorded."""
    method: Method
    """How the interval was computed (module docstring)."""


@dataclass
class Appendix:
    """Everything one appendix shows.

    Attributes:
        runs: the run files as compare reads them, in the order given.
        names: each run's name in every table (``--names``, else :func:`run_names`).
        alpha: every interval computed here is (1 − alpha), two-sided.
        n_boot: bootstrap replicates per score (each comparison: at least 1000, its own ``stat_settings``).
        stat_settings: how the scores' intervals were made (``alpha``, ``n_boot`` and the bootstrap's seed).
        scores: every run's scores with their intervals (:func:`run_scores`).
        comparisons: ``compare`` of each pair asked for, at ``alpha``.
        attributions, variances, sweeps: the reports read back from their ``--json`` files (a variance report of a
            grid, or of a series with ``--across``).
    """

    runs: list[ComparableRun]
    names: list[str]
    alpha: float
    n_boot: int
    stat_settings: StatSettings
    scores: list[ScoreLine]
    comparisons: list[Comparison] = field(default_factory=list)
    attributions: list[AttributionReport] = field(default_factory=list)
    variances: list[VarianceReport | SeriesReport] = field(default_factory=list)
    sweeps: list[SweepResult] = field(default_factory=list)


def _interval(t: TaskOutcome, metric: str, stat: StatSettings):
    """(score, low, high, docs, method) of one task × metric in its display unit, and its kind."""
    from repaudit.audit.scores import side_kind

    kind, alpha = side_kind(metric, t), stat.alpha
    value, stderr = t.reported[metric]
    s = kind.scale
    docs = list((t.docs or {}).values())
    vals = [v for d in docs if (v := d.metrics.get(metric)) is not None]
    if (kind.aggregation == "mean" and docs and len(vals) == len(docs) and all(math.isfinite(v) for v in vals)
            and math.isclose(float(np.mean(vals)), value, rel_tol=1e-6, abs_tol=1e-9)):
        clusters = [d.cluster for d in docs]
        whole = all(c is not None for c in clusters)
        n_boot, boot_seed = stat.bootstrap()
        b = bootstrap_mean(np.array(vals), np.array(clusters) if whole else None, n_boot, alpha, seed=boot_seed)
        how = "bootstrap over clusters" if whole else "bootstrap over docs"
        return (s * value, s * b.ci_low, s * b.ci_high, len(docs), how), kind
    n = len(docs) or t.n_docs
    if stderr is not None and math.isfinite(stderr) and stderr > 0:
        z = float(sps.norm.ppf(1 - alpha / 2))
        lo, hi = value - z * stderr, value + z * stderr
        lo = lo if kind.low is None else max(lo, kind.low)
        hi = hi if kind.high is None else min(hi, kind.high)
        return (s * value, s * lo, s * hi, n, "normal from the recorded stderr"), kind
    return (s * value, None, None, n, "none"), kind


def run_scores(run: ComparableRun, name: str, stat: StatSettings) -> list[ScoreLine]:
    """Every finite reported score of ``run`` with its interval (module docstring; ``stat``: alpha and the
    bootstrap), tasks in the file's order."""
    out = []
    for task, t in run.tasks.items():
        for metric, (value, _) in t.reported.items():
            if value is None or not math.isfinite(value):
                continue
            (score, lo, hi, n, how), kind = _interval(t, metric, stat)
            out.append(ScoreLine(run=name, task=t.source_name or task, metric=metric, unit=kind.display_unit,
                                 direction=kind.direction, score=score, ci_low=lo, ci_high=hi, n_docs=n, method=how))
    return out


def run_names(runs: list[ComparableRun], given: list[str] | None) -> list[str]:
    """The runs' names: ``given`` (one per run), else each file's name without its suffix, with its folders where
    two are alike.

    Raises:
        UsageError: ``given`` names a different number of runs, or twice the same name.
    """
    if given:
        if len(given) != len(runs):
            raise UsageError(f"--names gives {len(given)} name(s) for {len(runs)} run(s): give one different name per "
                             "run, comma-separated")
        twice = sorted({n for n in given if given.count(n) > 1})
        if twice:
            raise UsageError(f"--names gives {', '.join(repr(n) for n in twice)} to more than one run "
                             f"({len(set(given))} distinct of {len(given)}): give one different name per run")
        return list(given)
    from repaudit.audit.labels import _STAMP

    paths = [Path(r.path) for r in runs]
    names = [_STAMP.sub("", p.stem).strip("_-.") or p.name for p in paths]
    for n in sorted({n for n in names if names.count(n) > 1}):
        # alike (lm-eval's results_<time>.json): the nearest folder that tells these apart
        idx = [i for i, x in enumerate(names) if x == n]
        for depth in range(1, max(len(paths[i].parts) for i in idx)):
            folders = [paths[i].parts[-depth - 1] if len(paths[i].parts) > depth else n for i in idx]
            if len(set(folders)) == len(folders):
                for i, f in zip(idx, folders):
                    names[i] = f
                break
    return names if len(set(names)) == len(names) else [f"{n} #{i}" for i, n in enumerate(names, 1)]


def pick(token: str, names: list[str]) -> int:
    """The run ``--compare`` names: its name, or its 1-based position.

    Raises:
        UsageError: no such run.
    """
    if token in names:
        return names.index(token)
    if token.isdigit() and 1 <= int(token) <= len(names):
        return int(token) - 1
    raise UsageError(f"--compare '{token}' names no run: give a run's name ({', '.join(names)}) or its position "
                     f"(1–{len(names)})")


def read_report(path: Path, kind: str):
    """A report written by ``attribute``, ``variance`` or ``sweep`` with ``--json`` (``kind`` says which was
    asked for), read through the input boundary.

    Raises:
        RepauditError: not such a report (one line naming what is wrong).
    """
    from repaudit.boundary import read_json, validate

    obj = read_json(path, what=f"{kind} report")
    if not isinstance(obj, dict):
        raise RepauditError(f"'{path}' is not a repaudit {kind} report (a JSON object)")
    models: dict[str, type[BaseModel]] = {"attribution": AttributionReport, "sweep": SweepResult}
    model = models.get(kind)
    if model is None:
        model = SeriesReport if "across" in obj else VarianceReport
    # a report's JSON writes a NaN number (no doc to compare) as null: read it back as NaN
    obj = {k: float("nan") if v is None and k in model.model_fields and model.model_fields[k].annotation is float
           else v for k, v in obj.items()}
    return validate(model, obj, path)[0]


@dataclass
class Requested:
    """What an appendix is built from (the command line).

    Attributes:
        paths: the run files.
        names: one name per run, or None for :func:`run_names`' own.
        pairs: the runs to compare, each by name or 1-based position.
        attributions, variances, sweeps: JSON reports of ``attribute``, ``variance`` and ``sweep``.
        stat: alpha and the bootstrap of every interval computed here (appendix's defaults: α 0.05, 2000
            resamples, seed 0).
    """

    paths: list[Path]
    names: list[str] | None = None
    pairs: list[tuple[str, str]] = field(default_factory=list)
    attributions: list[Path] = field(default_factory=list)
    variances: list[Path] = field(default_factory=list)
    sweeps: list[Path] = field(default_factory=list)
    stat: StatSettings = COMMANDS["appendix"].defaults


def build_appendix(req: Requested) -> Appendix:
    """Read every run and report of ``req`` and compute what the appendix shows.

    Raises:
        UsageError: a statistics setting out of range, names that do not fit the runs, a pair naming no run or one
            run twice.
        RepauditError: a file that cannot be read as what it is given for; a pair without a shared task.
    """
    from repaudit.audit.compare import compare
    from repaudit.importers.detect import load_run

    stat = for_command("appendix", req.stat)
    if not req.paths:
        raise UsageError("give at least one run file")
    twice = given_twice(req.paths)
    if twice is not None:
        raise UsageError(f"runs {twice[0] + 1} and {twice[1] + 1} are the same file ('{req.paths[twice[1]]}'): give "
                         "each run once")
    runs = [load_run(p) for p in req.paths]
    names = run_names(runs, req.names)
    pairs = list(dict.fromkeys((pick(a, names), pick(b, names)) for a, b in req.pairs))
    if any(i == j for i, j in pairs):
        raise UsageError("--compare takes two different runs")
    n_boot, _ = stat.bootstrap()
    out = Appendix(runs=runs, names=names, alpha=stat.alpha, n_boot=n_boot, stat_settings=stat,
                   scores=[x for r, n in zip(runs, names) for x in run_scores(r, n, stat)])
    out.comparisons = [compare(runs[i], runs[j], stat, n_boot=max(n_boot, 1000), names=(names[i], names[j]))
                       for i, j in pairs]
    out.attributions = [read_report(p, "attribution") for p in req.attributions]
    out.variances = [read_report(p, "variance") for p in req.variances]
    out.sweeps = [read_report(p, "sweep") for p in req.sweeps]
    return out
