"""Result objects as pandas DataFrames (for notebooks) and CSV tables (for spreadsheets).

Every frame is built from the same objects the terminal, Markdown, LaTeX and JSON reports read
(:class:`~repaudit.importers.comparable.ComparableRun`, :class:`~repaudit.audit.compare.Comparison`,
:class:`~repaudit.audit.attribution.AttributionReport`), one row per record, with the units of those
objects: per-doc metric values as the file holds them (0/1 for acc), score rows in their display unit
(``unit`` column: ``pts`` = percentage points), Shapley values in points.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from pydantic import BaseModel

    from repaudit.audit.attribution import AttributionReport
    from repaudit.audit.compare import Comparison
    from repaudit.audit.series import SeriesReport
    from repaudit.importers.comparable import ComparableRun

#: per-doc columns of :func:`docs_frame`, before one ``metric:<name>`` column per metric
DOC_COLUMNS = ("task", "doc", "doc_id", "doc_hash", "prompt_hash", "target", "cluster", "prediction", "generation",
               "finish", "generated_tokens")


def _cell(v: Any) -> Any:
    """A value a CSV cell can hold as is: lists and dicts become JSON text."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)


def docs_frame(run: ComparableRun) -> pd.DataFrame:
    """One row per (task, doc) of a run that has per-doc results; shape (docs, 10 + metrics).

    Columns: :data:`DOC_COLUMNS`, then ``metric:<name>`` per metric key (the file's own values: 0/1 for
    acc, a float for others). Tasks without per-doc results (a results file without samples) have no rows.
    """
    rows = []
    for task, outcome in run.tasks.items():
        for doc_id, d in sorted((outcome.docs or {}).items()):
            row = {"task": task, "doc": d.key or str(doc_id), "doc_id": doc_id, "doc_hash": d.doc_hash,
                   "prompt_hash": d.prompt_hash,
                   "target": d.target, "cluster": d.cluster, "prediction": _cell(d.prediction),
                   "generation": d.generation, "finish": d.finish, "generated_tokens": d.generated_tokens}
            row.update({f"metric:{m}": v for m, v in d.metrics.items()})
            rows.append(row)
    return pd.DataFrame(rows, columns=_columns(rows, DOC_COLUMNS))


def _columns(rows: list[dict], first: tuple[str, ...]) -> list[str]:
    extra = sorted({k for r in rows for k in r} - set(first))
    return [*first, *extra]


def paired_docs_frame(a: ComparableRun, b: ComparableRun, task_map: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per (task, doc, metric) that both runs scored, tasks paired as ``compare`` pairs them.

    Columns: ``task``, ``doc`` (the doc as its harness names it: inspect's sample id, HELM's instance id, else the
    doc id), ``doc_id``, ``metric``, ``a``, ``b``, ``delta`` (b − a, the metric's own unit),
    ``flipped`` (the value changed), ``same_doc`` / ``same_prompt`` (the recorded hashes agree; None where a
    run does not record them).

    Raises:
        RepauditError: a ``task_map`` pattern that pairs nothing (as in ``compare``).
    """
    from repaudit.audit.pairing import pair_tasks

    sets = pair_tasks(a, b, task_map)
    rows = []
    for task in sets.shared():
        da, db = sets.a.tasks[task].docs or {}, sets.b.tasks[task].docs or {}
        for doc_id in sorted(set(da) & set(db)):
            x, y = da[doc_id], db[doc_id]
            same_doc = None if x.doc_hash is None or y.doc_hash is None else x.doc_hash == y.doc_hash
            same_prompt = None if x.prompt_hash is None or y.prompt_hash is None else x.prompt_hash == y.prompt_hash
            for metric in [m for m in x.metrics if m in y.metrics]:
                va, vb = float(x.metrics[metric]), float(y.metrics[metric])
                rows.append({"task": task, "doc": x.key or y.key or str(doc_id), "doc_id": doc_id, "metric": metric,
                             "a": va, "b": vb, "delta": vb - va, "flipped": va != vb, "same_doc": same_doc,
                             "same_prompt": same_prompt})
    cols = ("task", "doc", "doc_id", "metric", "a", "b", "delta", "flipped", "same_doc", "same_prompt")
    return pd.DataFrame(rows, columns=list(cols))


def scores_frame(c: Comparison) -> pd.DataFrame:
    """The score table of a comparison: one row per (task, metric), every field of
    :class:`~repaudit.audit.scores.ScoreRow` (scores, Δ = B − A and the interval in ``unit``)."""
    rows = [{k: _cell(v) for k, v in r.model_dump().items()} for r in c.scores]
    return pd.DataFrame(rows, columns=_columns(rows, ("task", "metric", "unit", "direction", "a", "b", "delta",
                                                      "ci_low", "ci_high", "p_adjusted", "verdict")))


def flips_frame(c: Comparison) -> pd.DataFrame:
    """Docs whose 0/1 outcome changed, on every 0/1 metric: direction, each run's prediction and margin (nats) by
    that metric (:mod:`repaudit.audit.picks`; None where a run's file cannot tell them, ``note`` says why)."""
    cols = ["task", "metric", "doc", "doc_id", "direction", "target", "a_prediction", "b_prediction", "a_margin",
            "b_margin", "near_tie", "note"]
    return pd.DataFrame([{k: _cell(v) for k, v in f.model_dump().items()} for f in c.flips], columns=cols)


def factors_frame(c: Comparison) -> pd.DataFrame:
    """Every factor field compared, per task (run-level fields repeat for each task): the registry name
    (``factor``, None for a field that is not a settable factor), group, field, both values, and ``status``
    (same / differs / unknown)."""
    cols = ["task", "factor", "group", "field", "a", "b", "status", "note"]
    return pd.DataFrame([{k: _cell(v) for k, v in f.model_dump().items()} for f in c.factors], columns=cols)


def attribution_frame(r: AttributionReport) -> pd.DataFrame:
    """One row per attributed factor: Shapley value and its (1 − alpha) interval, in points (×100), plus the
    residual as a last row (factor ``residual``, no interval); ``n_docs`` on every row: the docs the values are on
    (the docs both runs scored, or a ``--precision`` estimate's among them)."""
    rows = [{"factor": f, "shapley_pts": 100 * p, "ci_low_pts": 100 * lo, "ci_high_pts": 100 * hi}
            for f, p, (lo, hi) in zip(r.factors, r.phi, r.phi_ci)]
    rows.append({"factor": "residual", "shapley_pts": 100 * r.residual, "ci_low_pts": None, "ci_high_pts": None})
    for row in rows:
        row["n_docs"] = r.n_docs
    return pd.DataFrame(rows, columns=["factor", "shapley_pts", "ci_low_pts", "ci_high_pts", "n_docs"])


def series_frame(r: SeriesReport) -> pd.DataFrame:
    """The rows of a series report (``variance FILE… --across``), one per (series ×) task × metric: every field of
    its row record, scores in ``unit``; ``ci`` as ``ci_low``/``ci_high``; ``points``, ``finals`` and ``split`` as
    JSON text."""
    def cells(x: BaseModel) -> dict[str, Any]:
        return {k: _cell(v) for k, v in x.model_dump().items() if k != "ci"}

    if r.across == "seed":
        out = []
        for x in r.seed:
            d = cells(x)
            d["ci_low"], d["ci_high"] = x.ci
            out.append(d)
    else:
        out = [cells(x) for x in (r.checkpoint if r.across == "checkpoint" else r.model)]
    return pd.DataFrame(out, columns=_columns(out, ("task", "metric", "unit")))


def to_csv(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (RFC 4180 quoting, no index). A cell that a spreadsheet would run as a formula
    (starting with ``=``, ``+``, ``-``, ``@``, a tab or CR, and not a number) gets a leading ``'`` (OWASP's
    CSV-injection advice): strings come from untrusted files."""
    def safe(v: Any) -> Any:
        if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(v):
            return "'" + v
        return v

    return frame.map(safe).to_csv(index=False, lineterminator="\n")


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True
