"""``repaudit run``: a RunConfig becomes a RunRecord, stage by stage.

    check the configuration → resolve the model → seed → docs and few-shot examples
    → load the backend → render requests → answer them through the batch store
    → per-doc results → aggregates → fingerprint → record

Finished batches are committed to the SQLite store as they complete, so an interrupted run resumes
where it stopped. Nothing is written here; the CLI writes the record.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.console import Console

import repaudit
from repaudit.backends.device import peak_memory_mib, reset_peak_memory
from repaudit.backends.model_source import ResolvedModel, resolve_for
from repaudit.backends.store import BatchCache, open_store
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.run.config import RunConfig, check_cache_dir, default_cache_dir
from repaudit.run.diagnostics import Diagnostics, diagnose
from repaudit.run.docs import DocSet, load_docs
from repaudit.run.environment import capture_git_state, capture_hardware, capture_software
from repaudit.run.fingerprint import (
    BackendFacts,
    DataIdentity,
    FewshotFacts,
    Fingerprint,
    GenerationFacts,
    MetricFacts,
    ModelIdentity,
    PromptFacts,
    RunSettings,
    weights_format,
)
from repaudit.run.metrics import aggregate, normalised_metrics
from repaudit.run.normalise import random_baseline
from repaudit.run.pool import BackendPool, load
from repaudit.run.progress import progress
from repaudit.run.records import RunRecord, Timings, served_doc
from repaudit.run.scoring import doc_hash, doc_result, em_options, metric_variants, pipelines
from repaudit.settings import DataSettings, FewshotSettings, GenerationSettings
from repaudit.tasks.base import OutputType, Task
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.prompts import PromptOptions, RenderedDoc, check_format, render, template_sha256

__all__ = ["BackendPool", "RunConfig", "default_cache_dir", "get_task", "run"]


def get_task(name: str, task_config: dict | None = None) -> Task:
    """The built-in task ``name``, the task built from a recorded lm-eval configuration, or (with the ``lmeval``
    extra) the task as the installed lm-eval's own YAML defines it.

    Raises:
        RepauditError: an unknown name, or a configuration that cannot be built.
    """
    if task_config is not None:
        from repaudit.tasks.lmeval_config import task_from_config

        return task_from_config(name, task_config)
    if name not in TASKS:
        from repaudit.tasks.lmeval_installed import installed_lmeval, installed_task_config

        cfg = installed_task_config(name)
        if cfg is not None:  # the lmeval extra: lm-eval's own definition of the task
            from repaudit.tasks.lmeval_config import task_from_config

            return task_from_config(name, cfg)
        hint = ("" if installed_lmeval() else "; with the lmeval extra installed, any task of lm-eval's own task "
                "folder")
        raise RepauditError(f"unknown task '{name}': choose one of {', '.join(TASKS)} (or pass --task-config{hint})")
    return TASKS[name]


def check_config(cfg: RunConfig) -> Task:
    """Stage 0: every choice is known and every number in range, before any work. Returns the task.

    Raises:
        RepauditError: the first setting the task cannot use, named as its command-line option.
    """
    # ranges, closed sets and cross-field rules: RunConfig checked itself when it was built
    task = get_task(cfg.task, cfg.task_config)
    task.check_runnable()
    check_format(task, cfg.prompt.prompt_format, prompt_options(cfg))
    check_scoring(task, cfg)
    if cfg.serving.backend != "openai":  # a served model runs where its server runs
        check_device(cfg.serving.device)
    check_cache_dir(cfg.cache_dir or default_cache_dir())
    return task


def prompt_options(cfg: RunConfig) -> PromptOptions:
    """The rendering options of ``cfg`` (:class:`repaudit.tasks.prompts.PromptOptions`)."""
    return PromptOptions(label_style=cfg.prompt.label_style, choice_separator=cfg.prompt.choice_separator,
                         description=cfg.prompt.description, fewshot_as_multiturn=cfg.prompt.fewshot_as_multiturn,
                         pmi=cfg.scoring.acc_norm == "pmi")


def check_scoring(task: Task, cfg: RunConfig) -> None:
    """Scoring settings that apply to ``task``: answer matching and exact_match options to
    generate_until tasks, ``pmi`` to tasks with acc_norm, multi-turn few-shot to chat-template runs.

    Raises:
        RepauditError: an unknown answer match, or a setting the task or run cannot use.
    """
    generative = task.output_type is OutputType.generate_until
    if not generative and (cfg.scoring.answer_match != "exact" or cfg.scoring.ignore_case is not None
                           or cfg.scoring.ignore_punctuation is not None or cfg.scoring.regexes_to_ignore is not None):
        raise RepauditError(f"--answer-match and the exact_match options apply to generate_until tasks; "
                            f"{task.name} is {task.output_type.value}")
    for pattern in cfg.scoring.regexes_to_ignore or []:
        try:
            re.compile(pattern)
        except re.error as e:
            raise RepauditError(f"--regexes-to-ignore: '{pattern}' is not a valid regular expression ({e})") from None
    if cfg.scoring.acc_norm == "pmi" and "acc_norm" not in task.metrics:
        raise RepauditError(f"--acc-norm pmi: task {task.name} has no acc_norm metric")


def check_device(device: str | None) -> None:
    """``device`` names a device torch can use here.

    Raises:
        RepauditError: an unknown device string (None included), or a GPU that is not present.
    """
    import torch

    try:
        dev = torch.device(device or "")  # None as "": torch refuses both, the error below names what was given
    except (RuntimeError, ValueError, TypeError):
        raise RepauditError(f"unknown device '{device}': use cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            built = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise RepauditError(f"--device {device}: no CUDA GPU is visible to torch {torch.__version__} ({built})")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise RepauditError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise RepauditError(f"--device {device}: Apple MPS is not available here")
    elif dev.type != "cpu":
        raise RepauditError(f"--device {device}: device type '{dev.type}' is not supported (cpu, cuda, mps)")


def seed_everything(cfg: RunConfig) -> None:
    """lm-eval seeds python, numpy and torch before building requests."""
    import torch

    random.seed(cfg.seeds.seed)
    np.random.seed(cfg.seeds.numpy_seed)
    torch.manual_seed(cfg.seeds.torch_seed)


def generation_settings(task: Task, cfg: RunConfig, eos_token: str | None) -> GenerationSettings | None:
    """The generate_until settings actually used (``None`` for loglikelihood tasks): ``cfg.generation`` with the
    task's stop sequences and token budget where it leaves them to the task, the EOS appended to the stops, the
    sampling seed resolved, and temperature 0 recorded as greedy.

    lm-eval appends the EOS string to ``until`` unless it is already there; so does repaudit with
    ``stop_at_eos``.
    """
    if task.output_type is not OutputType.generate_until:
        return None
    g, seeds = cfg.generation, cfg.seeds
    until = list(g.until) if g.until is not None else list(task.until)
    if g.stop_at_eos and eos_token and eos_token not in until:
        until.append(eos_token)
    # temperature 0 is greedy decoding whatever do_sample says (as vLLM reads it); recorded as resolved
    return g.replaced(until=tuple(until), max_gen_toks=g.max_gen_toks or task.max_gen_toks,
                      do_sample=g.do_sample and g.temperature > 0,
                      sampling_seed=seeds.torch_seed if g.sampling_seed is None else g.sampling_seed)


def render_requests(task: Task, cfg: RunConfig, docset: DocSet, backend,
                    generation: GenerationSettings | None) -> list[RenderedDoc]:
    """Stage: every evaluated doc as requests, few-shot examples in order, chat template applied."""
    chat: Callable[[str, list[tuple[str, str]], str], str] | None
    if cfg.prompt.chat_template:
        def chat(description: str, turns: list[tuple[str, str]], user: str) -> str:
            # lm-eval 0.4.13: the system message is the system prompt and the description, delimited
            system = _delimit(cfg.prompt.system_prompt, description, task.fewshot_delimiter)
            return backend.apply_chat_template(user, system or None, turns)
    elif cfg.prompt.system_prompt:
        def chat(description: str, turns: list[tuple[str, str]], user: str) -> str:
            # lm-eval 0.4.13 without a chat template: the system message is the system prompt and the description
            # joined by maybe_delimit, then the examples and the doc with no delimiter at all (checked against an
            # lm-eval run with --system_instruction: bench/lmeval_mc2_runs.py)
            return _delimit(cfg.prompt.system_prompt, description, task.fewshot_delimiter) + user
    else:
        chat = None
    pool_by_id = {d.doc_id: d for d in docset.pool}
    opts = prompt_options(cfg)
    return [render(task, d, [pool_by_id[i] for i in docset.fewshot_ids[d.doc_id]], cfg.prompt.prompt_format, generation,
                   chat, opts) for d in docset.docs]


def _delimit(prefix: str | None, suffix: str, delimiter: str) -> str:
    """``prefix + delimiter + suffix``, without the delimiter when either is empty or whitespace
    already meets at the join (lm-eval 0.4.13's ``maybe_delimit``)."""
    if not prefix or not suffix:
        return prefix or suffix
    return prefix + suffix if prefix[-1].isspace() or suffix[0].isspace() else prefix + delimiter + suffix


@dataclass
class Answers:
    """Stage output: one answer per request in order, and what it cost."""

    answers: list
    eval_s: float
    computed_batches: int
    cached_batches: int


def answer_requests(task: Task, backend, rendered: list[RenderedDoc], cache: BatchCache | None,
                    err: Console, on_docs: Callable[[float, int], None] | None = None) -> Answers:
    """Stage: the backend answers every request; finished batches go to ``cache`` as they complete. ``on_docs(done,
    total)`` hears the docs done (fractions of a doc where some of its requests are answered) as they progress."""
    per_doc = [rd.all_requests for rd in rendered]
    requests = [r for reqs in per_doc for r in reqs]
    share = [1.0 / len(reqs) for reqs in per_doc for _ in reqs]  # of its doc, per answered request
    before = cache.added if cache else 0
    t0 = time.perf_counter()
    with progress(err, task.name, len(rendered)) as bar:
        done = [0]

        docs_done = [0.0]

        def advance(n: int) -> None:
            # Docs finish out of order (requests are sorted by length): advance by fractions.
            step = sum(share[done[0]: done[0] + n])
            bar.advance(step)
            done[0] += n
            docs_done[0] += step
            if on_docs is not None:
                on_docs(docs_done[0], len(rendered))

        if task.output_type is OutputType.generate_until:
            answers = backend.generate_until(requests, cache, advance)
        else:
            answers = backend.loglikelihood(requests, cache, advance)
    total = sum(backend.batch_sizes_used.values())
    computed = cache.added - before if cache else total
    return Answers(answers, time.perf_counter() - t0, computed, total - computed)


def build_fingerprint(task: Task, cfg: RunConfig, resolved: ResolvedModel, docset: DocSet, backend,
                      rendered: list[RenderedDoc], generation: GenerationSettings | None) -> Fingerprint:
    """Stage: every settings record as resolved (what was actually used, never "None = default" where a value
    was used) and the facts that identify what ran (:mod:`repaudit.run.fingerprint`)."""
    info = backend.info
    src = docset.source
    sc = cfg.scoring
    em = em_options(task, sc.ignore_case, sc.ignore_punctuation, sc.regexes_to_ignore) if generation else None
    scoring = cfg.scoring if em is None else cfg.scoring.replaced(
        ignore_case=em.ignore_case, ignore_punctuation=em.ignore_punctuation,
        regexes_to_ignore=None if em.regexes_to_ignore is None else tuple(em.regexes_to_ignore))
    settings = RunSettings(
        data=DataSettings(split=src.split, limit=cfg.data.limit), seeds=cfg.seeds, prompt=cfg.prompt,
        fewshot=FewshotSettings(num_fewshot=docset.num_fewshot, fewshot_split=docset.pool_split or None,
                                fewshot_order_seed=cfg.fewshot.fewshot_order_seed),
        serving=cfg.serving.replaced(backend=info.name, device=info.device, dtype=info.dtype),
        # the sampling seed decides sampled generations only: a greedy run records none (as schema 2 did)
        generation=generation if generation is None or generation.do_sample else generation.replaced(
            sampling_seed=None), scoring=scoring)
    desc = descriptions(task, cfg, docset)
    return Fingerprint(
        settings=settings,
        data=DataIdentity(task=task.name, task_version=task.version, output_type=task.output_type.value,
                          source=src.kind, origin=src.origin, location=src.location, revision=src.revision,
                          file_sha256=src.file_sha256, content_sha256=src.content_sha256, n_docs_split=src.n_docs,
                          n_docs=len(docset.docs), docs_sha256=sha256_json([d.row for d in docset.docs]),
                          doc_ids_sha256=None if cfg.doc_ids is None else sha256_json(
                              [d.doc_id for d in docset.docs])),
        model=ModelIdentity(name=resolved.name, source=resolved.source, revision=resolved.revision,
                            weights_sha256=resolved.weights_sha256, gguf_sha256=resolved.gguf_sha256,
                            tokenizer_sha256=info.tokenizer_sha256,
                            special_tokens={"bos": info.bos_token, "eos": info.eos_token, "pad": info.pad_token},
                            architecture=info.architecture, num_parameters=info.num_parameters,
                            trust_remote_code=cfg.trust_remote_code,
                            weights_format=weights_format(resolved.stored, info.dtype)),
        backend=BackendFacts(batch_sizes_used={str(k): v for k, v in sorted(backend.batch_sizes_used.items())},
                             max_length=info.max_length, add_special_tokens=info.add_special_tokens,
                             engine=info.engine or None, bos_first=backend.encoder.resolved_bos()),
        prompt=PromptFacts(template_sha256=template_sha256(task, cfg.prompt.prompt_format),
                           target_delimiter=task.target_delimiter, fewshot_delimiter=task.fewshot_delimiter,
                           chat_template_sha256=info.chat_template_sha256 if cfg.prompt.chat_template else None,
                           description=desc[0], description_sha256=desc[1]),
        fewshot=FewshotFacts(sampler=docset.sampler, ids_sha256=sha256_json([r.fewshot_ids for r in rendered]),
                             pool_fallback=docset.pool_fallback),
        generation=GenerationFacts(eos_token=info.eos_token, stops=list(generation.until or ()))  # (resolved: set)
        if generation else None,
        metric=MetricFacts(metrics=list(task.metrics),
                           filters=[p.name for p in pipelines(task)] if generation else ["none"], aggregation="mean",
                           stderr="sample_stdev_ddof1/sqrt(n)",
                           options={"exact_match": dataclasses.asdict(em)} if em is not None else {},
                           random_baseline=round(random_baseline([len(r.choices) for r in rendered]
                                                                 if not generation else []), 6),
                           reported=(cfg.protocol.scoring.get("metric") if cfg.protocol else None)),
        task_config=cfg.task_config,
        protocol=cfg.protocol,
        server=backend.server_facts(),
        hardware=capture_hardware(), software=capture_software(), git=capture_git_state(),
    )


def descriptions(task: Task, cfg: RunConfig, docset: DocSet) -> tuple[str | None, str]:
    """(the description the prompts used when one text served every evaluated doc, else ``None``;
    sha256 of every doc's description in doc order). The override, or the task's own (MMLU's
    names the doc's subject)."""
    texts = [cfg.prompt.description if cfg.prompt.description is not None else task.description(d) for d in docset.docs]
    return (texts[0] if len(set(texts)) == 1 else None), sha256_json(texts)


def run(cfg: RunConfig, err: Console | None = None, backends: BackendPool | None = None,
        cache: BatchCache | None = None, on_docs: Callable[[float, int], None] | None = None) -> RunRecord:
    """Evaluate ``cfg`` and return the complete :class:`RunRecord` (nothing is written here).

    ``backends`` lets consecutive runs share loaded models (``model_load_s`` is then ~0);
    ``cache`` replaces the batch store under ``cache_dir`` (it is left open; ignored when
    ``cfg.use_batch_cache`` is off); ``on_docs(done, total)`` hears the scoring's progress in docs (a grid's
    progress inside a configuration).

    Raises:
        RepauditError: unknown task/format/dtype, missing or malformed data, a model that
            cannot be resolved or loaded.
    """
    t_start = time.perf_counter()
    err = err or Console(stderr=True)
    task = check_config(cfg)
    if cfg.task_config is None and cfg.task not in TASKS:
        # a task of the installed lm-eval's own folder: the fingerprint carries its configuration, so the run
        # replays where that lm-eval is not installed
        from repaudit.tasks.lmeval_config import ConfigTask
        if isinstance(task, ConfigTask):  # (get_task builds every task outside TASKS from its configuration)
            cfg = cfg.model_copy(update={"task_config": task.config})
    cache_dir = cfg.cache_dir or default_cache_dir()
    resolved = resolve_for(cfg.serving.backend, cfg.model, cfg.revision, cache_dir)
    seed_everything(cfg)
    docset = load_docs(task, cfg, err)

    if cfg.serving.device is not None:  # None: a served model, whose memory is the server's
        reset_peak_memory(cfg.serving.device)
    t_load = time.perf_counter()
    backend = backends.get(resolved, cfg) if backends is not None else load(resolved, cfg)
    load_s = time.perf_counter() - t_load
    load_parts = backend.pop_load_parts()

    generation = generation_settings(task, cfg, backend.info.eos_token)
    rendered = render_requests(task, cfg, docset, backend, generation)
    own_store = cfg.use_batch_cache and cache is None
    store = (open_store(cache_dir) if own_store else cache) if cfg.use_batch_cache else None
    try:
        ans = answer_requests(task, backend, rendered, store, err, on_docs)
        if store is not None:  # measured throughput for --dry-run estimates
            store.add_speed(backend.speed_key(), backend.tokens_computed, ans.eval_s)
    finally:
        if own_store and store is not None:
            store.close()

    results, metrics = score_docs(task, cfg, rendered, ans)
    # a served model's id is the one the endpoint named (``default`` resolves to the model it serves)
    fp = build_fingerprint(task, cfg, backend.resolved, docset, backend, rendered, generation)
    if cfg.scoring.score_normalisation == "leaderboard_normalised":
        metrics += normalised_metrics(metrics, fp.metric.random_baseline or 0.0)
    diag = run_diagnostics(task, docset, results, fp.settings.data.split, context_cut(backend, rendered, generation))
    total_s = time.perf_counter() - t_start
    return RunRecord(
        repaudit_version=repaudit.__version__,
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        fingerprint=fp, fingerprint_digest=fp.digest(), metrics=metrics, docs=results,
        timings=run_timings(cfg, backend, ans, len(results), (load_s, load_parts), total_s), diagnostics=diag,
    )


def score_docs(task, cfg: RunConfig, rendered: list[RenderedDoc], ans: Answers) -> tuple[list, list]:
    """Stage: ``(per-doc results, aggregated metrics)`` from the answers, in the order of ``rendered`` (each doc
    takes as many answers as it made requests)."""
    results, pos = [], 0
    options = em_options(task, cfg.scoring.ignore_case, cfg.scoring.ignore_punctuation, cfg.scoring.regexes_to_ignore)
    for rd in rendered:
        n = len(rd.all_requests)
        answers = ans.answers[pos: pos + n]
        result = doc_result(task, rd, answers, cfg.scoring.acc_norm, cfg.scoring.answer_match, options)
        served = served_doc(answers)
        results.append(result if served is None else result.model_copy(update={"served": served}))
        pos += n
    metrics = aggregate([r.metrics for r in results], metric_variants(task, cfg.scoring.acc_norm),
                        [r.cluster for r in results])
    return results, metrics


def run_timings(cfg: RunConfig, backend, ans: Answers, n_docs: int, load: tuple[float, dict | None],
                total_s: float) -> Timings:
    """Stage: the run's :class:`Timings` — ``load`` is (model load seconds, their parts or None) — with the peak GPU
    memory read now (the hf backend on a CUDA device; else None)."""
    load_s, parts = load
    return Timings(model_load_s=round(load_s, 3), eval_s=round(ans.eval_s, 3), total_s=round(total_s, 3),
                   docs_per_s=round(n_docs / ans.eval_s, 3) if ans.eval_s > 0 else 0.0,
                   computed_batches=ans.computed_batches, cached_batches=ans.cached_batches,
                   tokens_computed=backend.tokens_computed, forward_s=round(backend.forward_s, 3),
                   model_load_parts_s=parts,
                   eval_parts_s={k: round(v, 3) for k, v in sorted(backend.eval_parts.items())} or None,
                   # vLLM's engine allocates outside torch's counter (and in another process by default)
                   gpu_memory_peak_mib=peak_memory_mib(cfg.serving.device) if cfg.serving.backend == "hf" else None)


def context_cut(backend, rendered: list[RenderedDoc], generation: GenerationSettings | None) -> list[int] | None:
    """Docs with a request the backend cut from the left: context + continuation over ``max_length``
    (lm-eval keeps the last ``max_length + 1`` tokens), or a generation context over
    ``max_length - max_gen_toks``. Read after the run: the encoder's BOS counts are already recorded. None where the
    backend cannot tell: a served model whose server tells no window (its requests are sent uncut, and the server
    refuses what does not fit) or that has no tokenizer (text is sent; what the server cuts is not seen)."""
    limit = backend.info.max_length
    if limit is None or backend.tokenizer is None:
        return None
    cut = []
    for rd in rendered:
        if generation is not None:
            over = any(len(backend.encoder.encode(r.context)) > limit - generation.max_gen_toks for r in rd.requests)
        else:
            over = any(sum(map(len, backend.encoder.encode_pair(r.context, r.continuation))) > limit + 1
                       for r in rd.requests)
        if over:
            cut.append(rd.doc.doc_id)
    return cut


def run_diagnostics(task: Task, docset: DocSet, results: list, split: str | None, cut: list[int] | None) -> Diagnostics:
    """Stage: :func:`repaudit.run.diagnostics.diagnose` with the few-shot facts only the runner knows —
    docs whose own content (``doc_hash``) is among their examples, and a pool that is the evaluation split."""
    pool = {d.doc_id: doc_hash(d.row) for d in docset.pool}
    own = {d.doc_id: doc_hash(d.row) for d in docset.docs}
    leaked = [i for i, ids in docset.fewshot_ids.items() if any(pool.get(j) == own[i] for j in ids)]
    from_eval = bool(docset.num_fewshot and docset.pool) and docset.pool_split == split
    unknown = {} if cut is not None else {"context_truncated": "a served model whose server tells no context window "
                                                               "or tokenises nothing: what it cuts is not seen"}
    return diagnose(results, task.output_type is OutputType.generate_until, leaked=leaked, from_eval_split=from_eval,
                    context_truncated=cut, unknown=unknown)
