"""Read Hugging Face lighteval output (0.13; older files as far as they record the same keys).

The results JSON and each task's details parquet go through :mod:`repaudit.boundary` into the typed
models of :mod:`repaudit.importers.lighteval.schema`. Mapping onto repaudit's factors:

========================  ===========================================================
factor                    lighteval source
========================  ===========================================================
seed                      doc shuffling and few-shot draws use ``random.Random(42)`` (``LightevalTask.get_docs``);
                          ``generation_parameters.seed``; python/numpy/torch seeds are not recorded
hardware                  not recorded
backend                   the ``model_config`` class, told by its fields (``gpu_memory_utilization`` → vllm,
                          ``model_parallel``/``continuous_batching`` → hf); ``device``
quantisation / serving    ``model_config``'s vLLM engine fields (``tensor_parallel_size``, ``quantization``, …) and
                          ``model_loading_kwargs`` (``load_in_8bit``, ``attn_implementation``), as lm-eval's model_args
bos                       ``model_config.add_special_tokens`` False (True: the tokenizer's default, not recorded)
dtype / batch_size        ``model_config.dtype`` (≤0.7: ``config_general.model_dtype``), ``batch_size``
prompt_format             ``prompt_function``; lighteval's fixed delimiters (" " before a few-shot answer,
                          "\\n\\n" between examples, ``PromptManager._prepare_plain_text``)
fewshot                   the task key's ``|k``; ``few_shots_split`` (none = the evaluation split itself);
                          ``few_shots_select``; the ids of the examples each doc got (details)
chat_template             ``override_chat_template`` (``None``: the tokenizer's template if it has one),
                          ``system_prompt``
stop / max_tokens         generative tasks: ``stop_sequence``, ``generation_size``; ``max_length``
sampling                  ``generation_parameters`` temperature/top_p/top_k
metric_variant            metric names and ``sample_level_fn`` (the normalisation of ``acc``)
model                     ``model_name``, ``revision``, ``model_sha``, ``model_loading_kwargs``
data                      the task name (suite and ``:`` folded: ``arc:easy`` → ``arc_easy``),
                          ``evaluation_splits``, ``max_samples``, the details' row count
library_versions          ``lighteval_sha`` (lighteval records no version number)
========================  ===========================================================

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
from repaudit.importers.factors import UNKNOWN, Factors, empty_factors
from repaudit.importers.lighteval.schema import (
    ConfigGeneral,
    DetailRow,
    GenerationParameters,
    LightevalResults,
    ModelConfig,
    TaskConfig,
)

_TS = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)")
#: lighteval's seed for shuffling eval docs and drawing few-shot examples (``LightevalTask.get_docs``)
FEWSHOT_SEED = 42


def split_task_key(key: str) -> tuple[str | None, str, int | None]:
    """``suite|task|k`` (≤0.12) or ``task|k`` (0.13) → (suite, task, k); k is ``None`` if absent."""
    parts = key.split("|")
    shots = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else None
    if shots is not None:
        parts = parts[:-1]
    suite = parts[0] if len(parts) > 1 else None
    return suite, parts[-1], shots


def canonical_task(key: str) -> str:
    """The name a lighteval task key is compared under: suite and n-shot dropped, ``:`` → ``_``
    (``leaderboard|arc:challenge|25`` → ``arc_challenge``, ``mmlu:anatomy|5`` → ``mmlu_anatomy``), which is
    lm-eval's name for the same benchmark in the common cases."""
    return split_task_key(key)[1].replace(":", "_")


def _backend(mc: ModelConfig | None) -> Any:
    if mc is None:
        return UNKNOWN
    extra = mc.model_extra or {}
    if "gpu_memory_utilization" in extra or "tensor_parallel_size" in extra:
        return "vllm"
    if "model_parallel" in extra or "continuous_batching" in extra or "compile" in extra:
        return "hf"
    if "base_url" in extra or "provider" in extra:
        return "endpoint"
    return UNKNOWN


def _serving(mc: ModelConfig | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``quantisation`` and ``serving`` factors from the model config's engine fields (lighteval's
    ``VLLMModelConfig`` names them as vLLM does; its transformers config has ``model_loading_kwargs``),
    read as lm-eval's ``model_args`` are; unknown for an endpoint or a config the file does not record."""
    from repaudit.importers.lmeval.factors import quantisation, serving

    backend = _backend(mc)
    if mc is None or backend not in ("vllm", "hf"):
        return quantisation(None, backend), serving(None, backend)
    args = {k: str(v) for k, v in {**(mc.model_loading_kwargs or {}), **(mc.model_extra or {})}.items()}
    return quantisation(args, backend), serving(args, backend)


def _model_args(mc: ModelConfig) -> dict[str, Any]:
    """``model_loading_kwargs`` less what the quantisation and serving factors already show."""
    from repaudit.importers.lmeval.factors import QUANT_ARGS, SERVING_ARGS

    return {k: v for k, v in (mc.model_loading_kwargs or {}).items() if k not in QUANT_ARGS and k not in SERVING_ARGS}


def _or_unknown(v: Any) -> Any:
    return UNKNOWN if v is None else v


def _gold(gold: int | list[int] | None) -> int | None:
    if isinstance(gold, list):
        return gold[0] if len(gold) == 1 else None
    return gold


def _is_logprob_task(tc: TaskConfig | None) -> bool:
    cats = {m.category for m in (tc.metric_entries() if tc else [])}
    return bool(cats) and cats <= {"LOGPROBS", "MetricCategory.MULTICHOICE", "MULTICHOICE", "MetricCategory.LOGPROBS"}


def _chat_applied(mc: ModelConfig) -> bool | None:
    """Whether the run applied a chat template: ``override_chat_template`` where set, else ``use_chat_template``."""
    return mc.override_chat_template if mc.override_chat_template is not None else mc.use_chat_template


def task_factors(res: LightevalResults, key: str, docs: dict[int, DocOutcome] | None) -> Factors:
    """Factors of one task of a lighteval results file (see the module docstring)."""
    cg = res.config_general
    mc = cg.model_config_
    tc = (res.config_tasks or {}).get(key)
    gp = mc.generation_parameters if mc else None
    _, _, shots = split_task_key(key)
    if shots is None and tc is not None:
        shots = tc.num_fewshots
    generative = tc is not None and not _is_logprob_task(tc)
    f = empty_factors()
    # Random(42) shuffles the eval docs (which docs --max-samples keeps) and draws the few-shot examples
    f["seed"] = {"python": UNKNOWN, "numpy": UNKNOWN, "torch": UNKNOWN, "fewshot": FEWSHOT_SEED}
    if gp is not None and gp.seed is not None:
        f["seed"]["generation"] = gp.seed
    f["hardware"] = {"cpu_model": UNKNOWN, "gpus": UNKNOWN}
    f["backend"] = {"name": _backend(mc), "device": _or_unknown(mc.device if mc else None), "scoring_strategy": UNKNOWN}
    dtype = (mc.dtype if mc else None) or (cg.model_dtype or "").removeprefix("torch.") or None
    f["dtype"] = {"dtype": _or_unknown(dtype)}
    f["batch_size"] = {"batch_size": _or_unknown(mc.batch_size if mc else None), "batch_sizes_used": UNKNOWN}
    f["padding"] = {"padding_side": UNKNOWN}
    f["quantisation"], f["serving"] = _serving(mc)
    # add_special_tokens=False: no BOS; True (the default): whatever the tokenizer adds, not recorded
    f["bos"] = {"bos_first": False if mc is not None and mc.add_special_tokens is False else UNKNOWN}
    f["prompt_format"] = {"prompt_function": _or_unknown(tc.prompt_function if tc else None),
                          "target_delimiter": " ", "fewshot_delimiter": "\n\n"}
    f["fewshot"] = _fewshot(tc, shots, docs)
    if tc is not None:
        f["stop"] = {"until": list(tc.stop_sequence or []) if generative else None,
                     "eos_token": UNKNOWN if generative else None}
        f["max_tokens"] = {"max_gen_toks": _or_unknown(tc.generation_size) if generative else None,
                           "max_length": _or_unknown(mc.max_length if mc else None)}
        entries = tc.metric_entries()
        names = [str(m.metric_name) for m in entries if m.metric_name]
        norms = sorted({m.sample_level_fn for m in entries if m.sample_level_fn})
        f["metric_variant"] = {"metrics": names, "sample_level_fn": norms or UNKNOWN, "filters": ["none"]}
    f["data"] = _data(res, key, tc, docs)
    f["sampling"] = _sampling(gp) if generative else {"do_sample": None}
    if mc is not None:
        chat = _chat_applied(mc)
        f["chat_template"] = {"applied": UNKNOWN if chat is None else chat, "system_prompt": mc.system_prompt}
    f["model"] = _model(cg, mc)
    sha = cg.lighteval_sha
    f["library_versions"] = {"lighteval_sha": sha} if sha and sha != "?" else {}
    return f


def _fewshot(tc: TaskConfig | None, shots: int | None, docs: dict[int, DocOutcome] | None) -> dict[str, Any]:
    """The ``fewshot`` group: pool and sampler need the task's config, the examples drawn need the details."""
    n_shot = _or_unknown(shots)
    zero = shots == 0
    if tc is None:
        return {"num_fewshot": n_shot, "ids_sha256": "none" if zero else UNKNOWN, "order_seed": None}
    pool = tc.few_shots_split or (tc.evaluation_splits or [None])[0]  # fewshot_docs(): none → the eval split itself
    ids = sorted({i for d in (docs or {}).values() for i in d.fewshot_ids or []})
    return {"num_fewshot": n_shot, "split": None if zero else _or_unknown(pool),
            "sampler": "none" if zero else _or_unknown(tc.few_shots_select),
            "ids_sha256": "none" if zero else (sha256_json(ids) if docs else UNKNOWN), "order_seed": None}


def _data(res: LightevalResults, key: str, tc: TaskConfig | None, docs: dict[int, DocOutcome] | None) -> dict[str, Any]:
    """The ``data`` group; version, subset and split only where the results file keeps the task's config."""
    limit, n_docs = res.config_general.max_samples, len(docs) if docs else UNKNOWN
    if tc is None:
        return {"task": canonical_task(key), "limit": limit, "n_docs": n_docs}
    version = (res.versions or {}).get(key, tc.version)
    return {"task": canonical_task(key), "task_version": _or_unknown(version), "subset": _or_unknown(tc.hf_subset),
            "split": _or_unknown((tc.evaluation_splits or [None])[0]), "content_sha256": UNKNOWN,
            "limit": limit, "n_docs": n_docs}


def _sampling(gp: GenerationParameters | None) -> dict[str, Any]:
    """The ``sampling`` group of a generative task (``generation_parameters``; missing ones not recorded)."""
    temp = gp.temperature if gp else None
    return {"do_sample": UNKNOWN if temp is None else temp > 0, "temperature": _or_unknown(temp),
            "top_p": _or_unknown(gp.top_p if gp else None), "top_k": _or_unknown(gp.top_k if gp else None)}


def _model(cg: ConfigGeneral, mc: ModelConfig | None) -> dict[str, Any]:
    """The ``model`` group: ``model_config`` where the file has one (≥0.8), else ``config_general``'s fields."""
    return {"name": _or_unknown((mc.model_name if mc else None) or cg.model_name),
            "revision": _or_unknown(mc.revision if mc else None), "sha": _or_unknown(cg.model_sha or None),
            "weights_sha256": UNKNOWN, "num_parameters": UNKNOWN,
            "args": _model_args(mc) if mc else UNKNOWN,
            "trust_remote_code": _or_unknown(mc.trust_remote_code if mc else None)}


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
    chat = None if mc is None else _chat_applied(mc)
    tc = (res.config_tasks or {}).get(key)
    logprob = _is_logprob_task(tc) if tc is not None else None
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
        if docs:
            check_per_doc_means(dp, results_path, scores, docs, "details file")
        run.factors[name] = task_factors(res, key, docs)
        run.tasks[name] = TaskOutcome(task=name, reported=scores, docs=docs, n_docs=len(docs) if docs else None,
                                      diagnostics=_diagnostics(docs, leaked, cut, run.factors[name]) if docs else None)
    if not run.tasks:
        raise InputError(results_path, "$.results", "holds no task, only the 'all' aggregate: nothing to compare")
    return run, res



def _diagnostics(docs: dict[int, DocOutcome], leaked: list[int] | None, cut: list[int] | None, factors: Factors):
    from repaudit.run.diagnostics import diagnose

    few = factors.get("fewshot", {})
    n_shot = few.get("num_fewshot")
    from_eval = bool(n_shot) and few.get("split") == factors.get("data", {}).get("split") \
        if isinstance(n_shot, int) else None
    generative = factors.get("stop", {}).get("until") is not None
    return diagnose(list(docs.values()), generative, leaked=leaked, from_eval_split=from_eval, context_truncated=cut,
                    unknown={} if not generative else {"extraction_failed": "lighteval's details keep no "
                                                       "per-filter answers"})
