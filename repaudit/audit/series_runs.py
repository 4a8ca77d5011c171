"""What each run of a series is, before any statistic: its training step, its series (the model it
evaluates), what its file name claims against what it records, which runs scored other docs, and which
settings differ between the runs (confounders).

* **step** — the recorded training step (``model.step``: GPT-NeoX evaluate.py's ``model_args.iteration``), else read
  from the recorded model revision (``revision=step83000`` in lm-eval's ``model_args``, a repaudit fingerprint's
  model revision, OLMo's ``stage1-step1000-tokens4B``), else from the file name — failing that, its folders'
  names, nearest first (a PEFT series' ``epoch_5/results_….json``) — with ``--step-from REGEX`` (its first group,
  or the group named ``step``) as a last resort. A recorded step always wins over a name.
* **contradictions** — a file name that says ``5shot``, ``step128`` or ``bf16`` while the file records another
  n-shot, step or dtype is named, and the file is read by what it records (Pythia's ``1b-bf16-5shot_step128.json``
  records ``num_fewshot: 0``).
* **doc sets** — per task, the runs are checked against the run that agrees with most others (per-doc ids and
  content hashes where both record them, else counts, limit and split as :mod:`repaudit.audit.docsets` decides
  for ``compare``); a run that scored other docs is left out of that task with the reason.
* **confounders** — every setting and fact of the vocabulary (:mod:`repaudit.vocabulary`, as ``compare``
  diffs them) whose value is not the same in every run of a series, with each run's value; where
  ``compare`` would judge two spellings one setting (``cuda:0`` and ``cuda:7``) it is still listed, with that
  judgement. Fields the series varies on purpose (the revision of a checkpoint series) are marked ``by_design``; in
  a series of models, so is every field each run reads from its model's id (inspect's ``openai/gpt-4o``: the
  provider, the backend), since changing the model changes it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import doc_set, same_docs
from repaudit.errors import RepauditError
from repaudit.importers.comparable import ComparableRun
from repaudit.vocabulary import NOT_RECORDED as NOT_RECORDED_VALUE
from repaudit.vocabulary import shown

Across = Literal["checkpoint", "seed", "model"]
#: a training step inside a revision or file name: ``step143000``, ``global_step1500``, ``stage1-step1000-…``
STEP = re.compile(r"(?i)(?<![a-z])step[_-]?(\d+)")
#: an n-shot inside a file name: ``5shot``, ``5-shot``, ``0_shot``
SHOT = re.compile(r"(?i)(?<![a-z0-9])(\d+)[-_ ]?shot")
#: dtype words in file names -> the dtype they name
DTYPE_WORDS = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "half": "float16",
               "fp32": "float32", "float32": "float32"}
#: factor fields each kind of series varies on purpose
BY_DESIGN: dict[str, set[tuple[str, str | None]]] = {
    "checkpoint": {("model", "revision"), ("model", "sha"), ("model", "weights_sha256"), ("model", "step")},
    "seed": {("seeds", None), ("generation", "sampling_seed")},
    "model": {("model", "name"), ("model", "revision"), ("model", "sha"), ("model", "weights_sha256"),
              ("model", "num_parameters"), ("model", "step"), ("model", "provider"), ("tokenizer", None)},
}
NOT_RECORDED = "model not recorded"


class SeriesRun(BaseModel):
    """One run file of a series as the series reads it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    path: str
    """The file as given."""
    name: str
    """Its label in every table: the file name, or the path where two files share a name."""
    source: str
    """The harness and version that wrote it (``lm-eval 0.3``, ``repaudit 0.9.0``)."""
    series: str
    """The series it belongs to: the model name it records (``EleutherAI/pythia-v1.1-160m``)."""
    step: int | None
    """Training step, ``None`` where neither the revision nor ``--step-from`` gives one."""
    step_from: str | None
    """Where the step was read: ``model revision 'step143000'``, ``file name (--step-from)`` or ``folder 'epoch_5'
    (--step-from)``."""
    contradictions: list[str] = []
    """What the file name claims against what the file records, one sentence each (the recorded value is used)."""


class Confounder(BaseModel):
    """One setting or fact whose value is not the same in every run of a series."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    series: str
    """The series (model name; ``all runs`` for a seed or model series)."""
    path: str
    """The vocabulary path (:mod:`repaudit.vocabulary`): ``serving.batch_size``, ``serving.device``,
    ``fewshot.num_fewshot``, …"""
    values: dict[str, str]
    """Run label -> its value as text, provenance included (``not recorded`` where the file does not record it,
    ``default of lm-eval 0.4.2: 256`` for a harness default)."""
    judged: Literal["differs", "not recorded by every run", "one setting as compare judges it"]
    """How ``compare`` judges the values against the first run's: ``differs``; ``not recorded by every run``; or
    written differently but one setting (``cuda:0`` and ``cuda:7``; the reason in ``note``)."""
    note: str = ""
    """Why compare judges the values one setting."""
    by_design: bool
    """The series varies this field on purpose (the checkpoint revision, the seed of a seed series)."""
    tasks: list[str] = []
    """The tasks where it differs; empty: every task of the report."""

    @property
    def group(self) -> str:
        """The path's group (``serving``, ``model``)."""
        return self.path.partition(".")[0]

    @property
    def field(self) -> str:
        """The path's field."""
        return self.path.partition(".")[2]


class LeftOut(BaseModel):
    """Runs, tasks or rows the statistics leave out, and why."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    series: str | None
    """The series concerned; ``None``: all of them."""
    task: str
    """The task."""
    metric: str | None
    """The metric; ``None``: every metric of the task."""
    runs: list[str]
    """The run labels left out (empty: the whole row)."""
    reason: str
    """Why, in one sentence."""


def labels(runs: list[ComparableRun]) -> list[str]:
    """Each run's label: its file name, or its path where two runs share a file name."""
    names = [Path(r.path).name for r in runs]
    counts = Counter(names)
    return [n if counts[n] == 1 else r.path for n, r in zip(names, runs)]


def recorded(run: ComparableRun, path: str) -> list[Any]:
    """The distinct values a run's files record at ``path`` over its tasks (not recorded, a harness default and
    ``None`` dropped: none of them is a value the file states)."""
    out = []
    for rec in run.factors.values():
        v = rec.get(path)
        if v is not None and v.source in ("recorded", "derived") and v.value is not None and v.value not in out:
            out.append(v.value)
    return out


def describe_runs(runs: list[ComparableRun], step_from: str | None = None) -> list[SeriesRun]:
    """One :class:`SeriesRun` per run: label, series, step and contradictions.

    Raises:
        RepauditError: ``step_from`` is not a regular expression with a group, or a run records two model
            names or two revisions.
    """
    pattern = _step_pattern(step_from)
    out = []
    for run, label in zip(runs, labels(runs)):
        names, revisions = recorded(run, "model.name"), recorded(run, "model.revision")
        steps = [s for s in recorded(run, "model.step") if isinstance(s, int) and not isinstance(s, bool)]
        for what, vals in (("model names", names), ("model revisions", revisions), ("training steps", steps)):
            if len(vals) > 1:
                raise RepauditError(f"'{run.path}' records {len(vals)} {what} across its tasks "
                                    f"({', '.join(map(str, vals[:3]))}): a series needs one model per file")
        step, source = None, None
        if steps:
            key = next(rec["model.step"].key for rec in run.factors.values() if rec.known("model.step"))
            step, source = steps[0], f"recorded step ({key})"
        elif revisions and (m := STEP.search(str(revisions[0]))):
            step, source = int(m.group(1)), f"model revision '{revisions[0]}'"
        elif pattern is not None and (found := _in_path(pattern, run.path)):
            m, where = found
            step, source = _group_int(m, run.path, step_from), f"{where} (--step-from)"
        out.append(SeriesRun(path=run.path, name=label, source=run.source,
                             series=str(names[0]) if names else NOT_RECORDED, step=step, step_from=source,
                             contradictions=_contradictions(run, step, source, pattern)))
    return out


def _in_path(pattern: re.Pattern, path: str) -> tuple[re.Match, str] | None:
    """The first match of ``pattern`` in a run's file name, else in its folders' names, nearest first (a PEFT
    series' ``epoch_5/results_….json``), with where it matched (``file name``, ``folder 'epoch_5'``)."""
    p = Path(path)
    if m := pattern.search(p.name):
        return m, "file name"
    for folder in list(p.parents)[:-1] if not p.is_dir() else [p, *list(p.parents)[:-1]]:
        if folder.name and (m := pattern.search(folder.name)):
            return m, f"folder '{folder.name}'"
    return None


def _step_pattern(step_from: str | None) -> re.Pattern | None:
    if step_from is None:
        return None
    try:
        pattern = re.compile(step_from)
    except re.error as exc:
        raise RepauditError(f"--step-from '{step_from}' is not a regular expression ({exc})") from None
    if pattern.groups < 1:
        raise RepauditError(f"--step-from '{step_from}' has no group: mark the step's digits, e.g. 'step(\\d+)'")
    return pattern


def _group_int(m: re.Match, path: str, step_from: str | None) -> int:
    text = m.group("step") if "step" in m.re.groupindex else m.group(1)
    if text is None or not text.isdigit():
        raise RepauditError(f"'{path}': --step-from '{step_from}' matched '{m.group(0)}', whose group is not a "
                            "whole number")
    return int(text)


def _contradictions(run: ComparableRun, step: int | None, source: str | None, pattern: re.Pattern | None
                    ) -> list[str]:
    """What the file name says (n-shot, step, dtype) against what the file records; the recorded value is used."""
    name = Path(run.path).name
    out = []
    shots = recorded(run, "fewshot.num_fewshot")
    if (m := SHOT.search(name)) and shots and int(m.group(1)) not in shots:
        said = ", ".join(str(s) for s in shots)
        out.append(f"its name says {m.group(1)}-shot, its recorded configuration num_fewshot {said}: read as "
                   f"{said}-shot (as recorded)")
    named = (pattern.search(name) if pattern is not None else None) or STEP.search(name)
    if named and step is not None and not (source or "").endswith("(--step-from)"):
        digits = named.group("step") if "step" in named.re.groupindex else named.group(1)
        if digits is not None and digits.isdigit() and int(digits) != step:
            out.append(f"its name says step {int(digits)}, its {source} step {step}: read as step {step} "
                       "(as recorded)")
    words = {DTYPE_WORDS[w.lower()] for w in re.split(r"[^A-Za-z0-9]+", name) if w.lower() in DTYPE_WORDS}
    dtypes = {str(d).removeprefix("torch.") for d in recorded(run, "serving.dtype")} - {"auto"}
    if words and dtypes and not words & {DTYPE_WORDS.get(d, d) for d in dtypes}:
        out.append(f"its name says {', '.join(sorted(words))}, its recorded dtype {', '.join(sorted(dtypes))}: read "
                   "as recorded")
    return out


def doc_check(task: str, members: list[tuple[SeriesRun, ComparableRun]]
              ) -> tuple[list[tuple[SeriesRun, ComparableRun]], list[tuple[str, str]]]:
    """The members of one task that scored the same docs as the runs agreeing with most others, and
    ``(label, reason)`` for each left out. Per-doc ids and content hashes decide where both runs record them,
    else :func:`repaudit.audit.docsets.same_docs`. Runs that record the same docs the same way are judged once
    (a series of 200 runs has one or two such classes, not 40,000 pairs)."""
    from repaudit.vocabulary import Recorded

    sets = [doc_set(run.tasks[task], run.factors.get(task, Recorded())) for _, run in members]
    classes: dict[tuple, list[int]] = {}
    for i, (_, run) in enumerate(members):
        docs = run.tasks[task].docs
        key = (("docs", tuple(sorted((k, d.doc_hash) for k, d in docs.items()))) if docs else
               ("counts", sets[i].n, sets[i].n_split, str(sets[i].limit), str(sets[i].split)))
        classes.setdefault(key, []).append(i)
    reps = [idx[0] for idx in classes.values()]

    def agree(i: int, j: int) -> tuple[bool, str]:
        ti, tj = members[i][1].tasks[task], members[j][1].tasks[task]
        if ti.docs and tj.docs:
            if set(ti.docs) != set(tj.docs):
                return False, f"other doc ids ({len(tj.docs)} docs against {len(ti.docs)})"
            differ = sum(1 for k, d in ti.docs.items() if None not in (d.doc_hash, tj.docs[k].doc_hash)
                         and d.doc_hash != tj.docs[k].doc_hash)
            return (differ == 0, f"doc content (doc_hash) differs on {differ} of {len(ti.docs)} docs")
        return same_docs(sets[i], sets[j])

    judged = {(a, b): agree(a, b) for a in reps for b in reps}
    size = {idx[0]: len(idx) for idx in classes.values()}
    ref = max(reps, key=lambda a: (sum(size[b] for b in reps if judged[(a, b)][0]), -a))
    kept, out = [], []
    for idx in classes.values():
        ok, why = judged[(ref, idx[0])]
        for j in idx:
            if ok:
                kept.append(members[j])
            else:
                out.append((members[j][0].name, f"{why} (A: {members[ref][0].name}, the docs most runs share; B: "
                                                "this run)"))
    order = {id(m): n for n, m in enumerate(members)}
    return sorted(kept, key=lambda m: order[id(m)]), out


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def confounders(series: str, members: list[tuple[SeriesRun, ComparableRun]], tasks: list[str], across: Across
                ) -> list[Confounder]:
    """Settings and facts whose value differs between the runs of one series, over ``tasks`` (merged where a path
    differs the same way in every task; see the module docstring)."""
    from repaudit.audit.compare import diff_factors
    from repaudit.vocabulary import Recorded

    found: dict[tuple, list[str]] = {}
    judged_as: dict[tuple, Any] = {}  # the same two values recur in every task: DeepDiff once per pair

    def row(task: str, path: str, ref: Any, v: Any):
        key = (path, _text(ref.model_dump()), _text(v.model_dump()))
        if key not in judged_as:
            judged_as[key] = diff_factors(task, Recorded({path: ref}), Recorded({path: v}))[0]
        return judged_as[key]

    from_model_id: set[str] = set()  # paths every run reads from its model id (by design in a series of models)
    for task in tasks:
        runs = [(s, r.factors[task]) for s, r in members if task in r.factors]
        for path in dict.fromkeys(p for _, rec in runs for p in rec):
            if path != "model.name" and runs and all(_from_model_id(rec, path) for _, rec in runs):
                from_model_id.add(path)
            vals = {s.name: rec.get(path, NOT_RECORDED_VALUE) for s, rec in runs}
            texts = {k: shown(v) for k, v in vals.items()}
            if len(set(texts.values())) < 2 or all(v.source == "not_applicable" for v in vals.values()):
                continue
            ref = next(iter(vals.values()))
            statuses = {row(task, path, ref, v).status for v in vals.values()}
            if statuses <= {"same", "n/a"} and not any(row(task, path, ref, v).note for v in vals.values()):
                continue
            judged = ("differs" if "differs" in statuses else "not recorded by every run" if "unknown" in statuses
                      else "one setting as compare judges it")
            note = "" if judged != "one setting as compare judges it" else "; ".join(dict.fromkeys(
                re.sub(r"'[^']*' and '[^']*'", "the values", r.note) for v in vals.values()
                if (r := row(task, path, ref, v)).note))
            key = (path, judged, note, tuple(texts.items()))
            found.setdefault(key, []).append(task)
    design = BY_DESIGN[across]
    return [Confounder(series=series, path=p, values=dict(vals), judged=judged, note=note,
                       by_design=(p.partition(".")[0], p.partition(".")[2]) in design
                       or (p.partition(".")[0], None) in design or (across == "model" and p in from_model_id),
                       tasks=[] if len(ts) == len(tasks) else ts)
            for (p, judged, note, vals), ts in found.items()]


def _from_model_id(rec: Any, path: str) -> bool:
    """Whether ``rec`` read ``path`` from the same place as its model's name (inspect's provider and backend are the
    model id's prefix: ``eval.model (its provider)`` beside ``eval.model``)."""
    name, v = rec.get("model.name"), rec.get(path)
    if name is None or v is None or not name.key or not v.key or v.source not in ("recorded", "derived"):
        return False
    return v.key == name.key or v.key.startswith(name.key + " ")


def by_value(values: dict[str, str], runs: list[SeriesRun], k: int = 3, most: int = 6) -> list[str]:
    """A confounder's values grouped (the first ``most``), each with the runs that recorded it, per series: ``32 in
    12 runs (steps 0–1000)`` where those runs are exactly the series' steps in that range, else their steps (``2 in
    4 runs (steps 128, 256, 512, 1000)``) or labels; with several series, each named."""
    groups: dict[str, list[SeriesRun]] = {}
    by_label = {s.name: s for s in runs}
    for label, v in values.items():
        groups.setdefault(v, []).append(by_label[label])
    out = []
    several = len({s.series for s in runs}) > 1
    for v, have in groups.items():
        names = list(dict.fromkeys(s.series for s in have))
        parts = [_where([s for s in have if s.series == n], [s for s in runs if s.series == n], k) for n in names]
        if several:
            parts = [f"{n}: {part}" for n, part in zip(names, parts)]
        shown = v if len(v) <= 40 else v[:16] + "…"  # a long value (a hash) shortened here; JSON keeps it whole
        out.append(f"{shown} in {len(have)} run{'s' if len(have) != 1 else ''} ({'; '.join(parts)})")
    if len(out) > most:  # the JSON report lists every run's value
        out = out[:most] + [f"… {len(out) - most} more values"]
    return out


def _where(have: list[SeriesRun], series: list[SeriesRun], k: int) -> str:
    """The steps (or labels) of ``have`` within one series: a range where they are all of its runs in it."""
    known = sorted(s.step for s in have if s.step is not None)
    if len(known) < len(have):
        return ", ".join(s.name for s in have[:k]) + (", …" if len(have) > k else "")
    inside = [s for s in series if s.step is not None and known[0] <= s.step <= known[-1]]
    if len(have) > 2 and known[0] < known[-1] and len(inside) == len(have):
        return f"steps {known[0]}–{known[-1]}"
    shown = ", ".join(str(x) for x in known[:2 * k]) + (", …" if len(known) > 2 * k else "")
    return ("step " if len(known) == 1 else "steps ") + shown
