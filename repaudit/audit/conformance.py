"""Conformance: does a run follow a published protocol? (``repaudit compare RUN PROTOCOL.yaml``)

For each task of the run that the protocol defines, every factor the protocol fixes is looked up
in the run's factors (:mod:`repaudit.importers.factors`) and judged ``conforms``, ``deviates``,
``unknown`` (the run does not record it) or ``n/a`` (the setting does not apply to the run — a few-shot seed
of a 0-shot run: neither a conformance nor a deviation, and never counted as one). Scores are converted when the
protocol shows leaderboard-normalised scores and the run raw ones.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.errors import RepauditError
from repaudit.importers.comparable import ComparableRun
from repaudit.run.normalise import leaderboard_normalise
from repaudit.run.protocol import Protocol
from repaudit.vocabulary import Recorded, shown

#: a value the run's file does not record
UNKNOWN = "<not recorded>"

Status = Literal["conforms", "deviates", "unknown", "n/a"]


class ConformanceRow(BaseModel):
    """One fixed factor of one task: the protocol's value and source, the run's value, the status."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    task: str
    """The run's task."""
    factor: str
    """The factor the protocol fixes (its registry name)."""
    protocol_value: Any
    """The protocol's value."""
    run_value: Any
    """The run's value (for ``metric`` and ``aggregation``: the metric keys it reports); ``<not recorded>`` where
    the run does not record it."""
    status: Status
    """conforms, deviates, unknown (the run does not record it, or it cannot be told), or n/a (the setting does not
    apply to the run: a few-shot seed of a 0-shot run; not a deviation)."""
    source: str
    """Where the protocol states the value: the source's URL and section."""
    note: str = ""
    """Why the status was given, and the protocol's own note; empty: none."""


class ScoreView(BaseModel):
    """A reported score of the run as the protocol would show it."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    task: str
    """The run's task."""
    metric: str
    """The metric key as the run reports it."""
    raw: float
    """The run's reported value, in the run's own scale (a fraction 0–1 for lm-eval's accuracies)."""
    shown: float | None
    """The value leaderboard-normalised against the random-guess baseline, where the protocol shows normalised scores
    and the run raw ones; None: the protocol's form is the run's own (or no baseline is known)."""
    form: str
    """How the protocol shows scores: raw or leaderboard_normalised."""


class Conformance(BaseModel):
    """The result of :func:`conformance`: rows per task, unspecified factors, converted scores."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    run: str
    """The run file's path."""
    run_source: str
    """What wrote the run: the harness and its version."""
    protocol: str
    """The protocol's name."""
    protocol_title: str
    """The protocol's title."""
    protocol_sha256: str
    """sha256 of the validated protocol's canonical JSON."""
    tasks: list[str]
    """The run's tasks the protocol defines, sorted."""
    not_in_protocol: list[str]
    """The run's tasks the protocol does not define."""
    rows: list[ConformanceRow]
    """One row per task and fixed factor."""
    unspecified: dict[str, list[str]]
    """Task → the factors the protocol's sources leave unsaid."""
    scores: list[ScoreView]
    """The run's reported scores (the protocol's metric only, where it names one) as the protocol shows them."""

    def deviations(self) -> list[ConformanceRow]:
        """The rows that deviate (never one whose setting does not apply to the run)."""
        return [r for r in self.rows if r.status == "deviates"]


#: protocol files' older names of acc_norm normalisations -> the run's
_ACC_NORM_ALIASES = {"bytes": "byte_length", "tokens": "token_length"}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return _ACC_NORM_ALIASES.get(a, a) == _ACC_NORM_ALIASES.get(b, b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
    return a == b


def _run_value(factor: str, value: Any, rec: Recorded, reported: dict, source: str) -> tuple[Any, Status, str]:
    """The run's value of ``factor`` and the status against the protocol's ``value`` (a harness default the file
    records the version of is the run's value, and the note says so)."""
    if factor == "metric":
        keys = sorted(reported)
        ok = value in reported or (value == "exact_match" and any(k.startswith("exact_match") for k in keys))
        return keys, ("conforms" if ok else "deviates"), "" if ok else f"the run reports no {value}"
    if factor == "aggregation":
        metrics = {k.split(",")[0] for k in reported}
        ok = any(f"{m},{value}" in reported for m in metrics) or (value == "micro" and bool(metrics))
        return sorted(reported), ("conforms" if ok else "unknown"), "" if ok else f"no {value} aggregate reported"
    if factor == "formulation":
        return UNKNOWN, "unknown", "a single run cannot show which formulation a protocol would pick"
    from repaudit.run.factors import get

    path = get(factor).path  # where the vocabulary holds the factor
    v = rec.get(path) if path else None
    if v is not None and v.source == "not_applicable":  # a setting that does not apply is never a deviation
        if value in (None, False):
            return f"n/a ({v.note})", "conforms", ""
        return f"n/a ({v.note})", "n/a", "does not apply to this run: neither conforms nor deviates"
    got = v.value if v is not None and v.known else UNKNOWN
    note = shown(v) if v is not None and v.source in ("default", "derived") else ""
    if factor == "fewshot_selection" and got in ("random", "first_n", "samples", "none", "default"):
        got = "random" if got == "default" else got
        return got, ("conforms" if got == value else "deviates"), note
    if factor == "limit" and got is None:
        return got, "deviates", f"the run evaluated every doc; the protocol samples {value}"
    if got == UNKNOWN:
        return got, "unknown", "not recorded by the run"
    if factor == "batch_size" and value == "auto":
        return got, "unknown", "'auto' picks a size per machine"
    return got, ("conforms" if _same(got, value) else "deviates"), note


def conformance(run: ComparableRun, proto: Protocol) -> Conformance:
    """Check every task of ``run`` that ``proto`` defines against the protocol's fixed factors.

    Raises:
        RepauditError: the protocol defines none of the run's tasks.
    """
    rows: list[ConformanceRow] = []
    tasks, missing, unspecified, scores = [], [], {}, []
    for task, factors in sorted(run.factors.items()):
        if proto.task_key(task) is None:
            missing.append(task)
            continue
        tasks.append(task)
        outcome = run.tasks.get(task)
        reported = outcome.reported if outcome else {}
        for factor, s in proto.settings_for(task).items():
            got, status, note = _run_value(factor, s.value, factors, reported, run.source)
            rows.append(ConformanceRow(task=task, factor=factor, protocol_value=s.value, run_value=got, status=status,
                                       source=f"{proto.sources[s.source].url} ({proto.sources[s.source].section})",
                                       note="; ".join(x for x in (note, s.note or "") if x)))
        unspecified[task] = proto.unspecified_for(task)
        scores += _scores(task, reported, factors, proto)
    if not tasks:
        raise RepauditError(f"protocol {proto.name} defines none of this run's tasks "
                            f"({', '.join(sorted(run.factors))}); it defines: {', '.join(proto.tasks)}")
    return Conformance(run=run.path, run_source=run.source, protocol=proto.name, protocol_title=proto.title,
                       protocol_sha256=proto.sha256(), tasks=tasks, not_in_protocol=missing, rows=rows,
                       unspecified=unspecified, scores=scores)


def _scores(task: str, reported: dict, rec: Recorded, proto: Protocol) -> list[ScoreView]:
    settings = proto.settings_for(task)
    metric = settings["metric"].value if "metric" in settings else None
    run_form = rec.value("scoring.score_normalisation", UNKNOWN)
    baseline = settings["random_baseline"].value if "random_baseline" in settings else \
        rec.value("metric.random_baseline")
    out = []
    for key, (value, _se) in sorted(reported.items()):
        if metric is not None and key != metric:
            continue
        if not isinstance(value, (int, float)) or not math.isfinite(value) or "+leaderboard_normalised" in key:
            continue
        shown = None
        if (proto.reports == "leaderboard_normalised" and run_form in ("raw", UNKNOWN)
                and isinstance(baseline, (int, float)) and 0 <= baseline < 1):
            shown = leaderboard_normalise(float(value), float(baseline))
        out.append(ScoreView(task=task, metric=key, raw=float(value), shown=shown, form=proto.reports))
    return out
