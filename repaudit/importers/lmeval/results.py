"""Read lm-evaluation-harness output (0.3 to 0.4.x): ``results_*.json`` plus ``samples_<task>_*.jsonl``.

Both go through :mod:`repaudit.boundary` into the typed models of
:mod:`repaudit.importers.lmeval.schema`; the factors each task records are mapped by
:mod:`repaudit.importers.lmeval.record`. Quirks handled: log-likelihoods and is_greedy inside
``resps`` as strings; ``"N/A"`` stderrs; group placeholder rows; ``Infinity``/``NaN`` in JSON; one
samples line per doc *and filter*.
"""

from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path
from typing import Any, TypeGuard

from repaudit.boundary import LIMITS, InputError, decode, parse_json, read_bytes, validate
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome, check_per_doc_means
from repaudit.importers.lmeval.fields import fewshot_list_order
from repaudit.importers.lmeval.record import task_record
from repaudit.importers.lmeval.schema import LmevalResults, SampleLine
from repaudit.vocabulary import Recorded

_TS = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)")
#: results keys that are not metrics
_NOT_METRICS = ("alias", "name", "sample_len", "sample_count", " ")


def _metric_name(key: str) -> tuple[str, str] | None:
    name, _, flt = key.partition(",")
    if name.endswith("_stderr") or name in _NOT_METRICS:
        return None
    return name, flt or "none"


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def reported(task_res: dict[str, Any]) -> dict[str, tuple[float, float | None]]:
    """Metric key (``acc``, ``exact_match,strict-match``) → (value, stderr or ``None``) of one task row.

    Non-numeric values (aliases, ``"N/A"`` stderrs, group placeholders) are skipped; non-finite
    numbers are kept (compare never judges them).
    """
    out = {}
    for key, value in task_res.items():
        parsed = _metric_name(str(key))
        num = _number(value)
        if parsed is None or num is None:
            continue
        name, flt = parsed
        se = _number(task_res.get(f"{name}_stderr,{flt}" if "," in key else f"{name}_stderr"))
        out[name if flt == "none" else f"{name},{flt}"] = (num, se)
    return out


def _loglikelihoods(resps: list[Any] | None) -> list[float] | None:
    """Per-choice log-likelihoods from ``filtered_resps`` (``[["-17.5", "False"], …]`` or floats)."""
    if not resps or not all(isinstance(r, (list, tuple)) and len(r) == 2 for r in resps):
        return None
    try:
        lls = [float(r[0]) for r in resps]
    except (TypeError, ValueError, OverflowError):
        return None
    return lls if all(not math.isnan(x) for x in lls) else None


def read_samples(path: Path, task: str) -> dict[int, DocOutcome]:
    """Per-doc outcomes of one ``samples_<task>_*.jsonl`` (one line per doc and filter).

    Raises:
        InputError: unreadable or not UTF-8, a line that is not JSON or not an lm-eval sample (its
            line and JSON path named), or the same doc and filter twice.
    """
    text = decode(read_bytes(path, LIMITS, "samples file"), path)
    docs: dict[int, DocOutcome] = {}
    seen: dict[tuple[int, str], int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {lineno}: "
        obj = parse_json(line, path, LIMITS, where)
        if not isinstance(obj, dict):
            raise InputError(path, None, "is not an lm-eval sample (expected a JSON object with a doc_id)", where)
        s, _ = validate(SampleLine, obj, path, where=where)
        flt = s.filter or "none"
        if (s.doc_id, flt) in seen:
            raise InputError(path, "$.doc_id", f"duplicate doc_id {s.doc_id} for filter '{flt}' "
                                               f"(also line {seen[(s.doc_id, flt)]})", where)
        seen[(s.doc_id, flt)] = lineno
        extra = s.model_extra or {}
        names = s.metrics or [k for k in ("acc", "acc_norm", "exact_match") if k in extra]
        values = {(m if flt == "none" else f"{m},{flt}"): float(v) for m in names
                  if isinstance(v := extra.get(m), (int, float))}
        weighted = {(m if flt == "none" else f"{m},{flt}"): (float(v[0]), float(v[1])) for m in names
                    if _pair(v := extra.get(m))} or None
        lls = _loglikelihoods(s.filtered_resps)
        pred: Any = int(max(range(len(lls)), key=lambda i: (lls[i], -i))) if lls else None
        answer = _scored(s.filtered_resps) if lls is None else None
        if isinstance(answer, str):
            pred = answer
        if s.doc_id in docs:  # another filter of the same doc
            docs[s.doc_id].metrics.update(values)
            if weighted:
                docs[s.doc_id].weighted = {**(docs[s.doc_id].weighted or {}), **weighted}
            extracted = docs[s.doc_id].extracted
            if isinstance(answer, str) and extracted is not None:
                extracted[flt] = answer
            continue
        ctx, conts = _context_and_continuations(s.arguments)
        target = s.target
        docs[s.doc_id] = DocOutcome(doc_id=s.doc_id, doc_hash=s.doc_hash,
                                    prompt_hash=s.prompt_hash or (sha256_text(ctx) if isinstance(ctx, str) else None),
                                    target=None if target is None else str(target), cluster=None, metrics=values,
                                    prediction=pred, loglikelihoods=lls,
                                    choices_hash=sha256_json(conts) if conts and lls is not None else None,
                                    generation=_generation(s.resps) if lls is None else None,
                                    extracted={flt: answer} if isinstance(answer, str) else None,
                                    weighted=weighted, prompt=ctx if isinstance(ctx, str) else None,
                                    choices=conts if lls is not None else None)
    return docs


def _pair(v: Any) -> TypeGuard[list[float]]:
    """A per-doc ``[log-likelihood, words|bytes]`` pair (wikitext's word_perplexity, bits_per_byte)."""
    return (isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                         and math.isfinite(x) for x in v))


def _scored(filtered: list[Any] | None) -> str | None:
    """The scored answer of a generate_until sample: ``filtered_resps[0]``, or its first element where a filter
    pipeline without ``take_first`` left the list of one request's answers (``[["answer"]]``)."""
    if not filtered:
        return None
    first = filtered[0]
    if isinstance(first, list) and first and isinstance(first[0], str):
        first = first[0]
    return first if isinstance(first, str) else None


def _generation(resps: list[Any] | None) -> str | None:
    """The raw generation of a generate_until sample: ``resps`` is ``[[text]]`` (one request, one sample)."""
    if resps and isinstance(resps[0], list) and resps[0] and isinstance(resps[0][0], str):
        return resps[0][0]
    return None


def _context_and_continuations(arguments: Any) -> tuple[Any, list[str] | None]:
    """The first request's context and every request's continuation (``None`` unless all are strings):
    0.4.x writes ``{"gen_args_0": {"arg_0": context, "arg_1": continuation}, …}``, older files ``[[context,
    continuation], …]``."""
    if isinstance(arguments, dict) and arguments:
        reqs = [a for a in arguments.values() if isinstance(a, dict)]
        pairs = [(a.get("arg_0"), a.get("arg_1")) for a in reqs]
    elif isinstance(arguments, list):
        pairs = [(a[0], a[1] if len(a) > 1 else None) for a in arguments if isinstance(a, list) and a]
    else:
        return None, None
    if not pairs:
        return None, None
    conts = [c for _, c in pairs if isinstance(c, str)]
    return pairs[0][0], conts if len(conts) == len(pairs) else None


def find_samples(results_path: Path, task: str) -> Path | None:
    """The ``samples_<task>_<timestamp>.jsonl`` beside ``results_<timestamp>.json``, if exactly one."""
    m = _TS.search(results_path.name)
    pattern = f"samples_{glob_escape(task)}_{m.group(1)}.jsonl" if m else f"samples_{glob_escape(task)}_*.jsonl"
    found = sorted(results_path.parent.glob(pattern))
    return found[0] if len(found) == 1 else None


def glob_escape(text: str) -> str:
    """``text`` with glob metacharacters made literal."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _candidates(res: LmevalResults, tasks: list[str]) -> dict[str, tuple[dict, int | None, dict | None]]:
    """Per task: its reported scores, its recorded doc count and its recorded configuration (the evidence of
    :func:`repaudit.importers.lmeval.samplefiles.content_match`)."""
    from repaudit.importers.lmeval.fields import clean

    out = {}
    for task in tasks:
        counts = (res.n_samples or {}).get(task)
        cfg = (res.configs or {}).get(task)
        out[task] = (reported(res.results[task]), getattr(counts, "effective", None),
                     clean(cfg.model_dump(exclude_none=True)) if cfg is not None else None)
    return out


def _explicit_samples(results_path: Path, res: LmevalResults, samples: list[Path]
                      ) -> tuple[dict[str, tuple[Path, dict[int, DocOutcome]]], list[str]]:
    """Each samples file given on the command line, placed by ``TASK=PATH``, its lm-eval name or its content
    (:mod:`repaudit.importers.lmeval.samplefiles`), read; and a note per file placed otherwise than by its name.

    Raises:
        RepauditError: a file whose task is not among the results' tasks, or that no evidence places, or two files
            of one task.
        InputError: a file that is not lm-eval samples (its line and JSON path named).
    """
    from repaudit.importers.lmeval.samplefiles import content_match, first_doc_keys, named_task, split_given

    out: dict[str, tuple[Path, dict[int, DocOutcome]]] = {}
    notes: list[str] = []
    tasks = [t for t in res.results if not _is_group(res, t)] or list(res.results)
    for given in samples:
        task, sp = split_given(given)
        docs = read_samples(sp, task or "")
        how = "given as TASK=PATH" if task else ""
        if task is None and (named := named_task(sp)) in res.results:
            task = named
        if task is None:
            place = content_match(docs, _candidates(res, [t for t in tasks if t not in out]), first_doc_keys(sp))
            if place.task is None:
                raise RepauditError(f"samples file '{sp}': its task cannot be told ({place.why}; its name is not "
                                    f"lm-eval's samples_<task>_<timestamp>.jsonl): give it as TASK={sp}")
            task, how = place.task, place.how
        if task not in res.results:
            raise RepauditError(f"samples file '{sp}' does not belong to '{results_path}': its task '{task}' is not "
                                "among the results' tasks")
        if task in out:
            raise RepauditError(f"samples files '{out[task][0]}' and '{sp}' are both of task '{task}': give one")
        out[task] = (sp, docs)
        if how:
            notes.append(f"{task}: samples file '{sp.name}' read as the task's ({how})")
    return out, notes


def _renamed_samples(results_path: Path, res: LmevalResults, have: set[str]
                     ) -> tuple[dict[str, tuple[Path, dict[int, DocOutcome]]], list[str]]:
    """The samples files beside the results file under other names than lm-eval's, matched by content to the tasks
    that have no samples yet; a note for each file matched, and for each that no task takes (not read)."""
    from repaudit.importers.lmeval.samplefiles import content_match, first_doc_keys, other_results, renamed_in

    out: dict[str, tuple[Path, dict[int, DocOutcome]]] = {}
    notes: list[str] = []
    tasks = [t for t in res.results if not _is_group(res, t) and t not in have]
    files = renamed_in(results_path.parent)
    shared = bool(files) and other_results(results_path.parent, results_path)  # other runs' files beside it
    for sp in files:
        docs = read_samples(sp, "")
        left = [t for t in tasks if t not in out]
        place = content_match(docs, _candidates(res, left), first_doc_keys(sp), data_only=shared) if left else None
        if place is None or place.task is None:
            if shared and (place is None or not place.possible):
                continue  # another run's file (the folder holds several runs' results): none of this run's tasks
            why = place.why if place is not None else "every task of the results file has its samples already"
            could = f" (it could be {', '.join(place.possible[:3])}'s)" if place is not None and place.possible else ""
            notes.append(f"'{sp.name}' (beside '{results_path.name}'): lm-eval samples of no task that can be told "
                         f"({why}){could}: not read — if it is this run's, pass it as --samples-a/--samples-b "
                         "TASK=PATH")
            continue
        out[place.task] = (sp, docs)
        notes.append(f"{place.task}: samples file '{sp.name}' (not lm-eval's name for it) read as the task's "
                     f"({place.how})")
    return out, notes


def _compute(obj: dict) -> dict:
    """What the run cost as lm-eval records it: ``total_evaluation_time_seconds`` (a string of seconds, 0.4.3 on)."""
    from repaudit.vocabulary import recorded

    raw = obj.get("total_evaluation_time_seconds")
    if raw is None:
        return {}
    try:
        wall = float(raw)
    except (TypeError, ValueError):
        return {}
    return {"wall_s": recorded(wall, "total_evaluation_time_seconds")} if math.isfinite(wall) and wall >= 0 else {}


def unix_seconds(date: Any) -> str | None:
    """lm-eval's ``date`` (``time.time()`` when the run started) as whole Unix seconds, as EEE's lm-eval converter
    writes it (``str(int(date))``); ``None`` where it is missing or not a finite non-negative number."""
    if isinstance(date, str):
        with contextlib.suppress(ValueError):
            date = float(date)
    if isinstance(date, bool) or not isinstance(date, (int, float)) or not math.isfinite(date) or date < 0:
        return None
    return str(int(date))


def load_lmeval(results_path: Path, samples: list[Path] | None = None, raw: Any = None,
                tokenizer: Any = None) -> tuple[ComparableRun, LmevalResults]:
    """Import an lm-eval results file and its samples (given, or found beside it); ``raw`` is the
    file's already-parsed JSON (limits checked), if the caller has it; ``tokenizer`` (a
    transformers tokenizer of the run's model) lets generation token counts be told. Returns the run and the
    typed results file.

    Raises:
        InputError: the file fails the boundary or the schema.
        RepauditError: a samples file whose task is not in the results, whose timestamp differs, or
            whose per-doc mean contradicts the reported score.
    """
    from repaudit.boundary import read_json

    results_path = Path(results_path)
    obj = read_json(results_path, what="results file") if raw is None else raw
    res, notes = validate(LmevalResults, obj, results_path)
    res.with_key_order(list(obj))
    version = res.lm_eval_version or ("0.4.x" if res.configs is not None else "0.3")
    run = ComparableRun(path=str(results_path), source=f"lm-eval {version}", factors={},
                        notes=[f"'{results_path}': {n}" for n in notes], timestamp=unix_seconds(obj.get("date")),
                        compute=_compute(obj))
    explicit, placed = _explicit_samples(results_path, res, samples or [])
    run.notes += placed
    shots = res.config.num_fewshot if res.config else None
    if isinstance(shots, list) and len(set(shots)) > 1 and fewshot_list_order(res) is None:
        run.notes.append(f"'{results_path.name}': config.num_fewshot is a per-task list {shots}, but the file does "
                         "not establish which task each entry belongs to (the fork indexes it in command-line order, "
                         "which 'versions' records only when it has one entry per list item and the file's keys were "
                         "not sorted on writing): n-shot is not recorded")
    named = {t: p for t in res.results if (p := find_samples(results_path, t)) is not None} if samples is None else {}
    renamed: dict[str, tuple[Path, dict[int, DocOutcome]]] = {}
    if samples is None:  # a folder's samples under other names, matched by content to the tasks left
        renamed, found = _renamed_samples(results_path, res, set(named))
        run.notes += found
    for task, task_res in res.results.items():
        scores = reported(task_res)
        sp, docs = explicit.get(task) or renamed.get(task) or (None, None)
        if sp is None and task in named:
            sp = named[task]
            docs = read_samples(sp, task)
        counts = (res.n_samples or {}).get(task)
        effective = getattr(counts, "effective", None)
        if docs and isinstance(effective, int) and len(docs) < effective:  # a trimmed or partial samples file
            run.notes.append(f"{task}: the samples file holds {len(docs)} of the {effective} docs the results "
                             "report: per-doc values of those docs only (their mean is not the reported score)")
        elif docs and sp is not None:
            check_per_doc_means(sp, results_path, scores, docs, "samples file")
        n = len(docs) if docs else getattr(counts, "effective", None)
        run.factors[task] = task_record(res, task)
        hib = {k: v for m, v in ((res.higher_is_better or {}).get(task) or {}).items() if isinstance(v, bool)
               for k in scores if k.partition(",")[0] == m}
        run.tasks[task] = TaskOutcome(task=task, reported=scores, docs=docs, n_docs=n,
                                      n_original=getattr(counts, "original", None), is_group=_is_group(res, task),
                                      higher_is_better=hib,
                                      diagnostics=lmeval_diagnostics(docs, run.factors[task], tokenizer)
                                      if docs else None)
    return run, res


def _is_group(res: LmevalResults, task: str) -> bool:
    """A group row: it has subtasks (``group_subtasks``), is a ``groups`` entry, or is a placeholder row."""
    return bool((res.group_subtasks or {}).get(task)) or task in (res.groups or {}) or \
        res.results[task].get(" ") == " "



def lmeval_diagnostics(docs: dict[int, DocOutcome], rec: Recorded, tokenizer: Any = None):
    """Diagnostics of an lm-eval task from its samples.

    lm-eval records the raw generation (``resps``, already cut at the stop sequences) and each
    filter's answer, but neither the generated token count nor why a generation ended, nor which
    few-shot examples a doc got. With the model's ``tokenizer`` the generation is re-tokenised: one
    with at least ``max_gen_toks`` tokens hit the budget (an estimate: decoding and re-encoding can
    merge tokens). Without it, truncation is *unknown*.
    """
    from repaudit.run.diagnostics import diagnose

    generative = rec.value("data.output_type") in ("generate_until", "greedy_until") or any(
        d.generation is not None for d in docs.values())
    n_shot = rec.value("fewshot.num_fewshot")
    unknown = {} if n_shot == 0 else {"fewshot_leaked": "lm-eval records no few-shot ids per doc"}
    budget = rec.value("generation.max_gen_toks")
    if generative:
        if tokenizer is None or not isinstance(budget, int):
            why = ("generated token counts need the model's tokenizer (compare --tokenizer)" if tokenizer is None
                   else "the file does not record max_gen_toks")
            unknown.update(truncated=why, gen_tokens=why)
        else:
            for d in docs.values():
                if d.generation is not None:
                    d.generated_tokens = len(tokenizer.encode(d.generation, add_special_tokens=False))
                    d.finish = "length" if d.generated_tokens >= budget else "stop_or_eos"
    split, pool = rec.value("data.split"), rec.value("fewshot.fewshot_split")
    from_eval = (None if split is None or pool is None or not isinstance(n_shot, int)
                 else bool(n_shot) and pool == split)
    return diagnose(list(docs.values()), generative, leaked=[] if n_shot == 0 else None, from_eval_split=from_eval,
                    unknown=unknown)
