"""Read Hugging Face lighteval output (0.13; older files as far as they record the same keys).

The results JSON and each task's details parquet go through :mod:`repaudit.boundary` into the typed
models of :mod:`repaudit.importers.lighteval.schema`; each task's settings become the vocabulary's record in
:mod:`repaudit.importers.lighteval.record`.

Per doc (details): ``doc.id`` is the row index in the evaluation split (lighteval's
``_get_docs_from_split``), so it pairs with lm-eval's ``doc_id`` when neither harness filtered rows;
``choices_hash`` (the scored continuations) checks that pairing. ``prompt_hash`` is the plain-text
prompt lighteval built (system prompt, instruction, few-shot examples as ``query + " " + gold``, the
query; joined by ``"\\n\\n"``), computed only when the run used no chat template. lighteval records no
raw doc, so there is no ``doc_hash``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from repaudit.boundary import LIMITS, InputError, read_bytes, validate
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome, check_per_doc_means
from repaudit.importers.lighteval.record import (
    canonical_task,
    chat_applied,
    is_logprob_task,
    metric_directions,
    task_record,
)
from repaudit.importers.lighteval.schema import DetailRow, LightevalResults
from repaudit.vocabulary import Recorded

_TS = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)")


def _gold(gold: int | list[int] | None) -> int | None:
    if isinstance(gold, list):
        return gold[0] if len(gold) == 1 else None
    return gold


def plain_prompt(doc: Any, system_prompt: str | None) -> str:
    """The prompt lighteval's ``PromptManager._prepare_plain_text`` builds for ``doc`` (no chat template)."""

    def query(q: str, instruction: str | None) -> str:
        if instruction is not None and q.startswith(instruction):
            return q[len(instruction):].strip()
        return q

    parts = [p for p in (system_prompt, doc.instruction) if p is not None]
    for fs in doc.fewshot_samples or []:
        gold = _gold(fs.gold_index)
        answer = fs.choices[gold].strip() if fs.choices and gold is not None and 0 <= gold < len(fs.choices) else ""
        parts.append(query(fs.query or "", fs.instruction) + " " + answer)
    parts.append(query(doc.query, doc.instruction))
    return "\n\n".join(parts)


def _read_table(path: Path) -> Any:
    """The details file as an Arrow table, its size and ``doc`` column checked before any row is validated."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = read_bytes(path, LIMITS, "details file")
    try:
        table = pq.read_table(pa.BufferReader(data), use_threads=False)  # no pool threads left at exit
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(path, None, f"is not a readable parquet file ({str(exc).splitlines()[0][:200]})") from None
    if table.num_rows > LIMITS.max_items:
        raise InputError(path, None, f"has {table.num_rows:,} rows, over the limit of {LIMITS.max_items:,}")
    missing = {"doc"} - set(table.column_names)
    if missing:
        raise InputError(path, None, f"is not a lighteval details file: no column {', '.join(sorted(missing))} "
                                     f"(columns: {', '.join(table.column_names[:8])})")
    return table


def read_details(path: Path, res: LightevalResults, key: str
                 ) -> tuple[dict[int, DocOutcome], list[int], list[int] | None] | None:
    """Per-doc outcomes of one details parquet file, the docs found among their own few-shot
    examples (same query and choices), and the docs whose input lighteval truncated
    (``truncated_tokens_count``; ``None`` if not recorded); ``None`` when doc ids are not row indices.

    Raises:
        InputError: unreadable, too large, not parquet, a row that is not a lighteval detail (its
            row and JSON path named), or the same doc id twice.
    """
    table = _read_table(path)
    mc = res.config_general.model_config_
    chat = None if mc is None else chat_applied(mc)[0]
    tc = (res.config_tasks or {}).get(key)
    logprob = is_logprob_task(tc) if tc is not None else None
    docs: dict[int, DocOutcome] = {}
    leaked: list[int] = []
    cut: list[int] = []
    cut_known = True
    for i, raw in enumerate(table.to_pylist()):
        where = f"row {i}: "
        row, _ = validate(DetailRow, raw, path, where=where)
        d = row.doc
        if d.id is None or not d.id.isdigit() or len(d.id) > 12:
            return None
        doc_id = int(d.id)
        if doc_id in docs:
            raise InputError(path, "$.doc.id", f"duplicate doc id {doc_id}", where)
        resp = row.model_response
        # the doc itself among its own examples: lighteval 0.13's `x != formatted_doc` compares Doc objects
        # whose task_name differs, so it never removes the doc from a pool drawn from the evaluation split
        if any(fs.query == d.query and fs.choices == d.choices for fs in d.fewshot_samples or []):
            leaked.append(doc_id)
        if resp is None or resp.truncated_tokens_count is None:
            cut_known = False
        elif resp.truncated_tokens_count > 0:
            cut.append(doc_id)
        # the exact prompt only without a chat template (lighteval does not record the templated text)
        prompt = plain_prompt(d, mc.system_prompt if mc else None) if chat is False else None
        docs[doc_id] = _doc_outcome(row, doc_id, logprob, prompt)
    return docs, leaked, (cut if cut_known else None)


def _doc_outcome(row: DetailRow, doc_id: int, logprob: bool | None, prompt: str | None) -> DocOutcome:
    """One details row as a doc outcome; ``logprob`` ``None`` (no task config): told by the row's log-probabilities."""
    d, resp = row.doc, row.model_response
    lls = resp.logprobs if resp and resp.logprobs else None
    if lls is not None and any(math.isnan(x) for x in lls):
        lls = None
    is_lp = logprob if logprob is not None else lls is not None
    gold = _gold(d.gold_index)
    pred: Any = None
    if is_lp and lls:
        pred = max(range(len(lls)), key=lambda j: (lls[j], -j))
    elif resp is not None:
        texts = resp.text_post_processed or resp.text or []
        pred = texts[0] if texts else None
    if is_lp:
        target = None if gold is None else str(gold)
    else:
        target = d.choices[gold] if d.choices and gold is not None and 0 <= gold < len(d.choices) else None
    metrics = {str(k): float(v) for k, v in (row.metric or {}).items() if isinstance(v, (int, float))}
    return DocOutcome(
        doc_id=doc_id, doc_hash=None,
        prompt_hash=sha256_text(prompt) if prompt is not None else None,
        target=target, cluster=None, metrics=metrics, prediction=pred, loglikelihoods=lls,
        fewshot_ids=[int(fs.id) for fs in d.fewshot_samples or [] if fs.id and fs.id.isdigit()],
        choices_hash=sha256_json(list(d.choices)) if is_lp and d.choices else None,
        prompt=prompt,
        choices=list(d.choices) if d.choices else None, **(_generation_facts(d, resp) if not is_lp else {}))


def _generation_facts(d: Any, resp: Any) -> dict[str, Any]:
    """Raw generation, generated tokens (lighteval records the ids) and whether it hit ``generation_size``."""
    if resp is None or not resp.text:
        return {}
    out: dict[str, Any] = {"generation": resp.text[0]}
    if resp.output_tokens and isinstance(d.generation_size, int) and d.generation_size > 0:
        n = len(resp.output_tokens[0])
        out.update(generated_tokens=n, finish="length" if n >= d.generation_size else "stop_or_eos")
    return out


def find_details(results_path: Path, key: str) -> Path | None:
    """``details/<model>/<ts>/details_<key>_<ts>.parquet`` for ``results/<model>/results_<ts>.json``.

    The model part may be several folders deep (a local path as the model name); the ``results``
    folder is the nearest ancestor of that name with a ``details`` sibling.
    """
    m = _TS.search(results_path.name)
    if not m:
        return None
    ts = m.group(1)
    for anc in results_path.parents:
        if anc.name == "results" and (anc.parent / "details").is_dir():
            rel = results_path.parent.relative_to(anc)
            folder = anc.parent / "details" / rel / ts
            for name in (f"details_{key}_{ts}.parquet", f"details_{key.replace('|', '_')}_{ts}.parquet"):
                if (folder / name).is_file():
                    return folder / name
            return None
    return None


def _explicit(results_path: Path, res: LightevalResults, details: list[Path]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in details:
        m = re.search(r"details_(.+)_(\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.parquet$", p.name)
        key = m.group(1) if m else None
        if key is None or key not in res.results:
            raise RepauditError(f"details file '{p}' does not belong to '{results_path}': its task "
                                f"'{key}' is not among the results' tasks")
        out[key] = p
    return out


def load_lighteval(results_path: Path, details: list[Path] | None = None,
                   raw: Any = None) -> tuple[ComparableRun, LightevalResults]:
    """Import a lighteval results file and its details (given, or found beside it); ``raw`` is the
    file's already-parsed JSON (limits checked), if the caller has it.

    Tasks are keyed by :func:`canonical_task`; the ``all`` aggregate row is skipped. Returns the run and the
    typed results file.

    Raises:
        InputError: the file or a details file fails the boundary or the schema.
        RepauditError: a details file of another run, or whose per-doc mean contradicts the reported score.
    """
    from repaudit.boundary import read_json
    from repaudit.importers.lmeval.results import reported

    results_path = Path(results_path)
    obj = read_json(results_path, what="results file") if raw is None else raw
    res, notes = validate(LightevalResults, obj, results_path)
    sha = res.config_general.lighteval_sha
    run = ComparableRun(path=str(results_path), source="lighteval" + (f" {sha[:10]}" if sha and sha != "?" else ""),
                        factors={}, notes=[f"'{results_path}': {n}" for n in notes])
    explicit = _explicit(results_path, res, details or [])
    for key, task_res in res.results.items():
        if key == "all" or key.endswith(":_average"):
            continue
        name = canonical_task(key)
        if name in run.tasks:
            raise InputError(results_path, f"$.results.{key}", f"a second run of task '{name}' (another n-shot?): "
                                                               "compare one task key per file")
        scores = reported(task_res)
        dp = explicit.get(key) or (find_details(results_path, key) if details is None else None)
        read = read_details(dp, res, key) if dp else None
        docs, leaked, cut = read if read else (None, None, None)
        if dp and read is None:
            run.notes.append(f"{name}: doc ids in '{dp}' are not row indices; docs cannot be paired")
        if docs and dp:
            check_per_doc_means(dp, results_path, scores, docs, "details file")
        run.factors[name] = task_record(res, key, name, docs)
        run.tasks[name] = TaskOutcome(task=name, reported=scores, docs=docs, n_docs=len(docs) if docs else None,
                                      higher_is_better=metric_directions((res.config_tasks or {}).get(key), scores),
                                      diagnostics=_diagnostics(docs, leaked, cut, run.factors[name]) if docs else None)
    if not run.tasks:
        raise InputError(results_path, "$.results", "holds no task, only the 'all' aggregate: nothing to compare")
    return run, res



def _diagnostics(docs: dict[int, DocOutcome], leaked: list[int] | None, cut: list[int] | None, rec: Recorded):
    from repaudit.run.diagnostics import diagnose

    n_shot, pool, split = rec.value("fewshot.num_fewshot"), rec.value("fewshot.fewshot_split"), rec.value("data.split")
    from_eval = bool(n_shot) and pool == split if isinstance(n_shot, int) and pool is not None else None
    generative = rec.value("data.output_type") == "generate_until"
    return diagnose(list(docs.values()), generative, leaked=leaked, from_eval_split=from_eval, context_truncated=cut,
                    unknown={} if not generative else {"extraction_failed": "lighteval's details keep no "
                                                       "per-filter answers"})
