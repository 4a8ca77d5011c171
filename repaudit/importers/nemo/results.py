"""NeMo Evaluator's files as a run: ``results.yml`` (one task each; a folder of them — an invocation's output — is one
run), and ``processed_results.json`` (an export of one model's invocations).

``results.yml``:

* **Task**: ``config.type`` (else the one task of ``results.tasks``); every task of ``results.tasks``, and every group
  of ``results.groups`` that is not also a task (a group row). **Scores**: ``metrics.<metric>.scores.<score>.value``,
  keyed ``<metric>_<score>`` (``score_micro``) — ``<metric>`` alone where the score repeats the metric's name — as
  ``nemo-evaluator-launcher export`` names them; their ``stats.stderr`` is the standard error, ``stats.count`` the doc
  count.
* **Settings**, each with where it is: the settings fields' ``nemo`` keys (:func:`repaudit.settings.harness_map`)
  over ``config.params`` (what was asked, null where left to the harness), the ``command`` the harness ran (the
  values it actually passed: ``--temperature 0.0`` where ``params.temperature`` is null) and the enabled interceptors
  of the endpoint's adapter (``system_message``; none among them: no system prompt, derived); the model
  (``target.api_endpoint.model_id``), the endpoint (``url``) and its type (chat, completions), NeMo Evaluator's
  ``git_hash``; every other parameter as ``other.<name>``. A temperature of 0 is greedy decoding.

``processed_results.json``: one model, and one invocation per benchmark (else refused, naming what it holds); tasks
are the benchmarks, scores their ``scores`` without the benchmark's name in front (an export that repeats a
metric's name, ``inst_level_loose_acc_inst_level_loose_acc``, is read as the name once); the model, harness, container
and executor recorded; no statistics, so rows compare without an interval.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from repaudit.boundary import InputError, read_json, read_yaml, validate
from repaudit.importers.comparable import ComparableRun, TaskOutcome
from repaudit.importers.declared import Source, greedy_at_zero, read_declared, source
from repaudit.importers.nemo.schema import ProcessedResults, ResultsYaml, TaskResult
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

HARNESS = "NeMo Evaluator"
#: the sources this reader builds for the nemo keys of the settings fields
SOURCES = ("params", "command", "interceptors")
#: the file names NeMo Evaluator writes a task's results under
RESULTS_NAMES = ("results.yml", "results.yaml")
#: most results files an output folder is searched for
MAX_FILES = 2000


def metric_key(metric: str, score: str) -> str:
    """``<metric>_<score>``, or ``<metric>`` where the score repeats it (the launcher's export names them so)."""
    return metric if score == metric else f"{metric}_{score}"


def command_source(command: str | None) -> Source:
    """Every ``--flag value`` of the harness's command line (the part after the last ``&&``), each at
    ``command: --flag``; a flag without a value is ``True``."""
    if not command:
        return {}
    part = command.split("&&")[-1]
    try:
        words = shlex.split(part)
    except ValueError:
        words = part.split()
    out: Source = {}
    for i, w in enumerate(words):
        if not w.startswith("--") or len(w) < 3:
            continue
        name = w[2:].replace("-", "_")
        nxt = words[i + 1] if i + 1 < len(words) else None
        out[name] = (nxt if nxt is not None and not nxt.startswith("--") else True, f"command: {w}")
    return out


def _program(command: str | None) -> str | None:
    """The harness program the command ran (``simple_evals``)."""
    if not command:
        return None
    try:
        words = shlex.split(command.split("&&")[-1])
    except ValueError:
        words = command.split("&&")[-1].split()
    return words[0] if words else None


def _record(doc: ResultsYaml, task: str, at: str) -> Recorded:
    """One task's settings and facts (see the module docstring); ``at``: the file, for the keys of group rows."""
    rec = Recorded()
    params = (doc.config.params if doc.config else None) or {}
    ep = doc.target.api_endpoint if doc.target else None
    interceptors: Source = {}
    for i, ic in enumerate((ep.adapter_config.interceptors if ep and ep.adapter_config else None) or []):
        if ic.enabled is False or not isinstance(ic.config, dict):
            continue
        if ic.name == "system_message" and "system_message" in ic.config:
            interceptors["system_message"] = (ic.config["system_message"], f"target.api_endpoint.adapter_config."
                                              f"interceptors[{i}].config.system_message")
    # a null parameter is left to the harness (the command then says what it passed); a null limit is no limit
    asked = {k: v for k, v in params.items() if v is not None or k == "limit_samples"}
    read_declared("nemo", {"params": source(asked, "config.params."), "command": command_source(doc.command),
                           "interceptors": interceptors}, rec)
    listed = ep.adapter_config.interceptors if ep and ep.adapter_config else None
    if listed is not None and not rec.known("prompt.system_prompt"):
        rec["prompt.system_prompt"] = derived(None, "no system_message interceptor among the endpoint's "
                                                    "(target.api_endpoint.adapter_config.interceptors)")
    if ep is not None:
        if ep.model_id:
            rec.put("model.name", ep.model_id, "target.api_endpoint.model_id")
        if ep.url:
            rec.put("model.base_url", ep.url, "target.api_endpoint.url")
        if ep.type:
            rec.put("other.endpoint_type", ep.type, "target.api_endpoint.type")
        if ep.adapter_config and ep.adapter_config.interceptors:
            rec.put("other.interceptors", [ic.name for ic in ep.adapter_config.interceptors if ic.enabled is not False],
                    "target.api_endpoint.adapter_config.interceptors[].name")
    mapped = {key for places in _nemo_map().values() for src, key in places if src == "params"}
    for k, v in sorted(params.items()):
        if k not in mapped and v not in (None, {}, []):
            rec.put(f"other.{k}", v, f"config.params.{k}")
    program = _program(doc.command)
    if program:
        rec.put("other.harness", program, "command")
    if doc.git_hash:
        rec.put("software.nemo_evaluator_git_hash", doc.git_hash, "git_hash")
    rec.put("data.task", task, "config.type" if doc.config and doc.config.type == task else f"results.tasks.{task}")
    greedy_at_zero(rec, "temperature 0: the endpoint decodes greedily")
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _nemo_map() -> dict[str, list[tuple[str, str]]]:
    from repaudit.settings import harness_map

    return harness_map("nemo")


def _outcome(task: str, result: TaskResult, is_group: bool) -> TaskOutcome:
    reported: dict[str, tuple[float, float | None]] = {}
    counts = []
    for metric, m in result.metrics.items():
        for name, sc in m.scores.items():
            stats = sc.stats
            reported[metric_key(metric, name)] = (sc.value, stats.stderr if stats else None)
            if stats is not None and stats.count is not None:
                counts.append(stats.count)
    n = counts[0] if counts and len(set(counts)) == 1 else None
    return TaskOutcome(task=task, reported=reported, docs=None, n_docs=n, is_group=is_group)


def read_results_yaml(path: Path) -> tuple[dict[str, Recorded], dict[str, TaskOutcome], ResultsYaml, list[str]]:
    """A ``results.yml``: per task, its record and outcome; the typed file; notes of what was dropped.

    Raises:
        InputError: not YAML, over a limit, or no ``results`` (its JSON path named).
    """
    obj = read_yaml(path, "NeMo Evaluator results file")
    doc, dropped = validate(ResultsYaml, obj, path, schema="NeMo Evaluator results.yml")
    notes = [f"'{path.name}': {d}" for d in dropped]
    tasks = doc.results.tasks or {}
    groups = {g: r for g, r in (doc.results.groups or {}).items() if g not in tasks}
    factors, outcomes = {}, {}
    for name, result in [*tasks.items(), *groups.items()]:
        outcomes[name] = _outcome(name, result, name in groups)
        factors[name] = _record(doc, name, str(path))
        if outcomes[name].n_docs is not None:
            factors[name]["data.n_docs"] = derived(outcomes[name].n_docs, "stats.count of the task's scores")
    if not outcomes:
        raise InputError(path, "$.results", "holds no task and no group: a NeMo Evaluator results file lists them "
                                            "under results.tasks")
    return factors, outcomes, doc, notes


def results_files(folder: Path) -> list[Path]:
    """The ``results.yml`` files under ``folder`` (an invocation's output: ``<task>/artifacts/results.yml``), sorted.

    Raises:
        InputError: more than :data:`MAX_FILES` of them.
    """
    found = []
    for n, p in enumerate(sorted(q for q in folder.rglob("*") if q.name in RESULTS_NAMES and q.is_file())):
        if n >= MAX_FILES:
            raise InputError(folder, None, f"holds more than {MAX_FILES} NeMo Evaluator results files: pass one")
        found.append(p)
    return found


def load_results(path: Path) -> ComparableRun:
    """A ``results.yml``, or a folder of them (one invocation's tasks: one model), as one run.

    Raises:
        InputError: a file that fails its checks, a folder without results files, two files of one task, files of
            several models.
    """
    files = results_files(path) if path.is_dir() else [path]
    if not files:
        raise InputError(path, None, "holds no NeMo Evaluator results.yml")
    run = ComparableRun(path=str(path), source=HARNESS, factors={})
    models: dict[str, str] = {}
    for f in files:
        factors, outcomes, doc, notes = read_results_yaml(f)
        run.notes += notes
        ep = doc.target.api_endpoint if doc.target else None
        models.setdefault(str(ep.model_id if ep else None), f.name)
        for task in outcomes:
            if task in run.tasks:
                raise InputError(path, None, f"holds two results files of task '{task[:60]}': pass one of them, or a "
                                             "folder of one invocation")
            run.factors[task], run.tasks[task] = factors[task], outcomes[task]
    if len(models) > 1:
        raise InputError(path, None, f"holds the results of {len(models)} models ({', '.join(sorted(models)[:3])}): "
                                     "pass one invocation's folder")
    return run


def _strip(name: str, benchmark: str) -> str:
    """A processed score's name without its benchmark in front, a doubled metric name once (see the module
    docstring)."""
    key = name[len(benchmark) + 1:] if name.startswith(benchmark + "_") else name
    half, rest = divmod(len(key) - 1, 2)
    if not rest and key[:half] == key[half + 1:] and key[half] == "_":
        key = key[:half]
    return key


def load_processed(path: Path, obj: Any = None) -> ComparableRun:
    """A ``processed_results.json`` of one model (see the module docstring).

    Raises:
        InputError: fails its checks; several models, or several invocations of one benchmark.
    """
    obj = read_json(path, what="NeMo Evaluator processed_results.json") if obj is None else obj
    doc, dropped = validate(ProcessedResults, obj, path, schema="NeMo Evaluator processed_results.json")
    models = sorted({m for b in doc.benchmarks.values() for m in b.models})
    if len(models) != 1:
        raise InputError(path, "$.benchmarks", f"holds {len(models)} models ({', '.join(models[:3])}): a run is one "
                                               "model's — export one model's invocations")
    (model,) = models
    run = ComparableRun(path=str(path), source=HARNESS + " (launcher export)", factors={},
                        notes=[f"'{path.name}': {d}" for d in dropped])
    for bench, b in doc.benchmarks.items():
        entries = b.models.get(model) or []
        if len(entries) != 1:
            raise InputError(path, f"$.benchmarks.{bench}.models", f"holds {len(entries)} invocations of benchmark "
                                                                    f"'{bench[:40]}': a run is one of them")
        e = entries[0]
        at = f"benchmarks.{bench}.models[{model!r}][0]"
        rec = Recorded()
        rec.put("model.name", model, f"benchmarks.{bench}.models (its key)")
        rec.put("data.task", bench, f"benchmarks.{bench} (its key)")
        for k in ("harness", "container", "executor"):
            v = getattr(e, k)
            if v:
                rec.put(f"other.{k}", v, f"{at}.{k}")
        run.factors[bench] = apply_conditions(rec.fill(setting_paths())).sorted()
        run.tasks[bench] = TaskOutcome(task=bench, reported={_strip(k, bench): (v, None) for k, v in e.scores.items()},
                                       docs=None, n_docs=None)
    return run
