"""inspect_ai evaluation logs (``.eval`` and ``.json``) as a :class:`ComparableRun`.

**Layouts.** A ``.eval`` log is a ZIP (members Zstandard-compressed by default, deflated by older or
converted logs) holding ``header.json`` (the ``EvalLog`` without samples), ``summaries.json``,
``reductions.json`` (each sample's score after the epochs reducer) and one member per sample and epoch:
``samples/{id}_epoch_{n}.json`` (the whole ``EvalSample``) or, in the folder shape of inspect's large-sample
design (``design/large-samples.md``, mid-2026), ``samples/{id}_epoch_{n}/sample.json`` (a shell with the
scores, input, target and output; messages, events and attachments in chunk members that are not read).
Both shapes can mix in one log; ``EvalLog.version`` is 2 for all of them, so the shape is told per sample
from the entry names. A run that crashed (or is still running) has no ``header.json``: its
``_journal/start.json`` gives the spec and plan, and the samples written so far are read, with a note.
A ``.json`` log is the same ``EvalLog`` with ``samples`` and ``reductions`` inline.

**Reader.** repaudit reads the ZIP itself through :class:`repaudit.ziparchive.ZipArchive` (entry count, names
and declared sizes checked before anything is decompressed; no member decompressed past its declared size)
into the typed models of :mod:`repaudit.importers.inspectai.schema`. inspect's own ``read_eval_log`` is the
stable surface its maintainers recommend, but it is not used here: the boundary must open the archive
anyway to check it before any reader touches it, inspect_ai pulls ~50 packages (an ``aiobotocore``/``s3fs``
stack that pins ``fsspec`` below what ``datasets`` here uses), and its validation errors do not name a
JSON path. The tests check this reader against ``read_eval_log`` where inspect_ai is installed.

**Samples → docs.** One log is one task (``eval.task``). A doc is a sample id; its doc id is the sample's
position in ``eval.dataset.sample_ids`` (the order the run drew them), else in id order. Its ``key`` (the
sample id) pairs two inspect runs whose orders differ; its ``doc_hash`` is the sha256 of its content
(input messages, choices, target), so docs paired by id or position are checked by content. With several
epochs a doc's value is its reduced score (``reductions.json``; inspect's default reducer is the mean),
and the spread between epochs is reported as the run's own noise.

**Scores → metrics.** A per-sample score value becomes a number as inspect's ``value_to_float`` does
(``C`` 1, ``P`` 0.5, ``I``/``N`` 0, ``yes``/``true`` 1, ``no``/``false`` 0, numeric strings and numbers as
themselves); the per-doc values of a score are kept under each of its mean-type metrics (``accuracy``,
``mean``). Metric keys are the metric name, or ``metric,score`` where the log has several scores.

Raises (any entry point): :class:`~repaudit.boundary.InputError` for a malformed log, one line naming the
file, the member and the JSON path.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any

from repaudit.boundary import InputError, validate
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome
from repaudit.importers.inspectai.factors import SPREAD_METRICS, task_record
from repaudit.importers.inspectai.schema import EvalLog, EvalSample, SampleReductions
from repaudit.tasks.filters import INVALID
from repaudit.ziparchive import ZipArchive, is_zip

#: ``samples/{id}_epoch_{n}.json`` (monolith) and ``samples/{id}_epoch_{n}/sample.json`` (folder shape)
_MONOLITH = re.compile(r"samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json")
_FOLDER = re.compile(r"samples/(?P<id>.+)_epoch_(?P<epoch>\d+)/sample\.json")
#: metrics whose value is the mean of the per-sample values (so per-doc values exist for them)
MEAN_METRICS = ("accuracy", "mean")
#: inspect's ``stop_reason`` → repaudit's finish reason (``None``: not recorded)
_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length", "tool_calls": "tool_calls",
           "content_filter": "content_filter", "unknown": None}


def value_to_float(value: Any) -> float | None:
    """A score value as a number, as inspect's ``value_to_float()`` maps it; ``None`` where inspect would
    warn and use 0 (lists, dicts, other strings), so that such a doc is not silently scored 0."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        v = value.strip()
        if v in ("C",):
            return 1.0
        if v in ("P",):
            return 0.5
        if v in ("I", "N"):
            return 0.0
        if v.lower() in ("yes", "true"):
            return 1.0
        if v.lower() in ("no", "false"):
            return 0.0
        try:
            x = float(v)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    return None


def _text(content: Any, attachments: dict[str, str]) -> str:
    """A message's text; ``attachment://<key>`` references resolved where the sample carries them."""
    if isinstance(content, list):
        return "\n".join(_text(p.get("text", ""), attachments) for p in content
                         if isinstance(p, dict) and p.get("type", "text") == "text")
    s = str(content)
    if s.startswith("attachment://"):
        return attachments.get(s[len("attachment://"):], s)
    return s


def messages_of(msgs: Any, attachments: dict[str, str]) -> list[tuple[str, str]]:
    if isinstance(msgs, str):
        return [("user", _text(msgs, attachments))]
    return [(m.role, _text(m.content, attachments)) for m in msgs or []]


def _render(msgs: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"[{role}]\n{text}" for role, text in msgs)


def read_log(path: Path, raw: Any = None) -> tuple[EvalLog, list[tuple[EvalSample, str]], list[SampleReductions] | None,
                                                list[str]]:
    """The log's header, its samples (with the shape each was read from), its reductions and notes."""
    notes: list[str] = []
    if is_zip(path):
        with ZipArchive(path, what="inspect_ai .eval log") as z:
            names = z.names()
            if "header.json" in names:
                header, n = validate(EvalLog, z.json("header.json"), path, where="header.json: ")
            elif "_journal/start.json" in names:
                header, n = validate(EvalLog, z.json("_journal/start.json"), path, where="_journal/start.json: ")
                notes.append("the log has no header.json: the run did not finish (it crashed or is still running); "
                             "its spec comes from _journal/start.json and only the samples written are read")
            else:
                raise InputError(path, None, "is a ZIP archive but not an inspect_ai .eval log (it has neither "
                                             "header.json nor _journal/start.json)")
            notes += n
            samples = []
            for name in names:
                shape = "monolith" if _MONOLITH.fullmatch(name) else "folder" if _FOLDER.fullmatch(name) else None
                if shape:
                    s, n = validate(EvalSample, z.json(name), path, where=f"{name}: ")
                    samples.append((s, shape))
                    notes += n
            reductions = None
            if "reductions.json" in names:
                raw = z.json("reductions.json")
                if not isinstance(raw, list):
                    raise InputError(path, "$", "is not a list of reductions", where="reductions.json: ")
                reductions = [validate(SampleReductions, r, path, prefix=(i,), where="reductions.json: ")[0]
                              for i, r in enumerate(raw)]
        return header, samples, reductions, notes
    from repaudit.boundary import read_json

    obj = read_json(path, what="inspect_ai log") if raw is None else raw
    header, notes = validate(EvalLog, obj, path)
    samples = [(validate(EvalSample, s, path, prefix=("samples", i))[0], "json")
               for i, s in enumerate(header.samples or [])]
    reductions = None if header.reductions is None else [
        validate(SampleReductions, r, path, prefix=("reductions", i))[0] for i, r in enumerate(header.reductions)]
    return header, samples, reductions, notes


def _by_sample(path: Path, samples: list[tuple[EvalSample, str]]
               ) -> tuple[dict[str, dict[int, EvalSample]], dict[str, Any], dict[str, int]]:
    """Samples by id (as a string) and epoch, each id as the log records it, and how many samples each shape held.

    Raises:
        InputError: the same (sample, epoch) twice.
    """
    by_id: dict[str, dict[int, EvalSample]] = {}
    shapes: dict[str, int] = {}
    ids: dict[str, Any] = {}
    for s, shape in samples:
        k = str(s.id)
        if s.epoch in by_id.get(k, {}):
            raise InputError(path, None, f"holds sample '{k[:80]}' epoch {s.epoch} twice")
        by_id.setdefault(k, {})[s.epoch] = s
        ids[k] = s.id
        shapes[shape] = shapes.get(shape, 0) + 1
    return by_id, ids, shapes


def _doc_means(docs: dict[int, DocOutcome]) -> dict[str, tuple[float, float | None]]:
    """Metric key → (mean, standard error) over the docs, the scores of a log that records no results."""
    out: dict[str, tuple[float, float | None]] = {}
    for key in sorted({m for d in docs.values() for m in d.metrics}):
        vals = [d.metrics[key] for d in docs.values() if key in d.metrics]
        out[key] = (statistics.fmean(vals), statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else None)
    return out


def load_inspect(path: Path, raw: Any = None) -> tuple[ComparableRun, tuple[EvalLog, list]]:
    """Import an inspect_ai log (``.eval`` or ``.json``; ``raw`` is a ``.json`` log already parsed with the
    boundary's limits, if the caller has it); see the module docstring. Returns the run and the log's header with
    its samples (what its replay reads).

    Raises:
        InputError: the file fails the boundary or the schema, or holds the same (sample, epoch) twice.
    """
    path = Path(path)
    header, samples, reductions, notes = read_log(path, raw)
    spec = header.eval
    task = spec.task
    run = ComparableRun(path=str(path), source="inspect_ai " + ((spec.packages or {}).get("inspect_ai") or "?"),
                        factors={}, notes=[f"'{path}': {n}" for n in notes])
    if header.status and header.status not in ("success",):
        err = (header.error or {}).get("message") if isinstance(header.error, dict) else None
        run.notes.append(f"{task}: the log's status is '{header.status}'"
                         + (f" ({str(err).splitlines()[0][:160]})" if err else "")
                         + ": its samples are read as far as they go")
    by_id, ids, shapes = _by_sample(path, samples)
    if len(shapes) > 1 or "folder" in shapes:
        run.notes.append(f"{task}: sample shapes read: " + ", ".join(f"{n} {s}" for s, n in sorted(shapes.items())))
    reported, score_names = _reported(header)
    means = _mean_metrics(header)
    score_names = score_names or list(means)
    order = doc_order(header, list(by_id), ids)
    reduced = _reduced(reductions)
    docs: dict[int, DocOutcome] = {}
    epoch_values: dict[str, list[list[float]]] = {}
    unconvertible: set[str] = set()
    for doc_id, k in enumerate(order):
        epochs = by_id[k]
        d, per_epoch = _doc(doc_id, k, epochs, reduced, score_names, means, unconvertible)
        docs[doc_id] = d
        for name, vals in per_epoch.items():
            epoch_values.setdefault(name, []).append(vals)
    if unconvertible:
        run.notes.append(f"{task}: score(s) {', '.join(sorted(unconvertible))} hold values inspect's value_to_float "
                         "cannot convert (lists, dicts, text): those docs carry no value for them")
    run.notes += _epoch_notes(task, spec.config.epochs if spec.config else None, epoch_values, reductions)
    if header.results is None and docs:
        reported.update(_doc_means(docs))
        run.notes.append(f"{task}: the log records no results; scores are the means over the {len(docs)} samples "
                         "it holds, with their standard errors")
    if not docs:
        run.notes.append(f"{task}: the log holds no samples (written with --no-log-samples, or none finished): "
                         "reported scores only")
    run.factors[task] = task_record(header, docs, by_id)
    run.tasks[task] = TaskOutcome(task=task, reported=reported, docs=docs or None, n_docs=len(docs) or None,
                                  n_original=spec.dataset.samples if spec.dataset else None,
                                  diagnostics=_diagnostics(docs) if docs else None,
                                  higher_is_better={k: True for k in reported})
    return run, (header, samples)


def _reported(header: EvalLog) -> tuple[dict[str, tuple[float, float | None]], list[str]]:
    """Metric key → (value, stderr) from ``results.scores``, and the score names in order."""
    scores = header.results.scores if header.results else []
    names = list(dict.fromkeys(s.name for s in scores))
    out: dict[str, tuple[float, float | None]] = {}
    for s in scores:
        se = s.metrics.get("stderr")
        stderr = float(se.value) if se is not None and isinstance(se.value, (int, float)) else None
        for m, metric in s.metrics.items():
            if m in SPREAD_METRICS or not isinstance(metric.value, (int, float)) or isinstance(metric.value, bool):
                continue
            out[metric_key(m, s.name, names)] = (float(metric.value), stderr)
    return out, names


def _mean_metrics(header: EvalLog) -> dict[str, list[str]]:
    """score name → its mean-type metrics (:data:`MEAN_METRICS`), from the results, else from the scorers the
    spec lists (a crashed log has no results); a score whose metrics are unknown gets ``accuracy``."""
    if header.results is not None and header.results.scores:
        return {s.name: [m for m in s.metrics if m in MEAN_METRICS] for s in header.results.scores}
    out = {}
    for sc in header.eval.scorers or []:
        names = [m.name.rsplit("/", 1)[-1] for m in sc.metrics or []]
        out[sc.name] = [m for m in names if m in MEAN_METRICS] if names else ["accuracy"]
    return out


def metric_key(metric: str, score: str, names: list[str]) -> str:
    """``accuracy`` where the log has one score, ``accuracy,choice`` where it has several."""
    return metric if len(names) <= 1 else f"{metric},{score}"


def doc_order(header: EvalLog, keys: list[str], ids: dict[str, Any]) -> list[str]:
    """Sample ids in the run's dataset order (``eval.dataset.sample_ids``), others after them in id order."""
    listed = [str(i) for i in (header.eval.dataset.sample_ids or [])] if header.eval.dataset else []
    present = set(keys)
    first = [k for k in dict.fromkeys(listed) if k in present]
    rest = sorted(present - set(first), key=lambda k: (not isinstance(ids[k], int), ids[k] if isinstance(ids[k], int)
                                                       else 0, k))
    return first + rest


def _reduced(reductions: list[SampleReductions] | None) -> dict[str, dict[str, Any]]:
    """score name → sample id → reduced value."""
    out: dict[str, dict[str, Any]] = {}
    for r in reductions or []:
        out.setdefault(r.scorer, {}).update({str(s.sample_id): s for s in r.samples})
    return out


def _doc(doc_id: int, key: str, epochs: dict[int, EvalSample], reduced: dict[str, dict[str, Any]],
         score_names: list[str], means: dict[str, list[str]],
         unconvertible: set[str]) -> tuple[DocOutcome, dict[str, list[float]]]:
    """One doc from its samples (one per epoch): the first epoch's text, the reduced score."""
    first = epochs[min(epochs)]
    att = first.attachments or {}
    msgs = messages_of(first.input, att)
    choices = list(first.choices) if first.choices else None
    target = first.target if isinstance(first.target, str) else "\n".join(first.target)
    names = score_names or sorted({n for s in epochs.values() for n in (s.scores or {})})
    metrics: dict[str, float] = {}
    per_epoch: dict[str, list[float]] = {}
    extracted: dict[str, str] = {}
    prediction: str | None = None
    for name in names:
        vals = []
        for e in sorted(epochs):
            sc = (epochs[e].scores or {}).get(name)
            v = value_to_float(sc.value) if sc is not None else None
            if sc is not None and v is None:
                unconvertible.add(name)
            if v is not None:
                vals.append(v)
        red = reduced.get(name, {}).get(key)
        value = value_to_float(red.value) if red is not None else (
            statistics.fmean(vals) if vals and len(vals) == len(epochs) else None)
        if value is not None:
            for m in means.get(name, ["accuracy"]):
                metrics[metric_key(m, name, names)] = value
        per_epoch[name] = vals
        sc = (first.scores or {}).get(name)
        if sc is not None:
            extracted[name] = sc.answer if sc.answer else INVALID
            if prediction is None and sc.answer is not None:
                prediction = sc.answer
    out = first.output
    completion = out.completion if out is not None else None
    if completion is None and out is not None and out.choices and out.choices[0].message is not None:
        completion = _text(out.choices[0].message.content, att)
    stop = out.choices[0].stop_reason if out is not None and out.choices else None
    prompt_msgs = prompt_messages(first, att)
    prompt = _render(prompt_msgs) if prompt_msgs is not None else None
    d = DocOutcome(doc_id=doc_id, doc_hash=sha256_json({"input": msgs, "choices": choices, "target": target}),
                   prompt_hash=sha256_text(prompt) if prompt is not None else None, target=target, cluster=None,
                   metrics=metrics, prediction=prediction,
                   choices_hash=sha256_json(choices) if choices else None, generation=completion,
                   extracted=extracted or None, generated_tokens=None, finish=_FINISH.get(stop or "unknown"),
                   prompt=prompt if prompt is not None else _render(msgs), choices=choices, key=key,
                   content=(msgs[-1][1] if msgs else "", choices, target))
    return d, per_epoch


def prompt_messages(s: EvalSample, att: dict[str, str]) -> list[tuple[str, str]] | None:
    """The conversation the model answered: ``messages`` without the final assistant turn (the output);
    ``None`` where the sample keeps no messages (the folder shape keeps them in chunk members)."""
    if not s.messages:
        return None
    msgs = messages_of(s.messages, att)
    if msgs and msgs[-1][0] == "assistant":
        msgs = msgs[:-1]
    return msgs


def _epoch_notes(task: str, epochs: int | None, values: dict[str, list[list[float]]],
                 reductions: list[SampleReductions] | None) -> list[str]:
    """The spread of a score between epochs of the same sample: the run's own noise."""
    notes = []
    for name, per_doc in values.items():
        multi = [v for v in per_doc if len(v) > 1]
        if not multi:
            continue
        differ = sum(1 for v in multi if max(v) != min(v))
        sd = math.sqrt(statistics.fmean(statistics.pvariance(v) for v in multi))
        reducer = ", ".join(sorted({r.reducer or "mean" for r in reductions or [] if r.scorer == name})) or \
            "mean (no reductions recorded)"
        notes.append(f"{task}: {name} over {max(len(v) for v in multi)} epochs ({reducer}): {differ} of {len(multi)} "
                     f"samples score differently between epochs; within-sample sd {sd:.3f} (the run's own "
                     "sampling noise, per doc on the 0-1 scale)")
    if epochs and epochs > 1 and not notes:
        notes.append(f"{task}: {epochs} epochs recorded, every sample scored the same in each")
    return notes


def _diagnostics(docs: dict[int, DocOutcome]):
    """inspect's solvers generate; a multiple-choice doc's answer is what its scorer extracted."""
    from repaudit.run.diagnostics import diagnose

    unknown = {"gen_tokens": "inspect's per-sample token usage is the batch's in its hf provider, not the sample's"}
    if all(d.finish is None for d in docs.values()):
        unknown["truncated"] = "every sample's stop_reason is 'unknown' (inspect's hf provider does not record it)"
    return diagnose(list(docs.values()), True, unknown=unknown)
