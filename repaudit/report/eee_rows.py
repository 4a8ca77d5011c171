"""The sidecar rows of an Every Eval Ever export: one row per doc and per metric with a per-doc value
(EEE: "emit multiple instance records, one per aggregate result"), each with the prediction *of its metric*.

EEE's own lm-eval converter shows acc's answer (the argmax of the raw log-likelihoods) on acc_norm rows too, in
``output.raw`` and the answer attribution; on lm-eval's ARC-Easy run of the default model that answer contradicts
the row's own score on 193 of 570 acc_norm rows (``bench/eee_convert.py``). Here an acc_norm row carries acc_norm's
argmax — log-likelihood divided by the choice's length in characters (lm-eval's rule), UTF-8 bytes or continuation
tokens, or minus the unconditional log-likelihood, as the run recorded — in both ``output.raw`` and
``answer_attribution``, and a row whose prediction cannot be told from what the run records (its argmax disagrees
with the recorded per-doc value, or no per-choice values were recorded) has an empty ``output.raw`` and
``answer_attribution`` and says why in ``metadata["repaudit.prediction"]``: never another metric's answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from repaudit.audit.docmatch import target_index
from repaudit.hashing import sha256_text
from repaudit.importers.comparable import DocOutcome
from repaudit.importers.eee.schema import (
    M_DOC,
    M_PREDICTION_NOTE,
    M_PROMPT_NOTE,
    MOVED,
    PLAIN,
    SCHEMA_VERSION,
    dumps,
    result_id,
)
from repaudit.run.metrics import argmax_first

_METHODS = {"char_length": "argmax of log-likelihood / choice length in characters",
            "byte_length": "argmax of log-likelihood / choice length in UTF-8 bytes",
            "token_length": "argmax of log-likelihood / continuation tokens",
            "pmi": "argmax of log-likelihood - unconditional log-likelihood"}


@dataclass
class RowContext:
    """What every row of one task shares.

    Attributes:
        evaluation_id: the aggregate record's id.
        model_id: the model id the record states.
        task: the task.
        acc_norm: how acc_norm normalises (``char_length``, …), and whether the run records it (else assumed
            lm-eval's ``char_length`` and only used where the recorded per-doc value confirms it).
        delimiter: the target delimiter the run's scored continuations start with, removed from the choice texts
            shown (``None``: choices are shown as recorded).
    """

    evaluation_id: str
    model_id: str
    task: str
    acc_norm: str
    acc_norm_recorded: bool
    delimiter: str | None


def evaluation_name(task: str, metric: str) -> str:
    """``task``, or ``task/filter`` for a filtered metric (EEE's lm-eval converter's naming)."""
    flt = metric.partition(",")[2]
    return f"{task}/{flt}" if flt else task


def doc_rows(ctx: RowContext, doc: DocOutcome, payload: dict[str, Any], prompt: str | None, prompt_note: str,
             order: list[str]) -> list[dict[str, Any]]:
    """The rows of one doc: one per metric of ``order`` with a finite per-doc value (else one row without a result,
    scored 0 as a placeholder the schema requires, and saying so). The first row carries the doc's payload
    (``repaudit.doc``: ``payload`` without the fields kept in every row's metadata)."""
    choices = _choices(ctx, doc)
    raw = prompt or ""
    reference = [doc.target] if doc.target is not None else []
    meta = _metadata(payload)
    if not raw:
        meta[M_PROMPT_NOTE] = prompt_note or "the run's file does not keep the prompt text"
    base: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "evaluation_id": ctx.evaluation_id, "model_id": ctx.model_id,
            "sample_id": doc.key if doc.key is not None else str(doc.doc_id),
            # EEE's Inspect converter's formula; none without a prompt (the target alone names no sample)
            "sample_hash": sha256_text(raw + "".join(reference)) if raw else None, "interaction_type": "single_turn",
            "input": {"raw": raw, "reference": reference, "choices": choices},
            "output": {"raw": _output(doc, choices)}}
    rows: list[dict[str, Any]] = []
    for metric in order:
        value = doc.metrics.get(metric)
        if value is None or not math.isfinite(value):
            continue
        row_meta = dict(meta)
        answer = _prediction(ctx, metric, doc, payload, choices)
        if isinstance(answer, str):
            row_meta[M_PREDICTION_NOTE] = answer
        own = base
        if doc.generation is None and base["output"]["raw"]:  # a chosen answer: the row's own metric's, or none
            own = {**base, "output": {"raw": [answer["extracted_value"].strip()] if isinstance(answer, dict) else []}}
        rows.append({**own, "evaluation_name": evaluation_name(ctx.task, metric),
                     "evaluation_result_id": result_id(metric),
                     "answer_attribution": [answer] if isinstance(answer, dict) else [],
                     "evaluation": {"score": value, "is_correct": value == 1.0}, "metadata": row_meta})
    if not rows:
        rows.append({**base, "evaluation_name": ctx.task, "answer_attribution": [],
                     "evaluation": {"score": 0.0, "is_correct": False},
                     "metadata": {**meta, "repaudit.score": "none: the doc has no finite per-doc value; the score "
                                                            "0 is a placeholder the schema requires"}})
    rows[0]["metadata"][M_DOC] = dumps({k: v for k, v in payload.items() if k not in MOVED})
    return rows


def _output(doc: DocOutcome, choices: list[str] | None) -> list[str]:
    """``output.raw``: a generation as generated; on a multiple-choice doc the answer the model's log-likelihoods
    choose, as EEE's lm-eval converter writes it — the text of the choice with the highest log-likelihood (its index
    as text where the file keeps no choice texts) — which :func:`doc_rows` replaces by each row's own metric's answer
    (acc_norm's on an acc_norm row); ``[]`` where the model chose nothing (one continuation scored)."""
    if doc.generation is not None:
        return [doc.generation]
    lls = doc.loglikelihoods
    if not lls or len(lls) < 2 or (choices is not None and len(choices) != len(lls)):
        return []
    best = argmax_first(lls)
    return [choices[best].strip() if choices else str(best)]


def _metadata(payload: dict[str, Any]) -> dict[str, str]:
    """The per-doc fields kept in every row's metadata: hashes as plain strings, per-choice lists as JSON."""
    return {key: (str(payload[name]) if name in PLAIN else dumps(payload[name]))
            for name, key in MOVED.items() if payload.get(name) is not None}


def _choices(ctx: RowContext, doc: DocOutcome) -> list[str] | None:
    if not doc.choices:
        return None
    d = ctx.delimiter
    return [c[len(d):] if d and c.startswith(d) else c for c in doc.choices]


def _prediction(ctx: RowContext, metric: str, doc: DocOutcome, payload: dict[str, Any],
                choices: list[str] | None) -> dict[str, Any] | str:
    """The answer attribution of ``metric``'s prediction, or why there is none (one line)."""
    name, _, flt = metric.partition(",")
    lls = doc.loglikelihoods
    if lls and (choices is None or len(lls) == len(choices)):
        if name not in ("acc", "acc_norm", "acc_bytes"):
            return (f"none: {name} of a multiple-choice task scores the choices' log-likelihoods, it predicts no "
                    "choice of its own")
        norm = {"acc": None, "acc_bytes": "byte_length"}.get(name, ctx.acc_norm)
        if norm in ("char_length", "byte_length") and choices is None:
            return f"none: {name}'s {norm} normalisation needs the choice texts, which the run's file does not keep"
        idx = _argmax(lls, choices or [], norm, payload)
        if idx is None:
            return f"none: acc_norm's {ctx.acc_norm} normalisation needs per-choice values this run does not record"
        gold = _gold(doc, payload, choices, len(lls))
        if gold is not None and float(idx == gold) != doc.metrics[metric]:
            return (f"none: the argmax under {ctx.acc_norm if name == 'acc_norm' else name} (choice {idx}) disagrees "
                    f"with the recorded per-doc {metric} {doc.metrics[metric]!r}")
        if gold is None and name == "acc_norm" and not ctx.acc_norm_recorded:
            return "none: the run records neither acc_norm's normalisation nor the gold choice to check one"
        method = "argmax of log-likelihood" if norm is None else _METHODS[norm]
        if choices is None:
            return _attribution(str(idx), method + " (the choice's index: the run's file keeps no choice texts)",
                                "metadata.repaudit.loglikelihoods")
        return _attribution(choices[idx], method, "metadata.repaudit.loglikelihoods")
    if doc.extracted and flt in doc.extracted:
        return _attribution(doc.extracted[flt], f"filter {flt}", "output.raw")
    if isinstance(doc.prediction, str):
        return _attribution(doc.prediction, "the harness's recorded answer", "output.raw")
    return "none: the run records no prediction for this doc"


def _gold(doc: DocOutcome, payload: dict[str, Any], choices: list[str] | None, n: int) -> int | None:
    """The gold choice's index: a repaudit run's ``gold``, else the target as a letter, an index or a choice text."""
    if isinstance(payload.get("gold"), int):
        return payload["gold"]
    if choices:
        return target_index(doc.target, choices)
    t = (doc.target or "").strip()
    return int(t) if t.isdigit() and int(t) < n else None


def _attribution(value: str, method: str, source: str) -> dict[str, Any]:
    return {"turn_idx": 0, "source": source, "extracted_value": value, "extraction_method": method,
            "is_terminal": True}


def _argmax(lls: list[float], choices: list[str], norm: str | None, payload: dict[str, Any]) -> int | None:
    """The predicted choice under a normalisation (``None``: raw log-likelihoods), ties to the first; ``None``
    where the normalisation needs values the payload lacks."""
    if norm is None:
        return argmax_first(lls)
    if norm == "pmi":
        uncond = payload.get("unconditional_loglikelihoods")
        if not uncond or len(uncond) != len(lls):
            return None
        return argmax_first([ll - u for ll, u in zip(lls, uncond)])
    if norm == "token_length":
        lengths = payload.get("continuation_tokens")
        if not lengths or len(lengths) != len(lls):
            return None
    elif norm == "byte_length":
        lengths = [len(c.encode("utf-8")) for c in choices]
    else:
        lengths = [len(c) for c in choices]
    return argmax_first([ll / n if n else ll for ll, n in zip(lls, lengths)])
