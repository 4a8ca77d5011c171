"""A HELM run folder as a run: ``run_spec.json`` for the settings (:mod:`.record`), ``stats.json`` for the reported
scores, ``per_instance_stats.json`` for per-instance values, ``scenario_state.json`` for each instance's prompt,
references and completion.

* **Task**: one per run folder, the run's name without its ``model=`` entry.
* **Scores**: the ``mean`` of every statistic of ``stats.json`` without a perturbation (HELM's robustness and
  fairness variants are its own statistics of the same run); a statistic whose mean is null (count 0) is left out.
  A statistic is named by its metric name, with ``@<split>`` appended where the run's statistics span several
  splits and the split is not ``test`` (a run on one split, ``valid`` or ``test``, names them plainly, as HELM's
  leaderboards and Every Eval Ever's HELM conversions do), and ``#<sub_split>`` where one is given.
* **Docs**: one per instance id of train trial 0 without a perturbation. A HELM instance id ``id<N>`` is the
  instance's index in its scenario: the doc id is N (stable across runs and across HELM's own conversions); other
  ids number the instances in file order. Each doc keeps its id as its key (reports name it so). Per-doc metric
  values are every statistic of ``per_instance_stats.json`` that measures the model's output — 0/1 correctness
  (the exact-match family, accuracy), a judge's score, a continuous statistic (F1, ROUGE, log-probabilities) —
  so that compare pairs each one doc by doc; HELM's statistics of the request itself (:data:`REQUEST_STATS`: token
  counts, runtimes, batch sizes, finish reasons, truncation) are no outcome and stay reported scores only.
  ``scenario_state.json`` gives the prompt (and its sha256, the doc's prompt hash), the references (the choices of
  a multiple-choice method; the correct one's letter or text is the target) and the completion (the prediction,
  stripped).
* **Checks**: the boundary's limits on every file, the typed models (:mod:`.schema`), then the per-instance means
  against the aggregates: a disagreement is a warning of the run, not a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from repaudit.boundary import InputError, read_json, validate
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome, per_doc_warnings
from repaudit.importers.helm.record import task_name, task_record
from repaudit.importers.helm.schema import InstanceStats, RequestState, RunSpec, Stat

#: per-instance statistics that are 0/1 correctness: HELM's exact-match family (``exact_match``,
#: ``quasi_prefix_exact_match@5``, …) and accuracy (``bbq_accuracy``)
CORRECTNESS = re.compile(r"exact_match|accuracy")
#: HELM's statistics of a request rather than of the model's answer (``helm/benchmark/metrics/basic_metrics.py``
#: general information, efficiency and finish reasons): read as reported scores, never as per-doc outcomes
REQUEST_STATS = re.compile(r"num_(references|train_trials|train_instances|prompt_tokens|completion_tokens|"
                           r"output_tokens|perplexity_tokens|bytes|instances)|inference_[a-z_]*runtime|batch_size|"
                           r"training_(co2_cost|energy_cost)|finish_reason_[a-z_]+|prompt_truncated")
#: a HELM instance id: the instance's index in its scenario
INSTANCE_ID = re.compile(r"id(\d{1,12})")
#: the run folder's files
FILES = ("run_spec.json", "stats.json", "per_instance_stats.json", "scenario_state.json")

M = TypeVar("M", bound=BaseModel)


@dataclass
class HelmParsed:
    """What a load of a HELM run folder keeps: the folder and its typed run spec."""

    folder: Path
    spec: RunSpec


def _list(path: Path, model: type[M], what: str) -> tuple[list[M], list[str]]:
    """A JSON array of ``model`` entries, each validated at its index.

    Raises:
        InputError: not an array, or an entry that fails the model (its JSON path named).
    """
    obj = read_json(path, what=what)
    if not isinstance(obj, list):
        raise InputError(path, None, f"is a JSON {type(obj).__name__}, not the array of entries a HELM {what} holds")
    out: list[M] = []
    notes: list[str] = []
    for i, entry in enumerate(obj):
        item, dropped = validate(model, entry, path, prefix=(i,), schema=f"HELM {what}")
        out.append(item)
        notes += [f"'{path}': {d}" for d in dropped]
    return out, notes


def _key(name: Any, one_split: bool) -> str:
    """A statistic's metric key (see the module docstring)."""
    key = name.name if one_split or name.split in (None, "test") else f"{name.name}@{name.split}"
    return f"{key}#{name.sub_split}" if name.sub_split else key


def load_helm(folder: Path, spec_obj: Any = None) -> tuple[ComparableRun, HelmParsed]:
    """A HELM run folder read once (see the module docstring; ``spec_obj``: ``run_spec.json`` already parsed).

    Raises:
        InputError: a missing ``run_spec.json`` or ``stats.json``, or a file that fails the boundary or its model.
    """
    for name in FILES[:2]:
        if not (folder / name).is_file():
            raise InputError(folder, None, f"is not a HELM run folder: it holds no {name}")
    spec_path = folder / "run_spec.json"
    spec, notes = validate(RunSpec, read_json(spec_path) if spec_obj is None else spec_obj, spec_path,
                           schema="HELM run_spec.json")
    notes = [f"'{spec_path}': {n}" for n in notes]
    stats, dropped = _list(folder / "stats.json", Stat, "stats.json")
    notes += dropped
    plain = [s for s in stats if not s.name.perturbation]
    splits = {s.name.split for s in plain}
    one_split = len(splits) <= 1
    reported: dict[str, tuple[float, float | None]] = {}
    for s in plain:
        if s.mean is not None:
            reported.setdefault(_key(s.name, one_split), (s.mean, None))
    docs, more = _docs(folder, one_split)
    notes += more
    task = task_name(spec.name)
    warnings = per_doc_warnings(folder / "per_instance_stats.json", task, reported, docs, "per-instance stats") \
        if docs else []
    split = next(iter(splits)) if len(splits) == 1 else None
    rec = task_record(spec, split, len(docs) if docs else None)
    outcome = TaskOutcome(task=task, reported=reported, docs=docs or None, n_docs=len(docs) if docs else None)
    run = ComparableRun(path=str(folder), source="HELM", factors={task: rec}, tasks={task: outcome}, notes=notes,
                        warnings=warnings)
    return run, HelmParsed(folder=folder, spec=spec)


def _doc_ids(keys: list[str]) -> dict[str, int]:
    """Instance id → doc id: N of ``id<N>`` where every id has that form (and N is unique), else file order."""
    numbers = [int(m.group(1)) if (m := INSTANCE_ID.fullmatch(k)) else None for k in keys]
    ids = [n for n in numbers if n is not None]
    if len(ids) == len(numbers) and len(set(ids)) == len(ids):
        return dict(zip(keys, ids))
    return {k: i for i, k in enumerate(keys)}


def _docs(folder: Path, one_split: bool) -> tuple[dict[int, DocOutcome], list[str]]:
    """The run's docs: per-instance correctness from ``per_instance_stats.json``, texts from
    ``scenario_state.json`` (either may be absent)."""
    metrics: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    if (folder / "per_instance_stats.json").is_file():
        rows, notes = _list(folder / "per_instance_stats.json", InstanceStats, "per_instance_stats.json")
        for row in rows:
            if row.train_trial_index != 0 or row.perturbation:
                continue
            values = metrics.setdefault(str(row.instance_id), {})
            for s in row.stats:
                if not s.name.perturbation and s.mean is not None and not REQUEST_STATS.fullmatch(s.name.name):
                    values.setdefault(_key(s.name, one_split), s.mean)
    texts: dict[str, dict[str, Any]] = {}
    if (folder / "scenario_state.json").is_file():
        texts, more = _texts(folder / "scenario_state.json")
        notes += more
    keys = list(metrics) or list(texts)
    ids = _doc_ids(keys)
    docs = {}
    for k in keys:
        t = texts.get(k, {})
        prompt = t.get("prompt")
        docs[ids[k]] = DocOutcome(doc_id=ids[k], doc_hash=None, target=t.get("target"), cluster=None,
                                  prompt_hash=sha256_text(prompt) if isinstance(prompt, str) else None,
                                  metrics=metrics.get(k, {}), prediction=t.get("prediction"),
                                  choices_hash=sha256_json(t["choices"]) if t.get("choices") else None,
                                  generation=t.get("generation"), prompt=t.get("prompt"), choices=t.get("choices"),
                                  key=k)
    return docs, notes


def _texts(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Instance id → its prompt, choices, target, prediction and generation, from the first request state of train
    trial 0 without a perturbation.

    Raises:
        InputError: not an object with ``request_states``, or a request state that fails its model.
    """
    obj = read_json(path, what="scenario_state.json")
    states = obj.get("request_states") if isinstance(obj, dict) else None
    if not isinstance(states, list):
        raise InputError(path, "$.request_states", "is missing or not an array (a HELM scenario_state.json holds one)")
    out: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for i, entry in enumerate(states):
        rs, dropped = validate(RequestState, entry, path, prefix=("request_states", i),
                               schema="HELM scenario_state.json")
        notes += [f"'{path}': {d}" for d in dropped]
        inst = rs.instance
        if rs.train_trial_index != 0 or inst.perturbation or inst.id is None or str(inst.id) in out:
            continue
        out[str(inst.id)] = _text_of(rs)
    return out, notes


def _text_of(rs: RequestState) -> dict[str, Any]:
    """One instance's texts (see :func:`_texts`)."""
    refs = [r.output.text if r.output is not None and r.output.text is not None else "" for r in
            rs.instance.references or []]
    correct = [i for i, r in enumerate(rs.instance.references or []) if "correct" in (r.tags or [])]
    completions = rs.result.completions if rs.result is not None and rs.result.completions else []
    raw = completions[0].text if completions else None
    out: dict[str, Any] = {"prompt": rs.request.prompt if rs.request is not None else None}
    if rs.output_mapping:  # multiple_choice_joint: letters mapped to the references' texts
        letters = sorted(rs.output_mapping)
        out["choices"] = [rs.output_mapping[k] for k in letters]
        right = {refs[i] for i in correct if i < len(refs)}
        target = [k for k in letters if rs.output_mapping[k] in right]
        out["target"] = target[0] if len(target) == 1 else None
        out["prediction"] = raw.strip() if isinstance(raw, str) else None
    elif rs.reference_index is not None:  # a separate request per reference: no single prediction
        out["choices"] = refs or None
        out["target"] = refs[correct[0]] if len(correct) == 1 else None
    else:
        out["target"] = refs[correct[0]] if correct else None
        out["prediction"] = raw.strip() if isinstance(raw, str) else None
        out["generation"] = raw
    return out
