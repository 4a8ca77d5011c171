"""Rebuild runnable configurations from repaudit run files, and the hybrids between two of them.

A factor is *replayable* when this machine can set it: everything a RunConfig controls. The
machine, the library versions and weights that are not on disk are not; they are listed as such
and their effect ends up in the attribution's residual.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.run.records import RunRecord
from repaudit.run.runner import RunConfig


def replayable() -> dict[str, tuple[tuple[str, ...], Any]]:
    """Replayable factor -> (RunConfig fields it sets, reader of the values used from a fingerprint): a view of
    :mod:`repaudit.run.factors`."""
    from repaudit.run.factors import replayable as _replayable

    return {name: (f.fields, f.fingerprint) for name, f in _replayable().items()}


def config_from_record(rec: RunRecord, data_dir: Path | None, model: str | None = None,
                       cache_dir: Path | None = None) -> RunConfig:
    """The RunConfig that reproduces ``rec`` on this machine.

    Without ``data_dir`` the docs come from the default resolution (``$REPAUDIT_DATA_DIR``, the
    packaged data, the hub); the attribution checks that they are the docs the run evaluated.
    """
    fp = rec.fingerprint
    cfg: dict[str, Any] = dict(
        task=fp.data.task, task_config=fp.task_config,
        model=model or ("default" if fp.model.source == "gguf-package" else fp.model.name),
        revision=fp.model.revision if fp.model.source == "hub" else None, data_dir=data_dir,
        split=fp.data.split, limit=fp.data.limit,
        doc_ids=[d.doc_id for d in rec.docs] if fp.data.doc_ids_sha256 is not None else None,
        trust_remote_code=fp.model.trust_remote_code, device=fp.backend.device, cache_dir=cache_dir)
    for fields, read in replayable().values():  # every factor as the run used it (registry readers)
        cfg.update(zip(fields, read(fp)))
    return RunConfig(**cfg)


#: fingerprint groups this machine cannot set, with the words the report uses for them
NOT_REPLAYABLE = {"hardware": "hardware", "library_versions": "library versions", "model": "model weights",
                  "tokenizer": "tokenizer", "data": "data"}
#: fields of those groups that matter (a model *name* may differ while the weights are the same)
_FIXED_FIELDS = {"model": ("weights_sha256", "num_parameters"), "tokenizer": ("tokenizer_sha256",),
                 "data": ("task", "split", "content_sha256", "limit")}


@dataclass
class ReplaySource:
    """One side of an attribution: what was recorded and the configuration that replays it.

    Attributes:
        path: the run file (repaudit) or results file (lm-eval).
        source: ``repaudit <version>`` or ``lm-eval <version>``.
        task: the one task of the run.
        config: the RunConfig that reproduces the run on this machine.
        factors: the run's factors (:mod:`repaudit.importers.factors`), for what cannot be replayed.
        docs: recorded per-doc outcomes by doc_id.
    """

    path: Path
    source: str
    task: str
    config: RunConfig
    factors: dict[str, dict[str, Any]]
    docs: dict[int, Any]


#: lm-eval ``--model`` names (0.3's included) -> repaudit backend
LMEVAL_BACKENDS = {"hf": "hf", "hf-auto": "hf", "huggingface": "hf", "hf-causal": "hf",
                   "hf-causal-experimental": "hf", "vllm": "vllm"}


def config_from_lmeval(task: str, factors: dict[str, dict[str, Any]], path: Path, data_dir: Path | None,
                       model: str | None = None, cache_dir: Path | None = None,
                       task_config: dict[str, Any] | None = None) -> RunConfig:
    """The RunConfig that replays one task of an lm-eval run with repaudit's lm-eval-compatible path.

    The task is built from the configuration the file records (``configs.<task>``: templates,
    delimiters, splits, data files, metrics, filters); files without one (lm-eval 0.3) use
    repaudit's own definition of the task in the ``lmeval`` format, or ``task_config`` (``--task-config``)
    when given. The replay's fidelity (per-doc agreement with the recorded samples) shows whether either held.

    Raises:
        RepauditError: a setting the file does not record (e.g. ``batch_size`` "auto" without the
            sizes used), or a task repaudit does not define.
    """
    from repaudit.importers.factors import NOT_SET, UNKNOWN
    from repaudit.importers.lmeval_tasks import configs_recorded, load_task_config
    from repaudit.run.runner import get_task

    # lm-eval 0.4 records the task's whole configuration: replay that, not repaudit's own definition; its
    # errors (an unknown !function, a bad template) are the real reason a replay fails, so they are raised
    recorded = task_config
    if recorded is None and configs_recorded(path):
        _, recorded = load_task_config(path, task)
    get_task(task, recorded)

    def need(group: str, name: str) -> Any:
        v = factors.get(group, {}).get(name, UNKNOWN)
        if v == UNKNOWN:
            raise RepauditError(f"'{path}' does not record {group}.{name}: it cannot be replayed")
        if v == NOT_SET:
            raise RepauditError(f"'{path}' does not set {group}.{name} (lm-eval took its default, which depends on "
                                "its version): it cannot be replayed")
        return v

    dtype = str(need("dtype", "dtype")).removeprefix("torch.")
    lm_backend = str(need("backend", "name"))
    if lm_backend not in LMEVAL_BACKENDS:
        raise RepauditError(f"'{path}' ran with lm-eval's '{lm_backend}' model type, which repaudit cannot replay "
                            f"(replayable: {', '.join(sorted(LMEVAL_BACKENDS))})")
    batch_size = need("batch_size", "batch_size")
    if not isinstance(batch_size, int):
        raise RepauditError(f"'{path}' ran with batch size {batch_size!r}: replay needs a number")
    seeds = factors.get("seed", {})
    stop, sampling = factors.get("stop", {}), factors.get("sampling", {})
    eos = stop.get("eos_token")
    until = stop.get("until")
    split = factors.get("data", {}).get("split")
    cfg = dict(task=task, task_config=recorded, model=model or str(need("model", "name")), data_dir=data_dir,
               cache_dir=cache_dir,
               split=None if split == UNKNOWN else split, limit=factors.get("data", {}).get("limit"),
               num_fewshot=int(need("fewshot", "num_fewshot")), prompt_format="lmeval", dtype=dtype,
               batch_size=batch_size, device="cpu", backend=LMEVAL_BACKENDS[lm_backend],
               seed=seeds.get("python", 0), numpy_seed=seeds.get("numpy", 1234), torch_seed=seeds.get("torch", 1234),
               fewshot_seed=seeds.get("fewshot", 1234),
               chat_template=bool(factors.get("chat_template", {}).get("applied", False)),
               fewshot_as_multiturn=bool(factors.get("chat_template", {}).get("fewshot_as_multiturn", False)),
               system_prompt=factors.get("chat_template", {}).get("system_prompt"),
               add_bos_token=bos if isinstance(bos := factors.get("bos", {}).get("bos_first"), bool) else None)
    if until is not None:
        def told(group: dict, key: str, default: Any) -> Any:
            # a setting the run's gen_kwargs did not state ran at lm-eval's default (greedy: no sampling)
            v = group.get(key)
            return default if v is None or v == UNKNOWN else v

        cfg.update(until=[u for u in until if u != eos], stop_at_eos=eos in until,
                   max_gen_toks=told(factors.get("max_tokens", {}), "max_gen_toks", None),
                   do_sample=str(told(sampling, "do_sample", False)).lower() in ("true", "1"),
                   temperature=float(told(sampling, "temperature", 0.0)), top_p=float(told(sampling, "top_p", 1.0)),
                   top_k=int(told(sampling, "top_k", 0)))
    if any(v == UNKNOWN for v in cfg.values()):
        bad = [k for k, v in cfg.items() if v == UNKNOWN]
        raise RepauditError(f"'{path}' does not record {', '.join(bad)}: it cannot be replayed")
    return RunConfig(**cfg)


#: lighteval prompt functions (0.13's name and the older one) and dataset subsets -> repaudit's task whose
#: ``lmeval`` prompt format builds the same prompt: "Question: …\nAnswer:", " " + choice, examples as
#: query + " " + gold joined by blank lines (``PromptManager._prepare_plain_text``)
LIGHTEVAL_TASKS = {("arc_prompt", "ARC-Easy"): "arc_easy", ("arc", "ARC-Easy"): "arc_easy",
                   ("arc_prompt", "ARC-Challenge"): "arc_challenge", ("arc", "ARC-Challenge"): "arc_challenge"}


def lighteval_doc_ids(n_split: int, max_samples: int | None) -> list[int]:
    """The docs lighteval evaluates under ``--max-samples``: the first N of ``random.Random(42).shuffle`` of the
    split's rows (``LightevalTask.get_docs``; the shuffle depends only on the length), in row order."""
    import random

    ids = list(range(n_split))
    if max_samples is None or max_samples >= n_split:
        return ids
    random.Random(42).shuffle(ids)
    return sorted(ids[:max_samples])


def config_from_lighteval(task: str, factors: dict[str, dict[str, Any]], path: Path, docs: dict[int, Any] | None,
                          data_dir: Path | None, model: str | None = None, cache_dir: Path | None = None) -> RunConfig:
    """The RunConfig that replays a lighteval log-likelihood run of a task whose prompt function repaudit
    reimplements (:data:`LIGHTEVAL_TASKS`): the docs its details list (else its ``--max-samples`` choice,
    :func:`lighteval_doc_ids`, over the split as loaded here), every doc's own few-shot examples from those
    details (rows of its few-shot split, in order), its dtype, batch size and model, no chat template.

    Raises:
        RepauditError: a prompt function or dataset repaudit cannot rebuild, a generative task, a chat
            template (lighteval does not record the templated text), or a setting the file does not record.
    """
    from repaudit.importers.factors import UNKNOWN

    def need(group: str, name: str) -> Any:
        v = factors.get(group, {}).get(name, UNKNOWN)
        if v == UNKNOWN:
            raise RepauditError(f"'{path}' does not record {group}.{name}: it cannot be replayed")
        return v

    fn = factors.get("prompt_format", {}).get("prompt_function", UNKNOWN)
    subset = factors.get("data", {}).get("subset", UNKNOWN)
    ours = LIGHTEVAL_TASKS.get((str(fn), str(subset)))
    if ours is None:
        known = ", ".join(sorted({f"{f} on {s}" for f, s in LIGHTEVAL_TASKS}))
        raise RepauditError(f"'{path}': lighteval's prompt function '{fn}' on '{subset}' is not reimplemented, so "
                            f"{task} cannot be replayed (replayable: {known})")
    if factors.get("stop", {}).get("until") is not None:
        raise RepauditError(f"'{path}': {task} is a generative lighteval task; only log-likelihood tasks replay")
    if factors.get("chat_template", {}).get("applied") is not False:
        raise RepauditError(f"'{path}' ran with a chat template (or does not say): lighteval does not record the "
                            "templated prompt, so it cannot be replayed")
    n_shot = int(need("fewshot", "num_fewshot"))
    if n_shot and not docs:
        raise RepauditError(f"'{path}' is a {n_shot}-shot lighteval run without its details: the examples each doc "
                            "got are known only from them (lighteval's own few-shot draws are not reimplemented)")
    if n_shot and any(d.fewshot_ids is None for d in docs.values()):
        raise RepauditError(f"'{path}' is a {n_shot}-shot lighteval run whose details do not list every doc's "
                            "few-shot examples")
    limit = factors.get("data", {}).get("limit")
    split = str(need("data", "split"))
    if docs:
        doc_ids = sorted(docs)
    elif limit is None:
        doc_ids = None
    else:
        from repaudit.run.runner import get_task
        from repaudit.tasks.data import data_root, load_rows

        t = get_task(ours, None)
        rows, _ = load_rows(t, split, data_root(t, data_dir))
        doc_ids = lighteval_doc_ids(len(rows), int(limit))
    dtype = str(need("dtype", "dtype")).removeprefix("torch.")
    backend = str(need("backend", "name"))
    if backend not in ("hf", "vllm"):
        raise RepauditError(f"'{path}' ran on lighteval's '{backend}' backend, which repaudit cannot replay")
    batch_size = need("batch_size", "batch_size")
    few = factors.get("fewshot", {})
    return RunConfig(task=ours, model=model or str(need("model", "name")), data_dir=data_dir, cache_dir=cache_dir,
                     split=split, doc_ids=doc_ids, num_fewshot=n_shot, prompt_format="lmeval", dtype=dtype,
                     batch_size=int(batch_size), device="cpu", backend=backend,
                     fewshot_split=str(few.get("split")) if n_shot and few.get("split") not in (None, UNKNOWN)
                     else None,
                     fewshot_from=Path(path) if n_shot and docs else None,
                     fewshot_by_doc={i: list(d.fewshot_ids) for i, d in docs.items()} if n_shot and docs
                     else None)


def load_replay_source(path: Path, data_dir: Path | None, model: str | None = None,
                       cache_dir: Path | None = None, task_config: dict[str, Any] | None = None,
                       need_docs: bool = True) -> ReplaySource:
    """Read anything ``compare`` reads — a repaudit run file, an lm-eval results file (with its
    ``--log_samples`` output) or an output directory, a lighteval results file with its details
    (:func:`config_from_lighteval`), an inspect_ai log (:mod:`repaudit.audit.inspect_replay`) — as a run to
    replay. ``task_config`` (from ``--task-config``) defines the task of an lm-eval run whose file records no
    configuration; ``need_docs=False`` (a grid's ``--base``) accepts a run without per-doc results.

    Raises:
        RepauditError: unreadable or foreign file, more than one task, no per-doc results, or the real reason
            its task cannot be rebuilt (a lighteval prompt function or an inspect solver not rebuilt, …).
    """
    from repaudit.importers.detect import load_run
    from repaudit.run.records import read_record

    crun = load_run(Path(path))
    path = Path(crun.path)  # a directory resolves to its results file
    if len(crun.tasks) != 1:
        raise RepauditError(f"'{path}' holds {len(crun.tasks)} tasks ({', '.join(sorted(crun.tasks))}): "
                            "attribution needs runs of one task")
    task, outcome = next(iter(crun.tasks.items()))
    if not outcome.docs and need_docs:
        raise RepauditError(f"'{path}' has no per-doc results for {task}: run lm-eval with --log_samples")
    if crun.source.startswith("lighteval"):
        cfg = config_from_lighteval(task, crun.factors[task], path, outcome.docs, data_dir, model, cache_dir)
    elif crun.source.startswith("inspect_ai"):
        from repaudit.audit.inspect_replay import config_from_inspect

        cfg, docs = config_from_inspect(path, crun.factors[task], outcome.docs or {}, model, cache_dir)
        return ReplaySource(path=Path(path), source=crun.source, task=cfg.task, config=cfg, factors=crun.factors[task],
                            docs=docs)
    elif crun.source.startswith("repaudit"):
        cfg = config_from_record(read_record(Path(path)), data_dir, model, cache_dir)
    else:
        cfg = config_from_lmeval(task, crun.factors[task], path, data_dir, model, cache_dir, task_config)
    return ReplaySource(path=Path(path), source=crun.source, task=task, config=cfg, factors=crun.factors[task],
                        docs=outcome.docs or {})


def replay_values(cfg: RunConfig, factor: str) -> tuple:
    """The RunConfig values that make up ``factor``, as compared between two runs (a recorded task
    configuration by its template part: its n-shot and metadata are other factors, or none)."""
    from repaudit.tasks.lmeval_config import NOT_TEMPLATE

    values = []
    for f in replayable()[factor][0]:
        v = getattr(cfg, f)
        if f == "task_config" and v is not None:
            v = {k: x for k, x in v.items() if k not in NOT_TEMPLATE}
        values.append(v)
    return tuple(values)


def differing_factors(a: ReplaySource, b: ReplaySource) -> tuple[list[str], list[str], list[str]]:
    """``(replayable factors that differ, non-replayable parts that differ, parts one run does not record)``."""
    from repaudit.audit.compare import diff_factors

    replay = [name for name in replayable() if replay_values(a.config, name) != replay_values(b.config, name)]
    rows = diff_factors(a.task, a.factors, b.factors)
    fixed, unknown = [], []
    for group, words in NOT_REPLAYABLE.items():
        fields = _FIXED_FIELDS.get(group)
        status = {r.status for r in rows if r.group == group and (fields is None or r.field in fields)}
        if "differs" in status:
            fixed.append(words)
        elif "unknown" in status:
            unknown.append(words)
    return replay, fixed, unknown


def hybrid(cfg_a: RunConfig, cfg_b: RunConfig, factors: list[str], subset: frozenset[int]) -> RunConfig:
    """A's configuration with B's values for the factors whose indices are in ``subset``."""
    update = {}
    fields = replayable()
    for i in subset:
        for f in fields[factors[i]][0]:
            update[f] = getattr(cfg_b, f)
    # examples recorded per doc (a lighteval run's details) go with B's n-shot: without them a hybrid with B's
    # n-shot would draw other examples than B's
    if "num_fewshot" in update and (cfg_b.fewshot_from is not None or cfg_b.fewshot_by_doc is not None):
        update.update(fewshot_from=cfg_b.fewshot_from, fewshot_by_doc=cfg_b.fewshot_by_doc)
    elif "num_fewshot" in update and (cfg_a.fewshot_from is not None or cfg_a.fewshot_by_doc is not None):
        update.update(fewshot_from=None, fewshot_by_doc=None)
    return cfg_a.model_copy(update=update)
