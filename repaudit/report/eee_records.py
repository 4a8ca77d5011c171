"""The aggregate record of one task of an Every Eval Ever export, and its sidecar: EEE's native fields filled from
what the run records, the ``repaudit.`` payload beside them (``docs/eee.md`` has the map)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeGuard

from repaudit import __version__
from repaudit.audit.intervals import stat_label
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.importers.adapter import Loaded
from repaudit.importers.eee.schema import (
    EXPORT_VERSION,
    K_DIGEST,
    K_DIRECTION,
    K_DOCS,
    K_EXPORT,
    K_KIND,
    K_NOTES,
    K_OUTCOME,
    K_PROMPTS,
    K_RECORD,
    K_RUN,
    K_SOURCE,
    K_TASK,
    SCHEMA_VERSION,
    OutcomePayload,
    dumps,
    flatten_factors,
    result_id,
    schema_error,
)
from repaudit.importers.metric_kinds import metric_kind
from repaudit.report.eee_rows import RowContext, doc_rows, evaluation_name
from repaudit.run.records import RunRecord
from repaudit.vocabulary import Recorded

#: a Hugging Face model id: ``org/name``, each part letters, digits, ``.``, ``_``, ``-``
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>"|?*\\/]')


@dataclass
class ExportOptions:
    """What EEE requires that a run cannot know.

    Attributes:
        relationship: ``source_metadata.evaluator_relationship``: who ran the evaluation relative to the model's
            developer (first_party, third_party, collaborative, other).
        model_id: ``model_info.id`` (``org/name``); default: the run's model where it is a Hugging Face id.
        developer: ``model_info.developer``; default: the id's organisation (needed where the id has none).
        organization: ``source_metadata.source_organization_name`` (who provides the record; required: EEE
            requires the field, and an empty name would publish a record nobody provides).
        data_dir: where a repaudit run's data is, to rebuild its prompts (as ``attribute --data-dir``).
        alpha: each score's ``confidence_interval`` is (1 − alpha), two-sided.
    """

    relationship: str | None
    model_id: str | None = None
    developer: str | None = None
    organization: str | None = None
    data_dir: Path | None = None
    alpha: float = 0.05



@dataclass
class Source:
    """One run prepared for export.

    Attributes:
        loaded: the run as read.
        kind: ``run`` (a repaudit run file) or ``comparable`` (any other).
        run_sha: sha256 of the run's payload (uuids derive from it).
        record: kind run: the run file; raw: its JSON as the file holds it.
        payloads: task → each doc's payload, in doc order.
        prompts: task → doc id → prompt text checked against its ``prompt_hash``; prompt_note: why one is missing.
    """

    loaded: Loaded
    kind: str
    run_sha: str
    record: RunRecord | None = None
    raw: dict[str, Any] | None = None
    payloads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    prompts: dict[str, dict[int, str]] = field(default_factory=dict)
    prompt_note: str = ""



def outcome_payload(run: Any, task: str) -> dict[str, Any]:
    """A task's outcome without its docs, as the payload ``repaudit.outcome`` holds it."""
    t = run.tasks[task]
    return OutcomePayload(task=t.task, reported=t.reported, n_docs=t.n_docs, n_original=t.n_original,
                          is_group=t.is_group, higher_is_better=t.higher_is_better, source_name=t.source_name,
                          metric_names=t.metric_names, diagnostics=t.diagnostics, declared=t.declared,
                          has_docs=t.docs is not None).model_dump()



def identity(src: Source, opts: ExportOptions, notes: list[str]) -> tuple[str, str, str, tuple[str, str]]:
    """``(model name, model id, developer, (developer folder, model folder))`` of a run.

    Raises:
        RepauditError: the run's model is no Hugging Face id and no --model-id was given, a flat id without
            --developer, a name that is no safe folder name.
    """
    path = src.loaded.path
    name: object  # a run file's model name is a str; another harness's recorded value may be anything
    if src.record is not None:
        name, hub = src.record.fingerprint.model.name, src.record.fingerprint.model.source == "hub"
    else:
        names = {rec.value("model.name") for rec in src.loaded.run.factors.values()}
        name = next(iter(names)) if len(names) == 1 else None
        hub = isinstance(name, str) and bool(HUB_ID.fullmatch(name))
    if opts.model_id is not None:
        model_id = opts.model_id.strip()
    elif hub and isinstance(name, str):
        model_id = name
        if src.record is None:
            notes.append(f"{path}: model id '{name}' is the run's recorded model name; pass --model-id if that is "
                         "a local folder")
    else:
        shown = name if isinstance(name, str) else "no model name"
        raise RepauditError(f"'{path}' records {shown!r} as its model, not a Hugging Face id: pass --model-id "
                            "org/name")
    parts = model_id.split("/")
    developer = opts.developer or (parts[0] if len(parts) > 1 else None)
    if developer is None:
        raise RepauditError(f"model id '{model_id}' names no organisation: pass --developer (EEE's datastore folder "
                            "and model_info.developer)")
    folders = (_component(parts[0] if len(parts) > 1 else developer, "developer"),
               _component("_".join(parts[1:]) if len(parts) > 1 else parts[0], "model"))
    return (name if isinstance(name, str) else model_id), model_id, developer, folders


def _component(value: str, what: str) -> str:
    """One folder name of EEE's layout (``:`` as ``_``, as EEE does).

    Raises:
        RepauditError: empty, ``.``/``..``/``data``/``unknown``, a path separator or a control character.
    """
    v = value.strip().replace(":", "_")
    if not v or v in (".", "..", "data") or v.lower() == "unknown" or _UNSAFE.search(v) or v.endswith((".", " ")):
        raise RepauditError(f"the {what} '{value[:60]}' is not a safe folder name for EEE's layout")
    return v



def record_uuid(run_sha: str, task: str, shown: str = "") -> str:
    """The record's uuid: sha256 of the run and task (and, for a repaudit run, of the prompts the export shows:
    ``shown``, :func:`prompts_shown`), with the version-4 bits EEE's path pattern requires."""
    digest = sha256_text(f"{run_sha}\n{task}" + (f"\n{shown}" if shown else ""))
    return str(uuid.UUID(bytes=bytes.fromhex(digest[:32]), version=4))


def prompts_shown(src: Source, task: str) -> str:
    """A repaudit run's prompts as this export shows them: ``N of M prompts rebuilt, sha256 …`` — rebuilt from the
    fingerprint and the data, which one machine has and another may not, so the same run exported with and without
    its data gives two sidecars, each under its own uuid; "" for another harness's run (its prompts are its file's)."""
    if src.kind != "run":
        return ""
    texts = src.prompts.get(task, {})
    digest = sha256_text(dumps(sorted(texts.items())))
    return f"{len(texts)} of {len(src.payloads[task])} prompts rebuilt and hash-checked, sha256 {digest}"


def timestamp(src: Source) -> str | None:
    """The run's own time in Unix seconds where its file records one: a repaudit run's ``created_at``, lm-eval's
    ``date`` (as EEE's lm-eval converter takes it), an EEE record's ``evaluation_timestamp``."""
    if src.record is None:
        return src.loaded.run.timestamp
    try:
        return str(int(datetime.fromisoformat(src.record.created_at).timestamp()))
    except ValueError:
        return None


def check_valid(obj: Any, kind: str, what: str) -> None:
    """Raise unless ``obj`` validates against the vendored EEE schema ``kind``.

    Raises:
        RepauditError: the first violation (a repaudit bug: the export is refused, nothing written).
    """
    bad = schema_error(obj, kind)  # type: ignore[arg-type]
    if bad is not None:
        raise RepauditError(f"{what} fails EEE schema {SCHEMA_VERSION} at {bad[0]}: {bad[1]}; nothing written")


def finite(x: Any) -> TypeGuard[float]:
    """A real number (not None, NaN, ±infinity or a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


#: repaudit's backend → EEE's inference engine and the library whose version is the engine's
ENGINES = {"hf": ("transformers", "transformers"), "vllm": ("vllm", "vllm")}
#: a harness as compare names it (``lm-eval 0.4.13``) → EEE's eval_library.name (its converters' spelling)
LIBRARIES = {"lm-eval": "lm_eval", "inspect_ai": "inspect_ai", "lighteval": "lighteval", "repaudit": "repaudit"}


def run_files(src: Source, opts: ExportOptions, notes: list[str]) -> list[tuple[str, bytes]]:
    """Every file of one run: per task its record and (where it has per-doc results) its sidecar, as
    ``(path relative to the export folder, bytes)``, each validated against EEE's schema.

    Raises:
        RepauditError: as :func:`repaudit.report.eee.identity`, or a record or row that fails EEE's schema.
    """
    name, model_id, developer, (dev_dir, model_dir) = identity(src, opts, notes)
    run = src.loaded.run
    out = []
    for task in run.tasks:
        uid = record_uuid(src.run_sha, task, prompts_shown(src, task))
        folder = f"data/{_component(task.replace('/', '_'), 'task')}/{dev_dir}/{model_dir}"
        rows = _rows(src, task, f"{task}/{model_id}/{uid}", model_id)
        side = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
        record = _record(src, task, f"{task}/{model_id}/{uid}", (name, model_id, developer), opts)
        if rows:
            record["detailed_evaluation_results"] = {
                "format": "jsonl", "file_path": f"{folder}/{uid}_samples.jsonl", "hash_algorithm": "sha256",
                "checksum": hashlib.sha256(side.encode("utf-8")).hexdigest(), "total_rows": len(rows)}
        what = f"the EEE record of '{src.loaded.path}' task '{task}'"
        check_valid(record, "aggregate", what)
        for n, row in enumerate(rows, 1):
            check_valid(row, "instance", f"{what}, sidecar row {n}")
        out.append((f"{folder}/{uid}.json",
                    (json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
                    .encode("utf-8")))
        if rows:
            out.append((f"{folder}/{uid}_samples.jsonl", side.encode("utf-8")))
    return out


def _stated(rec: Recorded, path: str) -> Any:
    """The value the run's file records (or derives from what it records) at ``path``; ``None`` for a harness
    default, a setting that does not apply or one not recorded — an export publishes only what the run states."""
    v = rec.get(path)
    return v.value if v is not None and v.source in ("recorded", "derived") else None


def _record(src: Source, task: str, evaluation_id: str, model: tuple[str, str, str],
            opts: ExportOptions) -> dict[str, Any]:
    run, factors = src.loaded.run, src.loaded.run.factors[task]
    # a record of another EEE converter read back (source "EEE 0.3.0: lm_eval 0.4.13") keeps its library
    harness, _, version = re.sub(r"^EEE [^:]*: ", "", run.source).partition(" ")
    ts = timestamp(src)
    outcome = run.tasks[task]
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id, "retrieved_timestamp": ts or "0",
        "source_metadata": {"source_name": f"repaudit {__version__} export of a {run.source} run",
                            "source_type": "evaluation_run" if outcome.docs else "documentation",
                            "source_organization_name": opts.organization,
                            "evaluator_relationship": opts.relationship},
        "eval_library": {"name": LIBRARIES.get(harness, harness), "version": version or "unknown",
                         "additional_details": _payload(src, task)},
        "model_info": _model_info(factors, model),
        "evaluation_results": _results(src, task, factors, opts.alpha)}
    if ts is not None:
        rec["evaluation_timestamp"] = ts
    return rec


def _payload(src: Source, task: str) -> dict[str, str]:
    """The ``repaudit.`` keys of ``eval_library.additional_details`` (see :mod:`repaudit.importers.eee.schema`)."""
    run = src.loaded.run
    keys = {K_EXPORT: EXPORT_VERSION, K_KIND: src.kind, K_RUN: src.run_sha, K_SOURCE: run.source, K_TASK: task,
            K_DOCS: sha256_text(dumps(src.payloads[task])), **flatten_factors(run.factors[task])}
    if src.raw is not None and src.record is not None:
        keys[K_RECORD] = dumps({k: v for k, v in src.raw.items() if k != "docs"})
        keys[K_DIGEST] = src.record.fingerprint_digest
        keys[K_PROMPTS] = prompts_shown(src, task)
    else:
        keys[K_OUTCOME] = dumps(outcome_payload(run, task))
        keys[K_NOTES] = dumps(run.notes)
    return keys


def _model_info(rec: Recorded, model: tuple[str, str, str]) -> dict[str, Any]:
    name, model_id, developer = model
    backend = _stated(rec, "serving.backend")
    details = {"deployment_type": "self_deployed" if backend in ENGINES else "unknown",
               "model_availability": "unknown"}
    for key, path in (("dtype", "serving.dtype"), ("revision", "model.revision"),
                      ("num_parameters", "model.num_parameters"), ("sha", "model.sha"),
                      ("weights_format", "model.weights_format")):
        value = _stated(rec, path)
        if value is not None:
            details[key] = str(value)
    info: dict[str, Any] = {"name": name, "id": model_id, "developer": developer, "additional_details": details}
    if backend in ENGINES:
        engine, library = ENGINES[backend]
        info["inference_engine"] = {"name": engine}
        version = _stated(rec, f"software.{library}")
        if version is not None:
            info["inference_engine"]["version"] = str(version)
    return info


def _results(src: Source, task: str, factors: Recorded, alpha: float = 0.05) -> list[dict[str, Any]]:
    """One ``evaluation_results`` entry per reported metric with a finite value."""
    outcome = src.loaded.run.tasks[task]
    ts = timestamp(src)
    gen = _generation(factors)
    data = _source_data(src, task, factors)
    out = []
    for metric, (value, stderr) in outcome.reported.items():
        if not finite(value):
            continue  # EEE's score must be a number; the payload keeps the file's own value
        kind = metric_kind(metric, [value], outcome.higher_is_better.get(metric),
                           declared=outcome.declared.get(metric))
        unknown = kind.kind == "score" and (kind.low is None or kind.high is None)  # a declared range is known
        config = {"evaluation_description": f"{metric} of {task} as the {src.loaded.run.source} run reported it",
                  "metric_name": metric, "metric_kind": kind.kind, "metric_unit": kind.unit,
                  "lower_is_better": kind.direction == "lower", "score_type": "continuous",
                  "min_score": None if unknown else (kind.low if kind.low is not None else "-Infinity"),
                  "max_score": None if unknown else (kind.high if kind.high is not None else "Infinity"),
                  "additional_details": {K_DIRECTION: kind.direction, "repaudit.direction_source": kind.source,
                                         "repaudit.aggregation": kind.aggregation}}
        uncertainty: dict[str, Any] = {}
        if outcome.n_docs is not None:
            uncertainty["num_samples"] = outcome.n_docs
        if finite(stderr):
            uncertainty["standard_error"] = {"value": stderr}
            if src.record is not None:
                uncertainty["standard_error"]["method"] = "analytic"
            uncertainty["confidence_interval"] = _normal_interval(value, stderr, kind.low, kind.high, alpha)
        entry = {"evaluation_result_id": result_id(metric), "evaluation_name": evaluation_name(task, metric),
                 "source_data": data, "metric_config": config, **({"evaluation_timestamp": ts} if ts else {}),
                 "score_details": {"score": value, **({"uncertainty": uncertainty} if uncertainty else {})}}
        if gen:
            entry["generation_config"] = gen
        out.append(entry)
    return out


def _generation(rec: Recorded) -> dict[str, Any]:
    """``generation_config``: EEE's generation arguments where the run states them, n-shot, stop sequences and
    sampling (a harness default or a setting that does not apply is left out)."""
    args = {k: v for k in ("temperature", "top_p", "top_k") if finite(v := _stated(rec, f"generation.{k}"))}
    top = _stated(rec, "generation.max_gen_toks")
    if isinstance(top, int) and not isinstance(top, bool) and top >= 1:
        args["max_tokens"] = top
    extra = {}
    for key, path in (("num_fewshot", "fewshot.num_fewshot"), ("until", "generation.until"),
                      ("do_sample", "generation.do_sample")):
        value = _stated(rec, path)
        if value is not None:
            extra[key] = value if isinstance(value, str) else dumps(value)
    out: dict[str, Any] = {}
    if args:
        out["generation_args"] = args
    if extra:
        out["additional_details"] = extra
    return out


def _source_data(src: Source, task: str, rec: Recorded) -> dict[str, Any]:
    """A hub dataset where the run read one (repaudit: ``data.source`` hub), else "other" with its split and count."""
    split, n = _stated(rec, "data.split"), src.loaded.run.tasks[task].n_docs
    fp = src.record.fingerprint if src.record is not None else None
    if fp is not None and fp.data.source == "hub":
        out: dict[str, Any] = {"dataset_name": task, "source_type": "hf_dataset", "hf_repo": fp.data.location}
        if split is not None:
            out["hf_split"] = str(split)
        if n is not None:
            out["samples_number"] = n
        return out
    details = {k: str(v) for k, v in (("split", split), ("samples_number", n)) if v is not None}
    return {"dataset_name": task, "source_type": "other", **({"additional_details": details} if details else {})}


def _rows(src: Source, task: str, evaluation_id: str, model_id: str) -> list[dict[str, Any]]:
    outcome = src.loaded.run.tasks[task]
    rec = src.loaded.run.factors[task]
    norm = rec.value("scoring.acc_norm")  # a harness's own definition of acc_norm counts: it is how it scored
    delim = rec.value("prompt.target_delimiter") if src.record is None else None
    recorded = isinstance(norm, str)
    ctx = RowContext(evaluation_id, model_id, task, norm if recorded else "char_length", recorded,
                     delim if isinstance(delim, str) else None)
    order = list(outcome.reported)
    rows: list[dict[str, Any]] = []
    prompts = src.prompts.get(task, {})
    note = src.prompt_note or "the run's file does not keep the prompt text"
    for doc, payload in zip((outcome.docs or {}).values(), src.payloads[task]):
        metrics = order + [m for m in doc.metrics if m not in order]
        rows += doc_rows(ctx, doc, payload, prompts.get(doc.doc_id), note, metrics)
    return rows


def _normal_interval(value: float, stderr: float, low: float | None, high: float | None, alpha: float = 0.05
                     ) -> dict[str, Any]:
    """The (1 − alpha) normal-approximation interval ``value ± z × stderr`` (z = Φ⁻¹(1 − alpha/2), 1.959964 at
    alpha 0.05), cut to the metric's range where it has one (on a few docs the raw interval of a proportion can
    reach below 0 or above 1, values no score can take); the method says whether it was cut."""
    from scipy.stats import norm

    z = round(float(norm.ppf(1 - alpha / 2)), 6)
    lo, hi = value - z * stderr, value + z * stderr
    cut = (low is not None and lo < low) or (high is not None and hi > high)
    if low is not None:
        lo = max(lo, low)
    if high is not None:
        hi = min(hi, high)
    method = f"{stat_label('eee_normal')}: score ± {z} × standard error"
    if cut:
        method += f", cut to the metric's range [{low if low is not None else '-inf'}, " \
                  f"{high if high is not None else 'inf'}]"
    return {"lower": lo, "upper": hi, "confidence_level": round(1 - alpha, 10), "method": method}
