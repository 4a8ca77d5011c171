"""``repaudit run``: a RunConfig and a task become a RunRecord, with caching and resume.

The flow is one-way: resolve data and few-shot ids -> load the backend -> render requests ->
answer them (finished batches are committed to the SQLite store as they complete, so an
interrupted run resumes where it stopped) -> per-doc metrics -> aggregates -> fingerprint.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import sys
import time
from typing import Any
from pathlib import Path

import numpy as np
import platformdirs
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.text import Text

import repaudit
from repaudit.backends.model_source import resolve_model
from repaudit.backends.store import BatchCache
from repaudit.run.environment import capture_git_state, capture_hardware, capture_software
from repaudit.errors import RepauditError
from repaudit.run.fingerprint import (BackendConfig, DataIdentity, FewshotConfig, Fingerprint, GenerationConfig,
                                  MetricConfig, ModelIdentity, PromptConfig, Seeds)
from repaudit.hashing import sha256_json, sha256_text
from repaudit.run.metrics import GSM8K_FILTERS, aggregate, argmax_first, exact_match, extract_answer, multiple_choice_metrics
from repaudit.run.records import DocResult, RunRecord, Timings, read_record
from repaudit.tasks.requests import GenerationSettings
from repaudit.tasks.base import Doc, OutputType, Task
from repaudit.tasks.data import available_local_splits, load_rows, to_docs
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.fewshot import permute, select_fewshot
from repaudit.tasks.prompts import RenderedDoc, check_format, render, template_sha256


def default_cache_dir() -> Path:
    """``$REPAUDIT_CACHE_DIR`` or the platform's user cache directory for repaudit."""
    import os

    return Path(os.environ.get("REPAUDIT_CACHE_DIR") or platformdirs.user_cache_dir("repaudit"))


class RunConfig(BaseModel):
    """Everything the user can set for ``repaudit run``; ``None`` means "the task's default",
    and the value actually used is what the fingerprint records."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    task: str
    model: str = "default"
    revision: str | None = None
    trust_remote_code: bool = False
    data_dir: Path | None = None
    split: str | None = None
    limit: int | None = None
    num_fewshot: int | None = None
    fewshot_split: str | None = None
    fewshot_seed: int = 1234
    fewshot_ids: list[int] | None = None
    fewshot_from: Path | None = None
    fewshot_order_seed: int | None = None
    prompt_format: str = "lmeval"
    chat_template: bool = False
    system_prompt: str | None = None
    backend: str = "hf"
    dtype: str = "float32"
    batch_size: int = 8
    padding_side: str = "right"
    scoring_strategy: str = "full_sequence"
    device: str = "cpu"
    seed: int = 0
    numpy_seed: int = 1234
    torch_seed: int = 1234
    max_gen_toks: int | None = None
    until: list[str] | None = None
    stop_at_eos: bool = True
    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    cache_dir: Path | None = None
    use_batch_cache: bool = True


def get_task(name: str) -> Task:
    """The built-in task ``name``. Raises RepauditError for an unknown name."""
    if name not in TASKS:
        raise RepauditError(f"unknown task '{name}': choose one of {', '.join(TASKS)}")
    return TASKS[name]


def _resolve_split(task: Task, cfg: RunConfig, err: Console) -> str:
    if cfg.split:
        return cfg.split
    if cfg.data_dir is not None:
        local = available_local_splits(task, cfg.data_dir)
        if task.eval_split not in local and local:
            err.print(f"note: {task.name}'s lm-eval split '{task.eval_split}' is not under {cfg.data_dir}; "
                      f"evaluating split '{local[0]}' (recorded in the fingerprint)", soft_wrap=True)
            return local[0]
    return task.eval_split


def _fewshot_pool(task: Task, cfg: RunConfig, split: str, eval_docs: list[Doc]) -> tuple[list[Doc], str]:
    # lm-eval's rule: fewshot_split if set, else the training split if present, else the eval split.
    wanted = cfg.fewshot_split or task.fewshot_split
    if wanted == split or wanted is None:
        return eval_docs, split
    if cfg.data_dir is not None and wanted not in available_local_splits(task, cfg.data_dir):
        if cfg.fewshot_split:
            raise RepauditError(f"few-shot split '{wanted}' of {task.name} is not under {cfg.data_dir}")
        return eval_docs, split
    rows, _ = load_rows(task, wanted, cfg.data_dir)
    return to_docs(task, rows), wanted


def _fewshot_ids(task: Task, cfg: RunConfig, n: int, eval_docs: list[Doc], pool: list[Doc], same_split: bool
                 ) -> tuple[dict[int, list[int]], str]:
    if cfg.fewshot_from is not None:
        other = read_record(cfg.fewshot_from)
        ids = {d.doc_id: d.fewshot_ids for d in other.docs}
        return ids, "replayed"
    if cfg.fewshot_ids is not None:
        bad = [i for i in cfg.fewshot_ids if i >= len(pool)]
        if bad:
            raise RepauditError(f"--fewshot-ids {bad} are out of range: the few-shot pool has {len(pool)} docs")
        return {d.doc_id: list(cfg.fewshot_ids) for d in eval_docs}, "explicit"
    return select_fewshot(eval_docs, pool, n, task.fewshot_sampler, cfg.fewshot_seed, same_split,
                          by_cluster=task.cluster(pool[0].row) is not None if pool else False), task.fewshot_sampler


def doc_hash(row: dict) -> str:
    """lm-eval's ``doc_hash``: sha256 of ``json.dumps(doc, indent=2, ensure_ascii=False)``."""
    return sha256_text(json.dumps(row, indent=2, default=str, ensure_ascii=False))


class _DocsColumn(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        rate = f"{speed:.1f} docs/s" if speed else "-- docs/s"
        return Text(f"{task.completed:.0f}/{task.total:.0f} docs  {rate}")


class BackendPool:
    """Loaded backends kept across runs of one process (an attribution grid, a sweep).

    A backend is reused when backend, model weights, dtype, device and remote-code setting match; batch
    size, padding side and scoring strategy are set per run (:meth:`HFBackend.configure`), so a
    grid reloads the model once per dtype instead of once per configuration.
    """

    def __init__(self):
        self._loaded: dict[tuple, Any] = {}

    def get(self, resolved, cfg: RunConfig):
        """A backend for ``cfg``, loading it on first use."""
        key = (cfg.backend, resolved.path, resolved.weights_sha256, cfg.dtype, cfg.device, cfg.trust_remote_code)
        if key not in self._loaded:
            if len(self._loaded) >= 2:  # keep memory bounded: grids are ordered by backend and dtype
                self._loaded.pop(next(iter(self._loaded)))
            self._loaded[key] = _load(resolved, cfg)
        backend = self._loaded[key]
        backend.configure(cfg.batch_size, cfg.padding_side, cfg.scoring_strategy)
        return backend


def _load(resolved, cfg: RunConfig):
    from repaudit.backends import load_backend

    return load_backend(cfg.backend, resolved, dtype=cfg.dtype, batch_size=cfg.batch_size,
                        padding_side=cfg.padding_side, device=cfg.device, trust_remote_code=cfg.trust_remote_code,
                        scoring_strategy=cfg.scoring_strategy, seed=cfg.torch_seed)


def run(cfg: RunConfig, err: Console | None = None, backends: BackendPool | None = None,
        cache: BatchCache | None = None) -> RunRecord:
    """Evaluate ``cfg`` and return the complete :class:`RunRecord` (nothing is written here).

    ``backends`` lets consecutive runs share loaded models (``model_load_s`` is then ~0);
    ``cache`` replaces the batch store under ``cache_dir`` (it is left open; ignored when
    ``cfg.use_batch_cache`` is off).

    Raises:
        RepauditError: unknown task/format/dtype, missing or malformed data, a model that
            cannot be resolved or loaded.
    """
    t_start = time.perf_counter()
    err = err or Console(stderr=True)
    task = get_task(cfg.task)
    check_format(task, cfg.prompt_format)
    from repaudit.backends import check_backend
    from repaudit.backends.hf import DTYPES, PADDING_SIDES, SCORING_STRATEGIES

    check_backend(cfg.backend)
    if cfg.dtype not in DTYPES:
        raise RepauditError(f"unknown dtype '{cfg.dtype}': choose one of {', '.join(DTYPES)}")
    if cfg.padding_side not in PADDING_SIDES:
        raise RepauditError(f"unknown padding side '{cfg.padding_side}': choose right or left")
    if cfg.scoring_strategy not in SCORING_STRATEGIES:
        raise RepauditError(f"unknown scoring strategy '{cfg.scoring_strategy}': choose one of "
                            f"{', '.join(SCORING_STRATEGIES)}")
    if cfg.data_dir is not None and not cfg.data_dir.is_dir():
        raise RepauditError(f"--data-dir '{cfg.data_dir}' is not a directory")
    cache_dir = cfg.cache_dir or default_cache_dir()
    if cfg.limit is not None and cfg.limit < 1:
        raise RepauditError(f"--limit must be at least 1, got {cfg.limit}")
    resolved = resolve_model(cfg.model, cfg.revision, cache_dir)

    # lm-eval seeds python, numpy and torch before building requests.
    import torch

    random.seed(cfg.seed)
    np.random.seed(cfg.numpy_seed)
    torch.manual_seed(cfg.torch_seed)

    split = _resolve_split(task, cfg, err)
    rows, source = load_rows(task, split, cfg.data_dir)
    all_docs = to_docs(task, rows)
    n_shot = len(cfg.fewshot_ids) if cfg.fewshot_ids is not None else (
        cfg.num_fewshot if cfg.num_fewshot is not None else task.default_num_fewshot)
    pool, pool_split = (_fewshot_pool(task, cfg, split, all_docs) if n_shot or cfg.fewshot_from
                        else ([], None))
    fewshot_ids, sampler = (_fewshot_ids(task, cfg, n_shot, all_docs, pool, pool_split == split)
                            if pool else ({d.doc_id: [] for d in all_docs}, "none"))
    if cfg.fewshot_order_seed is not None:
        fewshot_ids = {i: permute(ids, cfg.fewshot_order_seed, i) for i, ids in fewshot_ids.items()}
    docs = all_docs[: cfg.limit] if cfg.limit else all_docs
    missing = [d.doc_id for d in docs if d.doc_id not in fewshot_ids]
    if missing:
        raise RepauditError(f"--fewshot-from '{cfg.fewshot_from}' has no few-shot ids for doc {missing[0]} "
                            f"({len(missing)} docs missing): it is a run of other docs")

    t_load = time.perf_counter()
    backend = backends.get(resolved, cfg) if backends is not None else _load(resolved, cfg)
    load_s = time.perf_counter() - t_load

    generation = None
    if task.output_type is OutputType.generate_until:
        until = list(cfg.until) if cfg.until is not None else list(task.until)
        if cfg.stop_at_eos and backend.info.eos_token and backend.info.eos_token not in until:
            until.append(backend.info.eos_token)  # lm-eval appends the EOS string to `until`
        generation = GenerationSettings(until=tuple(until), max_gen_toks=cfg.max_gen_toks or task.max_gen_toks,
                                        do_sample=cfg.do_sample, temperature=cfg.temperature, top_p=cfg.top_p,
                                        top_k=cfg.top_k, seed=cfg.torch_seed)
    chat = (lambda text: backend.apply_chat_template(text, cfg.system_prompt)) if cfg.chat_template else None
    if cfg.system_prompt and not cfg.chat_template:
        chat = lambda text: cfg.system_prompt + "\n\n" + text  # noqa: E731 - lm-eval's non-chat system prompt
    pool_by_id = {d.doc_id: d for d in pool}
    rendered = [render(task, d, [pool_by_id[i] for i in fewshot_ids[d.doc_id]], cfg.prompt_format, generation, chat)
                for d in docs]

    requests = [r for rd in rendered for r in rd.requests]
    owner = [k for k, rd in enumerate(rendered) for _ in rd.requests]
    own_cache = cache is None
    if not cfg.use_batch_cache:
        cache = None
    elif cache is None:
        cache = BatchCache(cache_dir / "batches.sqlite")
    before = cache.count() if cache else 0
    t_eval = time.perf_counter()
    columns = [TextColumn(f"{task.name}"), BarColumn(), _DocsColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=err, transient=False, disable=not err.is_terminal and not sys.stderr.isatty()
                  ) as bar:
        pid = bar.add_task(task.name, total=len(docs))
        done = [0]

        def advance(n: int) -> None:
            # Docs finish out of order (requests are sorted by length): advance by fractions.
            frac = sum(1.0 / len(rendered[owner[i]].requests) for i in range(done[0], done[0] + n))
            done[0] += n
            bar.advance(pid, frac)

        if task.output_type is OutputType.generate_until:
            answers = backend.generate_until(requests, cache, advance)
        else:
            answers = backend.loglikelihood(requests, cache, advance)
    eval_s = time.perf_counter() - t_eval
    total_batches = sum(backend.batch_sizes_used.values())
    computed = cache.count() - before if cache else total_batches
    if cache and own_cache:
        cache.close()

    results, per_doc, pos = [], [], 0
    for rd in rendered:
        ans = answers[pos: pos + len(rd.requests)]
        pos += len(rd.requests)
        results.append(_doc_result(task, rd, ans))
        per_doc.append(results[-1].metrics)
    variants = _metric_variants(task)
    metrics = aggregate(per_doc, variants, [r.cluster for r in results])

    fp = Fingerprint(
        data=DataIdentity(task=task.name, task_version=task.version, output_type=task.output_type.value,
                          source=source.kind, location=source.location, split=source.split,
                          revision=source.revision, sha256=source.sha256, n_docs_split=source.n_docs,
                          limit=cfg.limit, n_docs=len(docs), docs_sha256=sha256_json([d.row for d in docs])),
        model=ModelIdentity(name=resolved.name, source=resolved.source, revision=resolved.revision,
                            weights_sha256=resolved.weights_sha256, gguf_sha256=resolved.gguf_sha256,
                            tokenizer_sha256=backend.info.tokenizer_sha256,
                            special_tokens={"bos": backend.info.bos_token, "eos": backend.info.eos_token,
                                            "pad": backend.info.pad_token},
                            architecture=backend.info.architecture,
                            num_parameters=backend.info.num_parameters, trust_remote_code=cfg.trust_remote_code),
        backend=BackendConfig(name=backend.info.name, device=backend.info.device, dtype=backend.info.dtype,
                              batch_size=cfg.batch_size,
                              batch_sizes_used={str(k): v for k, v in sorted(backend.batch_sizes_used.items())},
                              padding_side=cfg.padding_side, max_length=backend.info.max_length,
                              add_special_tokens=backend.info.add_special_tokens, scoring_strategy=cfg.scoring_strategy,
                              engine=backend.info.engine or None),
        prompt=PromptConfig(format=cfg.prompt_format, template_sha256=template_sha256(task, cfg.prompt_format),
                            target_delimiter=task.target_delimiter, fewshot_delimiter=task.fewshot_delimiter,
                            chat_template=cfg.chat_template,
                            chat_template_sha256=backend.info.chat_template_sha256 if cfg.chat_template else None,
                            system_prompt=cfg.system_prompt),
        fewshot=FewshotConfig(num_fewshot=n_shot if sampler != "replayed" else max(len(r.fewshot_ids) for r in rendered),
                              split=pool_split, sampler=sampler,
                              ids_sha256=sha256_json([r.fewshot_ids for r in rendered]),
                              order_seed=cfg.fewshot_order_seed),
        generation=GenerationConfig(until=list(generation.until), eos_token=backend.info.eos_token,
                                    stop_at_eos=cfg.stop_at_eos, max_gen_toks=generation.max_gen_toks,
                                    do_sample=generation.do_sample, temperature=generation.temperature,
                                    top_p=generation.top_p, top_k=generation.top_k) if generation else None,
        metric=MetricConfig(metrics=list(task.metrics),
                            acc_norm_normalisation="char_length" if "acc_norm" in task.metrics else None,
                            filters=list(GSM8K_FILTERS) if generation else ["none"], aggregation="mean",
                            stderr="sample_stdev_ddof1/sqrt(n)"),
        seeds=Seeds(python=cfg.seed, numpy=cfg.numpy_seed, torch=cfg.torch_seed, fewshot=cfg.fewshot_seed),
        hardware=capture_hardware(), software=capture_software(), git=capture_git_state(),
    )
    total_s = time.perf_counter() - t_start
    return RunRecord(
        repaudit_version=repaudit.__version__,
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        fingerprint=fp, fingerprint_digest=fp.digest(), metrics=metrics, docs=results,
        timings=Timings(model_load_s=round(load_s, 3), eval_s=round(eval_s, 3), total_s=round(total_s, 3),
                        docs_per_s=round(len(docs) / eval_s, 3) if eval_s > 0 else 0.0,
                        computed_batches=computed, cached_batches=total_batches - computed,
                        tokens_computed=backend.tokens_computed, forward_s=round(backend.forward_s, 3)),
    )


def _metric_variants(task: Task) -> dict[str, str]:
    if task.output_type is OutputType.generate_until:
        return {f"exact_match,{f}": f for f in GSM8K_FILTERS}
    return {m: ("char_length" if m == "acc_norm" else "none") for m in task.metrics}


def _doc_result(task: Task, rd: RenderedDoc, answers: list) -> DocResult:
    base = dict(doc_id=rd.doc.doc_id, doc_hash=doc_hash(rd.doc.row), prompt_hash=sha256_text(rd.requests[0].context),
                cluster=rd.doc.cluster, fewshot_ids=rd.fewshot_ids, choices=rd.choices)
    if task.output_type is OutputType.generate_until:
        text = answers[0]
        extracted = {f: extract_answer(text, f) for f in GSM8K_FILTERS}
        metrics = {f"exact_match,{f}": exact_match(a, rd.target) for f, a in extracted.items()}
        return DocResult(**base, target=rd.target, target_hash=sha256_text(rd.target), gold=None,
                         loglikelihoods=[], is_greedy=[], continuation_tokens=[],
                         prediction=extracted["strict-match"], metrics=metrics, generation=text, extracted=extracted)
    lls = [a.logprob for a in answers]
    all_metrics = multiple_choice_metrics(lls, rd.choices, rd.gold)
    target = str(rd.gold)
    return DocResult(**base, target=target, target_hash=sha256_text(target), gold=rd.gold,
                     loglikelihoods=lls, is_greedy=[a.is_greedy for a in answers],
                     continuation_tokens=[a.n_tokens for a in answers], prediction=argmax_first(lls),
                     metrics={m: all_metrics[m] for m in task.metrics})
