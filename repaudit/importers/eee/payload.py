"""Records written by ``repaudit export``: the run they came from, rebuilt exactly and checked (``docs/eee.md``).

An export carries ``repaudit.export`` in ``eval_library.additional_details``, with either

* kind ``run`` — a repaudit run file: the file's JSON without its docs (``repaudit.record``), each doc's JSON on
  the first sidecar row of that doc (``metadata["repaudit.doc"]``, its hashes and per-choice lists in the row's
  other metadata keys). The run file is reassembled and read by :func:`repaudit.run.records.parse_record`, and
  must digest as it says: its ``fingerprint_digest`` recomputed, the record's ``repaudit.fingerprint_digest``, and
  the sha256 of the docs (``repaudit.docs_sha256``) all agree;
* kind ``comparable`` — a run of another harness as ``compare`` read it: its record (one
  ``repaudit.factor.<path>`` key per setting or fact, each value with its provenance), the task's outcome
  (``repaudit.outcome``) and each doc's outcome (``repaudit.doc``), checked against ``repaudit.docs_sha256``.

Either way each row's native ``evaluation.score`` must equal the embedded per-doc value of its metric: a record
edited after export fails instead of showing two different answers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import Any

from repaudit.boundary import InputError, validate
from repaudit.hashing import sha256_text
from repaudit.importers.comparable import DocOutcome, TaskOutcome
from repaudit.importers.eee.files import Record
from repaudit.importers.eee.schema import (
    EXPORT_VERSION,
    K_DIGEST,
    K_DOCS,
    K_EXPORT,
    K_FACTOR,
    K_KIND,
    K_NOTES,
    K_OUTCOME,
    K_RECORD,
    K_RUN,
    K_SOURCE,
    K_TASK,
    M_DOC,
    MOVED,
    PLAIN,
    DocPayload,
    OutcomePayload,
    dumps,
    loads,
    metric_of,
    unflatten_factors,
)
from repaudit.run.records import RunRecord
from repaudit.vocabulary import Recorded

LIB = "$.eval_library.additional_details"
_OUTCOME_FIELDS = {f.name for f in fields(DocOutcome)}


@dataclass
class Piece:
    """One task of an exported run, rebuilt.

    Attributes:
        run_sha: the run's ``repaudit.run_sha256`` (the records of one run share it).
        source: the run's harness and version as compare names it.
        task: the task.
        factors: its record (kind ``run``: from the rebuilt fingerprint).
        outcome: its scores and per-doc outcomes.
        notes: the run's notes (kind ``comparable``).
        record: kind ``run``: the rebuilt run file; raw: its JSON as in the original file (docs included).
    """

    run_sha: str
    source: str
    task: str
    factors: Recorded
    outcome: TaskOutcome
    notes: list[str]
    record: RunRecord | None = None
    raw: dict[str, Any] | None = None


def is_export(rec: Record) -> bool:
    """Whether ``rec`` was written by ``repaudit export`` (it carries ``repaudit.export``)."""
    return K_EXPORT in (rec.agg.eval_library.additional_details or {})


def _at(key: str) -> str:
    return f"{LIB}[{json.dumps(key)}]"


def _get(rec: Record, key: str) -> str:
    details = rec.agg.eval_library.additional_details or {}
    if key not in details:
        raise InputError(rec.path, _at(key), "is missing: a record written by repaudit export carries it")
    return details[key]


def rebuild(rec: Record) -> Piece:
    """The task of a repaudit export, rebuilt and checked (see the module docstring).

    Raises:
        InputError: an unknown payload version or kind, a missing or malformed key, a doc payload that fails its
            model, a native score that differs from the embedded one, a digest or docs sha256 that differs.
    """
    version = _get(rec, K_EXPORT)
    if version != EXPORT_VERSION:
        raise InputError(rec.path, _at(K_EXPORT), f"is payload version '{version[:20]}'; this repaudit reads "
                                                  f"version {EXPORT_VERSION}")
    kind = _get(rec, K_KIND)
    if kind not in ("run", "comparable"):
        raise InputError(rec.path, _at(K_KIND), f"is '{kind[:20]}', not 'run' or 'comparable'")
    docs = _doc_payloads(rec, kind)
    got = sha256_text(dumps([d for _, d in docs]))
    if got != _get(rec, K_DOCS):
        raise InputError(rec.path, _at(K_DOCS), f"is not the sha256 of the per-doc payloads of its sidecar ({got[:16]}"
                                                "…): the sidecar's rows were changed after export")
    if kind == "run":
        return _run_piece(rec, docs)
    return _comparable_piece(rec, docs)


def _doc_payloads(rec: Record, kind: str) -> list[tuple[int, dict[str, Any]]]:
    """Each doc's payload (``repaudit.doc`` plus the fields kept in the row's own metadata), with its line."""
    out = []
    for n, row in rec.rows or []:
        meta = row.metadata or {}
        if M_DOC not in meta:
            continue
        at = f"line {n}: "
        doc = loads(meta[M_DOC], rec.sidecar or rec.path, f"$.metadata[{json.dumps(M_DOC)}]", at)
        if not isinstance(doc, dict):
            raise InputError(rec.sidecar or rec.path, f"$.metadata[{json.dumps(M_DOC)}]", "is not a JSON object", at)
        for name, key in MOVED.items():
            if key in meta:
                doc[name] = meta[key] if name in PLAIN else loads(meta[key], rec.sidecar or rec.path,
                                                                   f"$.metadata[{json.dumps(key)}]", at)
            elif kind == "comparable" and name in _OUTCOME_FIELDS:
                doc[name] = None  # a field the other harness's file did not record is written as no key
        out.append((n, doc))
    return out


def _check_scores(rec: Record, by_sample: dict[str, dict[str, float]]) -> None:
    """Every row's native score equals the embedded per-doc value of its metric.

    Raises:
        InputError: the first row that differs (the record was edited after export).
    """
    for n, row in rec.rows or []:
        if row.evaluation_result_id is None:
            continue
        metric = metric_of(row.evaluation_result_id)
        want = by_sample.get(row.sample_id, {}).get(metric)
        got = row.evaluation.score
        if want is None or not (got == want or (math.isnan(want) and math.isnan(got))):
            raise InputError(rec.sidecar or rec.path, "$.evaluation.score", f"{got!r} is not the embedded per-doc "
                             f"{metric} of sample '{row.sample_id[:40]}' ({want!r}): the row was changed after export",
                             f"line {n}: ")


def _run_piece(rec: Record, docs: list[tuple[int, dict[str, Any]]]) -> Piece:
    from repaudit.importers.runfile import from_record
    from repaudit.run.records import parse_record

    raw = loads(_get(rec, K_RECORD), rec.path, _at(K_RECORD))
    if not isinstance(raw, dict):
        raise InputError(rec.path, _at(K_RECORD), "is not a JSON object")
    raw = {**raw, "docs": [d for _, d in docs]}
    try:
        record = parse_record(raw, rec.path)
    except InputError as exc:
        raise InputError(rec.path, _at(K_RECORD), f"holds no valid run record ({exc.path or '$'}: {exc.problem}; its "
                                                  "docs come from the sidecar)") from None
    digest = record.fingerprint.digest()
    if not (digest == record.fingerprint_digest == _get(rec, K_DIGEST)):
        raise InputError(rec.path, _at(K_DIGEST), f"the embedded fingerprint digests to {digest[:16]}…, the record "
                                                  f"says {record.fingerprint_digest[:16]}… and the export "
                                                  f"{_get(rec, K_DIGEST)[:16]}…: it was changed after export")
    _check_scores(rec, {str(d.doc_id): dict(d.metrics) for d in record.docs})
    run = from_record(record, rec.path)
    task = record.fingerprint.data.task
    _check_stated(rec, run.factors[task])
    return Piece(run_sha=_get(rec, K_RUN), source=run.source, task=task, factors=run.factors[task],
                 outcome=run.tasks[task], notes=run.notes, record=record, raw=raw)


def _check_stated(rec: Record, rebuilt: Recorded) -> None:
    """The factor keys of a run export are views of the fingerprint: every value they state as the run's (recorded
    or derived) must be the embedded fingerprint's (a later repaudit may word a provenance note differently; a value
    never changes).

    Raises:
        InputError: a stated value that is not the fingerprint's (the record was changed after export).
    """
    stated = unflatten_factors(rec.agg.eval_library.additional_details or {}, rec.path, LIB)
    for path, v in stated.items():
        got = rebuilt.get(path)
        if v.source in ("recorded", "derived") and (got is None or got.source not in ("recorded", "derived")
                                                     or dumps(got.value) != dumps(v.value)):
            raise InputError(rec.path, _at(f"{K_FACTOR}{path}"), "differs from the embedded fingerprint's value: the "
                                                                "record was changed after export")


def _comparable_piece(rec: Record, docs: list[tuple[int, dict[str, Any]]]) -> Piece:
    where = rec.sidecar or rec.path
    outcome_raw = loads(_get(rec, K_OUTCOME), rec.path, _at(K_OUTCOME))
    o, _ = validate(OutcomePayload, outcome_raw, rec.path, prefix=("eval_library", "additional_details", K_OUTCOME),
                    schema="repaudit export payload")
    outcomes: dict[int, DocOutcome] = {}
    for n, d in docs:
        parsed, _ = validate(DocPayload, {"doc": d}, where, prefix=("metadata", M_DOC), where=f"line {n}: ",
                             schema="repaudit export payload")
        doc = parsed.doc
        if doc.doc_id in outcomes:
            raise InputError(where, f"$.metadata[{json.dumps(M_DOC)}].doc_id", f"doc {doc.doc_id} twice", f"line {n}: ")
        outcomes[doc.doc_id] = doc
    _check_scores(rec, {(d.key if d.key is not None else str(d.doc_id)): d.metrics for d in outcomes.values()})
    notes = loads(_get(rec, K_NOTES), rec.path, _at(K_NOTES))
    if not (isinstance(notes, list) and all(isinstance(x, str) for x in notes)):
        raise InputError(rec.path, _at(K_NOTES), "is not a JSON list of strings")
    if o.task != _get(rec, K_TASK):
        raise InputError(rec.path, _at(K_TASK), f"'{_get(rec, K_TASK)[:40]}' is not the outcome's task '{o.task[:40]}'")
    factors = unflatten_factors(rec.agg.eval_library.additional_details or {}, rec.path, LIB)
    outcome = TaskOutcome(task=o.task, reported=dict(o.reported), docs=outcomes if o.has_docs else None,
                          n_docs=o.n_docs, diagnostics=o.diagnostics, n_original=o.n_original, is_group=o.is_group,
                          higher_is_better=dict(o.higher_is_better), source_name=o.source_name,
                          metric_names=dict(o.metric_names), declared=dict(o.declared))
    return Piece(run_sha=_get(rec, K_RUN), source=_get(rec, K_SOURCE), task=o.task, factors=factors,
                 outcome=outcome, notes=notes)
