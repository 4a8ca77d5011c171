"""An Every Eval Ever record of schema 0.1.x or 0.2.x as a run: each task's record in the vocabulary
(:mod:`repaudit.vocabulary`; the settings fields declare their ``eee`` keys), reported scores with each metric's
declared direction, unit and range, and per-doc outcomes from the sidecar's or the inline rows.

* **Tasks and metrics**: the task is the result's ``evaluation_name``; its metric is ``metric_config.metric_id``,
  else ``score``. Where one record repeats an ``evaluation_name`` (EEE's HELM converter writes every metric of a run
  under the adapter method's name), the metric is ``metric_id``, else the ``evaluation_description``, and results of
  a perturbation (``score_details.details.perturbation``) are left out, as HELM's own unperturbed stats; a metric
  seen again within a task is named ``<metric> (2)``, ``(3)``, ….
* **Settings**: ``model_info.id`` (the model), ``inference_platform`` (the provider), ``inference_engine`` (the
  backend), ``eval_library``'s version; then the settings fields' ``eee`` keys over the result's
  ``generation_config.generation_args`` (0.1.x: ``generation_config`` itself, where EEE's HELM converter put
  ``temperature``/``max_tokens``/``stop_sequences``), ``generation_config.additional_details``,
  ``model_info.additional_details`` (``precision`` is the dtype) and ``source_data``. ``unknown`` is not a value.
  A recorded temperature of 0 is greedy decoding (derived), so sampling settings do not apply.
* **Direction, unit, range**: ``lower_is_better``, ``metric_unit``, ``min_score``/``max_score`` as the file states them
  (:attr:`~repaudit.importers.comparable.TaskOutcome.declared`).
* **Docs**: one per ``sample_id`` of the task. Integer sample ids are the doc ids, so are HELM's instance ids ``id<N>``
  (its scenario's instance N, as a HELM run folder names them); any other ids number the docs in file order, and
  such docs carry their content (question, choices, reference) for pairing with another harness's. Every doc keeps
  its ``sample_id`` as its key (reports name the doc by it). A row whose ``evaluation_name`` names no result of a
  record of one task (EEE's Inspect conversion names rows by the benchmark, results by the scorer) is that task's.
  A row's ``evaluation.score`` is its metric's per-doc value (its result by ``evaluation_result_id``, else the
  task's one metric); 0.1.x inline rows carry no score. Where the per-doc values'
  mean is not the reported score the run gets a warning (:func:`~repaudit.importers.comparable.per_doc_warnings`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import DocOutcome, TaskOutcome, per_doc_warnings
from repaudit.importers.eee.legacy import LegacyRecord
from repaudit.importers.eee.legacy_schema import Aggregate, Result, Row, Sample
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

#: EEE's ``inference_engine`` names → repaudit's backend names
ENGINES = {"transformers": "hf", "vllm": "vllm", "huggingface": "hf"}
#: a HELM instance id: the instance's index in its scenario
HELM_ID = re.compile(r"id(\d{1,12})")
#: what a record writes where it does not know a value
UNKNOWN = {"", "unknown", "none", "null", "n/a"}


def results(agg: Aggregate) -> list[tuple[str, str, int, Result]]:
    """``(task, metric, index in evaluation_results, result)`` of every result read (see the module docstring)."""
    names = [r.evaluation_name for r in agg.evaluation_results]
    out: list[tuple[str, str, int, Result]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, r in enumerate(agg.evaluation_results):
        mc = r.metric_config
        if names.count(r.evaluation_name) > 1:
            if (r.score_details.details or {}).get("perturbation"):
                continue
            metric = mc.metric_id or mc.evaluation_description or "score"
        else:
            metric = mc.metric_id or "score"
        k = (r.evaluation_name, metric)
        seen[k] = seen.get(k, 0) + 1
        out.append((r.evaluation_name, metric if seen[k] == 1 else f"{metric} ({seen[k]})", i, r))
    return out


def tasks(rec: LegacyRecord) -> tuple[dict[str, Recorded], dict[str, TaskOutcome], list[str]]:
    """Every task of a record: its settings and facts, reported scores, per-doc outcomes, and the warnings of
    per-doc means that are not the reported scores."""
    by_task: dict[str, dict[str, tuple[int, Result]]] = {}
    for task, metric, i, r in results(rec.agg):
        by_task.setdefault(task, {})[metric] = (i, r)
    docs = _docs(rec, by_task)
    factors, outcomes, warnings = {}, {}, []
    for task, metrics in by_task.items():
        i, first = next(iter(metrics.values()))
        errs = {m: _stderr(r, j) for m, (j, r) in metrics.items()}
        reported = {m: (r.score_details.score, errs[m][0]) for m, (_, r) in metrics.items()}
        task_docs = docs.get(task)
        n = len(task_docs) if task_docs else _count([r for _, r in metrics.values()])
        said = {m: d for m, (_, r) in metrics.items() if (d := declared(r)) is not None}
        if task_docs:
            warnings += per_doc_warnings(rec.sidecar or rec.path, task, reported, task_docs,
                                         "sidecar's rows" if rec.sidecar else "record's per-sample rows", said)
        factors[task] = record(rec.agg, first, i, n)
        outcomes[task] = TaskOutcome(
            task=task, reported=reported, docs=task_docs, n_docs=n, declared=said,
            higher_is_better={m: not r.metric_config.lower_is_better for m, (_, r) in metrics.items()
                              if r.metric_config.lower_is_better is not None},
            n_original=_split_size([r for _, r in metrics.values()]),
            stderr_notes={m: how for m, (_, how) in errs.items() if how})
    return factors, outcomes, warnings


def _stderr(r: Result, index: int) -> tuple[float | None, str]:
    """The result's standard error and how it was read (:func:`repaudit.importers.eee.uncertainty.stderr_of`)."""
    from repaudit.importers.eee.uncertainty import Stated, stderr_of

    sd = r.score_details
    unc = sd.uncertainty
    ci = (unc.confidence_interval if unc is not None else None) or sd.confidence_interval
    where = f"evaluation_results[{index}].score_details." + (
        "uncertainty.confidence_interval" if unc is not None and unc.confidence_interval is not None
        else "confidence_interval")
    return stderr_of(Stated(score=sd.score, standard_error=unc.standard_error.value if unc is not None and
                            unc.standard_error is not None else None,
                            lower=ci.lower if ci else None, upper=ci.upper if ci else None,
                            level=ci.confidence_level if ci else None, ci_method=ci.method if ci else None,
                            standard_deviation=unc.standard_deviation if unc is not None else None,
                            num_samples=unc.num_samples if unc is not None else None), where)


def _count(results: list[Result]) -> int | None:
    """A task's doc count as its results state it: ``uncertainty.num_samples`` of any of them, else the length of
    ``source_data.sample_ids`` (the docs evaluated, listed)."""
    for r in results:
        unc = r.score_details.uncertainty
        if unc is not None and unc.num_samples is not None:
            return unc.num_samples
    for r in results:
        ids = r.source_data.get("sample_ids") if isinstance(r.source_data, dict) else None
        if isinstance(ids, list) and ids:
            return len(ids)
    return None


def _split_size(results: list[Result]) -> int | None:
    """``source_data.samples_number``: the docs in the dataset the task drew from, where a result states it."""
    for r in results:
        k = r.source_data.get("samples_number") if isinstance(r.source_data, dict) else None
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            return k
    return None


def _bound(x: float | str | None) -> float | None:
    if isinstance(x, str):
        return {"infinity": math.inf, "-infinity": -math.inf}.get(x.strip().lower())
    return float(x) if isinstance(x, (int, float)) else None


def declared(r: Result) -> tuple[str | None, float | None, float | None] | None:
    """``(metric_unit, min_score, max_score)`` of a result (``Infinity`` strings read as infinite), ``None`` where
    it declares none of them."""
    mc = r.metric_config
    out = (mc.metric_unit or None, _bound(mc.min_score), _bound(mc.max_score))
    return None if out == (None, None, None) else out


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip().lower() in UNKNOWN)


def record(agg: Aggregate, result: Result, index: int, n_docs: int | None) -> Recorded:
    """What a record says of one task's settings and facts (``index``: the result's place in
    ``evaluation_results``); everything else not recorded."""
    from repaudit.importers.declared import greedy_at_zero, read_declared

    rec = Recorded()
    mi = agg.model_info
    rec.put("model.name", mi.id, "model_info.id")
    if _known(mi.inference_platform):
        rec.put("model.provider", mi.inference_platform, "model_info.inference_platform")
    engine = mi.inference_engine
    name, version = (engine, None) if isinstance(engine, str) else (engine.name, engine.version) if engine else (
        None, None)
    if name is not None and _known(name):
        key = "model_info.inference_engine" + ("" if isinstance(engine, str) else ".name")
        rec.put("serving.backend", ENGINES.get(name.lower(), name), key,
                note=f"EEE's '{name}'" if name.lower() in ENGINES else "")
        if _known(version):
            rec.put(f"software.{name}", version, "model_info.inference_engine.version")
    lib = agg.eval_library
    if lib is not None and _known(lib.version):
        rec.put(f"software.{lib.name}", lib.version, "eval_library.version")
    read_declared("eee", sources(agg, result, index), rec)
    rec.put("data.task", result.evaluation_name, f"evaluation_results[{index}].evaluation_name")
    if n_docs is not None:
        rec["data.n_docs"] = derived(n_docs, "the per-sample rows, else uncertainty.num_samples, else "
                                             "source_data.sample_ids")
    greedy_at_zero(rec, "temperature 0: greedy decoding")
    return apply_conditions(rec.fill(setting_paths())).sorted()


def sources(agg: Aggregate, result: Result, index: int) -> dict[str, dict[str, tuple[Any, str]]]:
    """The dicts the settings fields' ``eee`` keys name (:data:`repaudit.importers.eee.native.SOURCES`), each value
    with its JSON path; ``null`` and ``unknown`` values left out."""
    from repaudit.importers.declared import source

    def known(obj: Any) -> dict[str, Any]:
        """The entries of a dict whose value is a value (not null, not ``unknown``)."""
        return {k: v for k, v in obj.items() if _known(v)} if isinstance(obj, dict) else {}

    at = f"evaluation_results[{index}]"
    gc = result.generation_config or {}
    args, where = (gc["generation_args"], f"{at}.generation_config.generation_args.") if isinstance(
        gc.get("generation_args"), dict) else ({k: v for k, v in gc.items() if k != "additional_details"},
                                               f"{at}.generation_config.")
    details = {k: _json_or_text(v) for k, v in known(gc.get("additional_details")).items()}
    data, data_at = (result.source_data, f"{at}.source_data.") if isinstance(result.source_data, dict) else (
        agg.source_data, "source_data.")
    return {"generation_args": source(known(args), where),
            "generation_details": source(details, f"{at}.generation_config.additional_details."),
            "model_details": source(known(agg.model_info.additional_details), "model_info.additional_details."),
            "source_data": source(known(data), data_at)}


def _json_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _docs(rec: LegacyRecord, by_task: dict[str, dict[str, tuple[int, Result]]]) -> dict[str, dict[int, DocOutcome]]:
    """Per task, the docs of the sidecar's rows or of the record's inline rows (see the module docstring)."""
    grouped: dict[str, dict[str, list[tuple[str | None, Row | Sample]]]] = {}
    if rec.rows is not None:
        ids = {r.evaluation_result_id: (task, m) for task, ms in by_task.items() for m, (_, r) in ms.items()
               if r.evaluation_result_id}
        only = next(iter(by_task)) if len(by_task) == 1 else None
        for _, row in rec.rows:
            task, metric = ids.get(row.evaluation_result_id or "", (row.evaluation_name, None))
            if task not in by_task and only is not None:  # a row named by its benchmark, the record's one task
                task = only
            if metric is None and len(by_task.get(task, {})) == 1:
                metric = next(iter(by_task[task]))
            grouped.setdefault(task, {}).setdefault(str(row.sample_id), []).append((metric, row))
    inline = rec.agg.detailed_evaluation_results_per_samples
    if isinstance(inline, list) and len(by_task) == 1:  # 0.1.x: the rows of the record's one task
        task = next(iter(by_task))
        for s in inline:
            grouped.setdefault(task, {}).setdefault(str(s.sample_id), []).append((None, s))
    elif isinstance(inline, list) and inline:
        rec.notes.append(f"'{rec.path}': holds {len(inline)} per-sample rows for {len(by_task)} tasks and names no "
                         "task per row: they are not read")
    return {task: _task_docs(samples) for task, samples in grouped.items() if task in by_task}


def _task_docs(samples: dict[str, list[tuple[str | None, Row | Sample]]]) -> dict[int, DocOutcome]:
    """One task's docs by doc id: integer sample ids, else HELM's ``id<N>``, else the position in the file."""
    keys = list(samples)
    if all(k.isdigit() and str(int(k)) == k for k in keys):
        numbers = [int(k) for k in keys]
    elif all(HELM_ID.fullmatch(k) for k in keys) and len({int(k[2:]) for k in keys}) == len(keys):
        numbers = [int(k[2:]) for k in keys]
    else:
        numbers = None
    out = {}
    for pos, key in enumerate(keys):
        doc = _doc(numbers[pos] if numbers else pos, key, samples[key], with_content=numbers is None)
        out[doc.doc_id] = doc
    return out


def _doc(doc_id: int, key: str, rows: list[tuple[str | None, Row | Sample]], with_content: bool) -> DocOutcome:
    """One doc from its rows (a sidecar row per metric, or one inline row)."""
    metrics = {m: float(r.evaluation.score) for m, r in rows if m is not None and isinstance(r, Row)}
    first = rows[0][1]
    if isinstance(first, Sample):
        prompt, ref, answer = first.prompt or first.input, first.ground_truth, first.response
        choices = [c[-1] if isinstance(c, list) and c else str(c) for c in first.choices or []] or None
        generation = first.response if not choices else None
    else:
        inp, out = first.input, first.output
        prompt, ref, choices = (inp.raw, inp.reference, inp.choices or None) if inp is not None else (None, None, None)
        raw = out.raw if out is not None else None
        generation = (raw[0] if raw else None) if isinstance(raw, list) else raw
        items = first.answer_attribution or []
        answer = ([a for a in items if a.is_terminal] or items)[-1].extracted_value if items else generation
    target = ref if isinstance(ref, str) else (ref[0] if len(ref) == 1 else json.dumps(ref, ensure_ascii=False)) \
        if ref else None
    prediction = answer.strip() if isinstance(answer, str) else None
    return DocOutcome(doc_id=doc_id, doc_hash=None, prompt_hash=sha256_text(prompt) if prompt else None,
                      target=target, cluster=None, metrics=metrics,
                      prediction=prediction, choices_hash=sha256_json(choices) if choices else None,
                      generation=generation if not choices else None, prompt=prompt, choices=choices, key=key,
                      content=(prompt or "", choices, target or "") if with_content else None)
