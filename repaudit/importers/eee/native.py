"""An Every Eval Ever record of any converter (EEE's lm-eval, Inspect or HELM converters, a leaderboard scrape) as a
run: what EEE's native fields carry, as the vocabulary's record (:mod:`repaudit.vocabulary`; the settings fields
declare their EEE keys), scores and per-doc outcomes; every other setting is *not recorded*.

* **Tasks and metrics**: each ``evaluation_results[]`` entry is one metric of one task — the metric key from its
  ``evaluation_result_id`` (``exact_match:strict-match`` → ``exact_match,strict-match``), else its
  ``metric_config.metric_id``, else its ``metric_name``; the task is its ``evaluation_name`` without a trailing
  ``/<filter>`` (EEE's lm-eval converter appends the filter).
* **Docs**: one per ``sample_id``. Integer sample ids (lm-eval's row numbers) are the doc ids; any other ids
  number the docs in file order. Every doc also keeps its ``sample_id`` as its key, so two EEE runs pair by
  ``sample_id`` whatever their order, then by ``metadata.doc_hash`` (where both carry one), then — for docs
  whose ids are not row numbers — by content (question, choices, reference). ``sample_hash`` is never used: EEE's
  converters compute it three different ways, so it is no doc id across converters.
* **Direction, unit, range**: ``lower_is_better``, ``metric_unit``, ``min_score``/``max_score`` as the record
  states them (:attr:`~repaudit.importers.comparable.TaskOutcome.declared`).
* **Per-doc values**: each row's ``evaluation.score`` under its result's metric (a mean other than the reported
  score is a warning of the run: another converter's rows and aggregate may disagree). **Predictions** come from
  ``answer_attribution`` (the terminal item) of the ``acc`` row where there is one — never from ``output.raw``,
  which EEE's lm-eval converter fills with acc's answer on acc_norm rows too.
"""

from __future__ import annotations

import json
from typing import Any

from repaudit.boundary import InputError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import DocOutcome, TaskOutcome, per_doc_warnings
from repaudit.importers.eee.files import Record
from repaudit.importers.eee.schema import (
    K_DIRECTION,
    M_FEWSHOT_IDS,
    M_LOGLIKELIHOODS,
    Aggregate,
    EvaluationResult,
    Row,
    metric_of,
)
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

#: EEE's ``inference_engine.name`` → repaudit's backend name
ENGINES = {"transformers": "hf", "vllm": "vllm"}


def metric_key(r: EvaluationResult) -> str:
    """The metric key of one result (see the module docstring)."""
    if r.evaluation_result_id:
        return metric_of(r.evaluation_result_id)
    return r.metric_config.metric_id or r.metric_config.metric_name or "score"


def task_name(evaluation_name: str, metric: str) -> str:
    """The task of a result: its ``evaluation_name`` without the ``/<filter>`` EEE's lm-eval converter adds."""
    flt = metric.partition(",")[2]
    return evaluation_name[: -len(flt) - 1] if flt and evaluation_name.endswith("/" + flt) else evaluation_name


#: the sources this reader builds for the eee keys of the settings fields, and where each is in a 0.3.0 record
#: (``evaluation_results[]``: the result read; docs/eee.md's table of the settings read is generated from these)
SOURCE_PATHS = {"generation_args": "evaluation_results[].generation_config.generation_args",
                "generation_details": "evaluation_results[].generation_config.additional_details",
                "model_details": "model_info.additional_details",
                "source_data": "evaluation_results[].source_data"}
SOURCES = tuple(SOURCE_PATHS)


def record(agg: Aggregate, result: EvaluationResult, n_docs: int | None, where: str) -> Recorded:
    """What a record says of one task's settings and facts (``where``: the JSON path of ``result``): model, engine,
    library versions, generation arguments, the task's data; everything else not recorded."""
    from repaudit.importers.declared import read_declared, source

    rec = Recorded()
    mi, ad = agg.model_info, agg.model_info.additional_details
    rec.put("model.name", mi.id, "model_info.id")
    for k in ("revision", "sha", "weights_format"):
        if ad.get(k):
            rec.put(f"model.{k}", ad[k], f"model_info.additional_details.{k}")
    if ad.get("num_parameters", "").isdigit():
        rec.put("model.num_parameters", int(ad["num_parameters"]), "model_info.additional_details.num_parameters")
    engine = mi.inference_engine
    if engine is not None and engine.name:
        rec.put("serving.backend", ENGINES.get(engine.name, engine.name), "model_info.inference_engine.name",
                note="" if engine.name not in ENGINES else f"EEE's '{engine.name}'")
        if engine.version:
            rec.put(f"software.{engine.name}", engine.version, "model_info.inference_engine.version")
    rec.put(f"software.{agg.eval_library.name}", agg.eval_library.version, "eval_library.version")
    gen = result.generation_config
    args = gen.generation_args if gen is not None else None
    extra = {k: _json_or_text(v) for k, v in ((gen.additional_details if gen is not None else None) or {}).items()}
    at = {name: path.replace("evaluation_results[]", where) + "." for name, path in SOURCE_PATHS.items()}
    sources = {"generation_args": source(args.model_dump(exclude_none=True) if args is not None else None,
                                         at["generation_args"]),
               "generation_details": source(extra, at["generation_details"]),
               "model_details": source(ad, at["model_details"]),
               "source_data": source(result.source_data.model_dump(exclude_none=True), at["source_data"])}
    read_declared("eee", sources, rec)
    rec.put("data.task", task_name(result.evaluation_name, metric_key(result)), f"{where}.evaluation_name")
    if n_docs is not None:
        rec["data.n_docs"] = derived(n_docs, "the sidecar's samples, else uncertainty.num_samples")
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def tasks(rec: Record) -> tuple[dict[str, Recorded], dict[str, TaskOutcome], list[str]]:
    """Every task of a record of any converter: factors, reported scores (with each metric's declared direction,
    unit and range), per-doc outcomes from the sidecar, and a warning per metric whose per-doc mean is not the
    reported score (another converter's rows may disagree with its aggregate: read, and said).

    Raises:
        InputError: two results of one task and metric, a row naming no result of the record, a sample twice under
            one result, a per-choice metadata value that is not a JSON list of numbers.
    """
    results: dict[str, dict[str, EvaluationResult]] = {}
    index: dict[int, int] = {}
    for i, r in enumerate(rec.agg.evaluation_results):
        index[id(r)] = i
        key = metric_key(r)
        per_task = results.setdefault(task_name(r.evaluation_name, key), {})
        if key in per_task:
            raise InputError(rec.path, f"$.evaluation_results[{i}]", f"a second result of metric '{key[:40]}' of "
                                                                    f"task '{r.evaluation_name[:40]}'")
        per_task[key] = r
    docs = _docs(rec, {t: set(m) for t, m in results.items()}) if rec.rows is not None else {}
    fs, outcomes, warnings = {}, {}, []
    for task, metrics in results.items():
        first = next(iter(metrics.values()))
        task_docs = docs.get(task) if rec.rows is not None else None
        counts = [r.score_details.uncertainty.num_samples for r in metrics.values()
                  if r.score_details.uncertainty is not None and r.score_details.uncertainty.num_samples is not None]
        n = len(task_docs) if task_docs else (counts[0] if counts else None)
        errs = {k: _stderr(r, index[id(r)]) for k, r in metrics.items()}
        reported = {k: (r.score_details.score, errs[k][0]) for k, r in metrics.items()}
        direction = {k: not r.metric_config.lower_is_better for k, r in metrics.items()
                     if (r.metric_config.additional_details or {}).get(K_DIRECTION) != "unknown"}
        said = {k: d for k, r in metrics.items() if (d := _declared(r)) is not None}
        if task_docs:
            warnings += per_doc_warnings(rec.sidecar or rec.path, task, reported, task_docs, "sidecar's rows", said)
        fs[task] = record(rec.agg, first, n, f"evaluation_results[{index[id(first)]}]")
        outcomes[task] = TaskOutcome(task=task, reported=reported, docs=task_docs, n_docs=n,
                                     higher_is_better=direction, declared=said,
                                     stderr_notes={k: how for k, (_, how) in errs.items() if how})
    return fs, outcomes, warnings


def _declared(r: EvaluationResult) -> tuple[str | None, float | None, float | None] | None:
    """``(metric_unit, min_score, max_score)`` of a result (``Infinity`` strings infinite); ``None``: none stated."""
    mc = r.metric_config

    def bound(x: float | str | None) -> float | None:
        return float(x.replace("Infinity", "inf")) if isinstance(x, str) else x

    out = (mc.metric_unit or None, bound(mc.min_score), bound(mc.max_score))
    return None if out == (None, None, None) else out


def _stderr(r: EvaluationResult, index: int) -> tuple[float | None, str]:
    """The result's standard error and how it was read (:func:`repaudit.importers.eee.uncertainty.stderr_of`)."""
    from repaudit.importers.eee.uncertainty import Stated, stderr_of

    unc = r.score_details.uncertainty
    if unc is None:
        return None, ""
    ci = unc.confidence_interval
    return stderr_of(Stated(score=r.score_details.score,
                            standard_error=unc.standard_error.value if unc.standard_error is not None else None,
                            lower=ci.lower if ci else None, upper=ci.upper if ci else None,
                            level=ci.confidence_level if ci else None, ci_method=ci.method if ci else None,
                            standard_deviation=unc.standard_deviation, num_samples=unc.num_samples),
                     f"evaluation_results[{index}].score_details.uncertainty.confidence_interval")


def _docs(rec: Record, metrics: dict[str, set[str]]) -> dict[str, dict[int, DocOutcome]]:
    """Per task, the docs of the sidecar's rows (see the module docstring for ids and predictions)."""
    by_id = {r.evaluation_result_id: r for r in rec.agg.evaluation_results if r.evaluation_result_id}
    grouped: dict[str, dict[str, list[tuple[int, Row]]]] = {}
    for n, row in rec.rows or []:
        if row.evaluation_result_id is not None and row.evaluation_result_id not in by_id:
            raise InputError(rec.sidecar or rec.path, "$.evaluation_result_id",
                             f"'{row.evaluation_result_id[:40]}' names no result of its record", f"line {n}: ")
        res = by_id.get(row.evaluation_result_id) if row.evaluation_result_id else None
        key = metric_key(res) if res is not None else None
        task = task_name(res.evaluation_name if res is not None else row.evaluation_name, key or "")
        if task not in metrics and len(metrics) == 1:  # a row named by its benchmark: the record's one task
            task = next(iter(metrics))
        grouped.setdefault(task, {}).setdefault(row.sample_id, []).append((n, row))
    out: dict[str, dict[int, DocOutcome]] = {}
    for task, samples in grouped.items():
        numeric = all(s.isdigit() and str(int(s)) == s for s in samples)
        out[task] = {}
        for pos, (sid, rows) in enumerate(samples.items()):
            doc = _doc(rec, int(sid) if numeric else pos, sid, rows, with_content=not numeric)
            out[task][doc.doc_id] = doc
    return out


def _doc(rec: Record, doc_id: int, sample_id: str, rows: list[tuple[int, Row]], with_content: bool) -> DocOutcome:
    where = rec.sidecar or rec.path
    metrics: dict[str, float] = {}
    seen: dict[str, int] = {}
    for n, row in rows:
        if row.evaluation_result_id is None:
            continue
        key = metric_of(row.evaluation_result_id)
        if key in seen:
            raise InputError(where, "$.sample_id", f"sample '{sample_id[:40]}' is under result "
                                                   f"'{row.evaluation_result_id[:40]}' twice (also line {seen[key]})",
                             f"line {n}: ")
        seen[key] = n
        metrics[key] = row.evaluation.score
    n0, first = rows[0]
    meta = first.metadata or {}
    choices = first.input.choices or None
    ref = first.input.reference
    target = ref[0] if len(ref) == 1 else (json.dumps(ref, ensure_ascii=False) if ref else None)
    pick = next((r for _, r in rows if r.evaluation_result_id == "acc"), first)
    answer = _answer(pick)
    prediction: int | str | None = answer
    if answer is not None and choices:
        normed = [" ".join(c.split()) for c in choices]
        if normed.count(" ".join(answer.split())) == 1:
            prediction = normed.index(" ".join(answer.split()))
    generation = first.output.raw[0] if not choices and first.output is not None and first.output.raw else None
    extracted = None
    if not choices:
        extracted = {(metric_of(r.evaluation_result_id).partition(",")[2] or "none"): a
                     for _, r in rows if r.evaluation_result_id and (a := _answer(r)) is not None} or None
    prompt_hash = meta.get("prompt_hash") or (sha256_text(first.input.raw) if first.input.raw else None)
    return DocOutcome(doc_id=doc_id, doc_hash=meta.get("doc_hash") or None, prompt_hash=prompt_hash,
                      target=target, cluster=None, metrics=metrics, prediction=prediction,
                      loglikelihoods=_numbers(meta, M_LOGLIKELIHOODS, where, n0, float),
                      fewshot_ids=_numbers(meta, M_FEWSHOT_IDS, where, n0, int),
                      choices_hash=sha256_json(choices) if choices else None, generation=generation,
                      extracted=extracted, prompt=first.input.raw or None, choices=choices, key=sample_id,
                      content=(first.input.raw, choices, target or "") if with_content else None)


def _answer(row: Row) -> str | None:
    """The answer a row attributes: its last terminal item, else its last item, else none."""
    items = row.answer_attribution
    terminal = [a for a in items if a.is_terminal]
    return (terminal or items)[-1].extracted_value if items else None


def _numbers(meta: dict[str, str], key: str, where: Any, line: int, kind: type) -> list | None:
    """A per-choice JSON list kept in a row's metadata (``repaudit.loglikelihoods``), or ``None``.

    Raises:
        InputError: not a JSON list of numbers (of integers for ``kind`` int).
    """
    if key not in meta:
        return None
    try:
        value = json.loads(meta[key])
    except ValueError:
        value = None
    ok = isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                         and (kind is float or isinstance(v, int)) for v in value)
    if not ok:
        raise InputError(where, f"$.metadata[{json.dumps(key)}]", f"is not a JSON list of "
                                                                  f"{'numbers' if kind is float else 'integers'}",
                         f"line {line}: ")
    return [kind(v) for v in value]
