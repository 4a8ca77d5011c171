"""A series of runs — checkpoints of one training run, training seeds of one configuration, or several
models — and what each benchmark (task × metric) does across it: ``repaudit variance FILE… --across``.

Order of work: each run is described (step, series, what its name claims; :mod:`repaudit.audit.series_runs`);
the task × metric keys every run reports are kept, the rest listed as left out; per key, the runs that scored
other docs are left out with the reason; the points are measured (:mod:`repaudit.audit.series_stats`: Kendall
tau-b over checkpoints, seed spread with its t interval, signal-to-noise across models, each with its source);
the settings that differ between runs are listed as confounders; repeated steps are flagged.
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.noise import NoiseSplit, split_noise
from repaudit.audit.series_runs import (
    Across,
    Confounder,
    LeftOut,
    SeriesRun,
    confounders,
    describe_runs,
    doc_check,
)
from repaudit.audit.series_stats import (
    CheckpointRow,
    ModelRow,
    Point,
    SeedRow,
    checkpoint_row,
    model_row,
    seed_row,
)
from repaudit.audit.stat_settings import StatSettings, for_command
from repaudit.audit.stats import bootstrap_mean, level
from repaudit.errors import RepauditError, UsageError
from repaudit.importers.comparable import ComparableRun
from repaudit.importers.metric_kinds import MetricKind, metric_kind

ALL_RUNS = "all runs"


class SeriesReport(BaseModel):
    """Everything ``repaudit variance FILE… --across`` found (also its ``--format json``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    across: Across
    """What varies between the runs: ``checkpoint``, ``seed`` or ``model``."""
    last: int
    """``--last``: checkpoints in the noise window."""
    n_boot: int
    """Bootstrap replicates per run (per-doc values only)."""
    alpha: float = 0.05
    """Every interval (per run over docs; the seed mean's t interval) is (1 − alpha), two-sided."""
    stat_settings: StatSettings | None = None
    """How the intervals were made (``alpha`` and ``n_boot`` above, the bootstrap's seed; ``adjust`` none: each
    row's p-value stands alone); None: not recorded (older report)."""
    runs: list[SeriesRun]
    """Every file, as the series reads it."""
    checkpoint: list[CheckpointRow] = []
    """``--across checkpoint``: rows ranked by ``|kendall_tau|`` (most monotone first, either way)."""
    seed: list[SeedRow] = []
    """``--across seed``: rows by task and metric."""
    model: list[ModelRow] = []
    """``--across model``: rows ranked by ``snr`` (highest first)."""
    confounders: list[Confounder] = []
    """Settings that differ between runs of a series."""
    duplicates: list[str] = []
    """Steps that more than one run of a series claims (kept as tied steps), one line each."""
    left_out: list[LeftOut] = []
    """Tasks, rows and runs left out, with the reason."""
    notes: list[str] = []
    """Anything else the reader needs."""


Member = tuple[SeriesRun, ComparableRun]


def series(runs: list[ComparableRun], across: Across, last: int = 5, step_from: str | None = None,
           tasks: list[str] | None = None, stat: StatSettings | None = None, **changes: Any) -> SeriesReport:
    """Measure every task × metric that all ``runs`` report, across checkpoints, seeds or models (see the module
    docstring).

    Args:
        runs: two or more runs as :func:`repaudit.importers.detect.load_run` reads them.
        last: checkpoints in the noise window (k ≥ 2).
        step_from: a regular expression with one group that reads the step from a file name where the run
            records none.
        tasks: only tasks matching one of these ``fnmatch`` patterns.
        stat: alpha (every interval is (1 − alpha), two-sided) and the bootstrap of each run with per-doc values
            (``variance --across``'s defaults where None: 2000 resamples, seed 0); ``changes`` override its fields.

    Raises:
        RepauditError: fewer than two runs; no task × metric reported by all of them; a checkpoint series with a
            run whose step is not recorded; a model series of one model; ``last`` or ``step_from`` out of range.
        UsageError: a statistics setting out of range.
    """
    stat = for_command("series", stat, **changes)
    _check(runs, across, last)
    members = list(zip(describe_runs(runs, step_from), runs))
    if across == "checkpoint":
        _need_steps(members)
    keys, left = _shared(members, tasks)
    groups = _groups(members, across)
    if across == "model" and len(groups) < 2:
        raise RepauditError(f"--across model needs runs of two or more models: all {len(runs)} files record "
                            f"'{next(iter(groups))}' (for one model's checkpoints: --across checkpoint)")
    report = SeriesReport(across=across, last=last, n_boot=stat.n_boot, alpha=stat.alpha, stat_settings=stat,
                          runs=[s for s, _ in members], left_out=left)
    pools = {ALL_RUNS: members} if across != "checkpoint" else groups
    for series_name, pool in pools.items():
        if across == "checkpoint" and len(pool) < 2:
            report.notes.append(f"{series_name}: one checkpoint only ({pool[0][0].name}): no trend")
            continue
        _measure(report, series_name, pool, groups, keys, across, last)
        row_tasks = list(dict.fromkeys(t for t, _ in keys))
        label = series_name if across == "checkpoint" else _one_name(pool)
        report.confounders += confounders(label, pool, row_tasks, across)
    if across == "checkpoint" and not report.checkpoint:
        raise RepauditError("no series has two checkpoints with a task × metric in common: a checkpoint series "
                            "needs two or more runs of one model")
    report.duplicates = _duplicates(groups) if across != "seed" else []
    _rank(report)
    report.notes += _notes(report)
    return report


def _check(runs: list[ComparableRun], across: str, last: int) -> None:
    if across not in ("checkpoint", "seed", "model"):
        raise UsageError(f"--across must be checkpoint, seed or model, got '{across}'")
    if len(runs) < 2:
        got = f" ('{runs[0].path}')" if runs else ""
        raise UsageError(f"--across {across} needs two or more run files, got {len(runs)}{got}")
    if not 2 <= last <= 10_000:
        raise UsageError(f"--last must be between 2 and 10000 checkpoints (a standard deviation needs two), "
                            f"got {last}")


def _need_steps(members: list[Member]) -> None:
    missing = [(s, r) for s, r in members if s.step is None]
    if missing:
        first, run = missing[0]
        revisions = {str(v) for rec in run.factors.values()
                     if rec.source("model.revision") == "recorded" and (v := rec["model.revision"].value) is not None}
        more = f" and {len(missing) - 1} more file(s)" if len(missing) > 1 else ""
        raise RepauditError(f"'{first.path}'{more} record no training step (model revision: "
                            f"{', '.join(sorted(revisions)) or 'not recorded'}): a checkpoint series needs "
                            "revision=stepN in the model arguments (or a recorded step: GPT-NeoX's "
                            "model_args.iteration), or --step-from REGEX to read it from the file name or its folder")


def _shared(members: list[Member], patterns: list[str] | None) -> tuple[list[tuple[str, str]], list[LeftOut]]:
    """The task × metric keys every run reports (in the first run's order, tasks sorted), and what is left out."""
    def keep(task: str) -> bool:
        return not patterns or any(fnmatch.fnmatchcase(task, p) for p in patterns)

    per_run = [{(t, m) for t, o in r.tasks.items() for m in o.reported if keep(t)} for _, r in members]
    common = set.intersection(*per_run)
    if not common:
        if patterns and not any(per_run):
            raise RepauditError(f"--task {','.join(patterns)} matches no task of the {len(members)} files")
        listed = "; ".join(f"'{s.path}' reports {_few(sorted({t for t, _ in keys}))}"
                           for (s, _), keys in list(zip(members, per_run))[:3])
        raise RepauditError(f"no task × metric is reported by all {len(members)} files ({listed}"
                            + ("; …" if len(members) > 3 else "") + "): a series compares one benchmark across runs")
    first = members[0][1]
    keys = sorted(common, key=lambda k: (k[0], list(first.tasks[k[0]].reported).index(k[1])))
    left = []
    for key in sorted(set.union(*per_run) - common):
        lacking = [s.name for (s, _), have in zip(members, per_run) if key not in have]
        shared_task = any(t == key[0] for t, _ in common)
        left.append(LeftOut(series=None, task=key[0], metric=key[1] if shared_task else None, runs=[],
                            reason=f"not reported by {len(lacking)} of {len(members)} runs ({_few(lacking, 2)})"))
    return keys, _merge_tasks(left)


def _merge_tasks(left: list[LeftOut]) -> list[LeftOut]:
    """One entry per whole task missing from some runs (its metrics folded together)."""
    out: dict[tuple, LeftOut] = {}
    for x in left:
        out.setdefault((x.task, x.metric, x.reason), x)
    return list(out.values())


def _few(names: list[str], k: int = 3) -> str:
    return ", ".join(names[:k]) + (f", … ({len(names)})" if len(names) > k else "") if names else "nothing"


def _groups(members: list[Member], across: str) -> dict[str, list[Member]]:
    out: dict[str, list[Member]] = {}
    for m in members:
        out.setdefault(m[0].series, []).append(m)
    return out


def _one_name(pool: list[Member]) -> str:
    names = {s.series for s, _ in pool}
    return names.pop() if len(names) == 1 else ALL_RUNS


def _measure(report: SeriesReport, series_name: str, pool: list[Member], groups: dict[str, list[Member]],
             keys: list[tuple[str, str]], across: str, last: int) -> None:
    """The rows of one pool of runs (one checkpoint series, or every run of a seed or model series)."""
    kept_by_task: dict[str, list[Member]] = {}
    for task, metric in keys:
        if task not in kept_by_task:
            kept, out = doc_check(task, pool)
            kept_by_task[task] = kept
            for reason in dict.fromkeys(why for _, why in out):
                report.left_out.append(LeftOut(series=series_name, task=task, metric=None,
                                               runs=[name for name, why in out if why == reason], reason=reason))
        members = kept_by_task[task]
        kind = _kind(task, metric, members)
        if report.stat_settings is None:  # series() sets it before any row
            raise ValueError("a series report's rows need its statistics settings")
        points, bad = _points(task, metric, members, kind, report.stat_settings)
        if bad:
            report.left_out.append(LeftOut(series=series_name, task=task, metric=metric, runs=bad,
                                           reason="the reported score is not a finite number"))
        if len(points) < 2:
            report.left_out.append(LeftOut(series=series_name, task=task, metric=metric, runs=[],
                                           reason=f"{len(points)} run(s) left to measure: no row"))
        elif across == "checkpoint":
            report.checkpoint.append(checkpoint_row(series_name, task, metric, kind, points, last))
        elif across == "seed":
            report.seed.append(seed_row(task, metric, kind, points, report.alpha, _split(task, metric, members, kind)))
        else:
            by_model = {name: [p for p in points if p.series == name] for name in groups}
            report.model.append(model_row(task, metric, kind, {k: v for k, v in by_model.items() if v}, last))


def _kind(task: str, metric: str, members: list[Member]) -> MetricKind:
    """The metric's kind over the whole series (a proportion reported above 1 anywhere is a percentage); the
    files' own direction where they record one and agree, unknown where they disagree."""
    values = [r.tasks[task].reported[metric][0] for _, r in members]
    flags = {r.tasks[task].higher_is_better[metric] for _, r in members if metric in r.tasks[task].higher_is_better}
    kind = metric_kind(metric, values, flags.pop() if len(flags) == 1 else None)
    return replace(kind, direction="unknown", source="conflict") if len(flags) > 1 else kind


def _points(task: str, metric: str, members: list[Member], kind: MetricKind, stat: StatSettings
            ) -> tuple[list[Point], list[str]]:
    """One point per run with a finite score (display unit), with a bootstrap interval and SE over docs where the
    run has a per-doc value of a mean-aggregated metric for every doc; the labels of runs without a finite score."""
    points, bad = [], []
    for s, r in members:
        t = r.tasks[task]
        value, stderr = t.reported[metric]
        if not math.isfinite(value):
            bad.append(s.name)
            continue
        p = Point(run=s.name, series=s.series, step=s.step, score=kind.scale * value)
        docs = list((t.docs or {}).values())
        vals = [d.metrics.get(metric) for d in docs]
        if kind.aggregation == "mean" and docs and all(v is not None and math.isfinite(v) for v in vals):
            clusters = [d.cluster for d in docs]
            n_boot, boot_seed = stat.bootstrap()
            b = bootstrap_mean(np.array(vals, dtype=np.float64),
                               np.array(clusters) if all(c is not None for c in clusters) else None, n_boot,
                               stat.alpha, seed=boot_seed)
            p.ci_low, p.ci_high, p.se, p.se_from = (kind.scale * b.ci_low, kind.scale * b.ci_high, kind.scale * b.se,
                                                    "bootstrap over docs")
        elif stderr is not None and math.isfinite(stderr):
            p.se, p.se_from = kind.scale * stderr, "reported stderr"
        points.append(p)
    return points, bad


def _split(task: str, metric: str, members: list[Member], kind: MetricKind) -> NoiseSplit | None:
    """Prediction vs data noise of a seed row, in its display unit: where every run has a finite per-doc value of
    a mean-aggregated metric on the same docs (two or more); else None."""
    docs = [r.tasks[task].docs or {} for _, r in members]
    ids = sorted(set.intersection(*(set(d) for d in docs))) if all(docs) else []
    if kind.aggregation != "mean" or len(ids) < 2 or any(len(d) != len(ids) for d in docs):
        return None
    x = kind.scale * np.array([[d[i].metrics.get(metric, math.nan) for d in docs] for i in ids], dtype=np.float64)
    return split_noise(x) if np.all(np.isfinite(x)) else None


def _duplicates(groups: dict[str, list[Member]]) -> list[str]:
    out = []
    for name, pool in groups.items():
        counts = Counter(s.step for s, _ in pool if s.step is not None)
        for step, n in sorted(counts.items()):
            if n > 1:
                runs = [s.name for s, _ in pool if s.step == step]
                out.append(f"{name}: step {step} is claimed by {n} runs ({', '.join(runs)}); kept as tied steps")
    return out


def _rank(report: SeriesReport) -> None:
    """Checkpoint rows most monotone first — the largest |tau| either way, improving before worsening at a tie —,
    model rows by SNR (highest first); missing last."""
    report.checkpoint.sort(key=lambda r: (r.kendall_tau is None, -abs(r.kendall_tau or 0.0), -(r.kendall_tau or 0.0),
                                          r.series, r.task))
    report.model.sort(key=lambda r: (r.snr is None, -(r.snr or 0.0), r.task, r.metric))


def _notes(report: SeriesReport) -> list[str]:
    notes = []
    named = [s for s in report.runs if s.contradictions]
    if named:
        listed = _few([s.name for s in named])
        notes.append(f"{len(named)} file(s) record settings that contradict their names ({listed}): each is read as "
                     "it records them")
    differing = [c for c in report.confounders if not c.by_design]
    if differing:
        fields = list(dict.fromkeys(c.path for c in differing))
        notes.append(f"settings differ between runs of a series ({', '.join(fields)}): every score moved by them "
                     "as well as by what the series varies")
    points = [p for rows in (report.checkpoint, report.seed, report.model) for r in rows for p in r.points]
    if any(p.se_from == "bootstrap over docs" for p in points):
        notes.append(f"intervals per run: {level(report.alpha)} % percentile bootstrap over docs, {report.n_boot} "
                     "replicates (whole clusters where docs have one)")
    return notes
