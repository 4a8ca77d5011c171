"""Runner stage 1: the docs to evaluate and each doc's few-shot examples.

The evaluation split comes from :mod:`repaudit.tasks.data`'s resolution order; the few-shot pool
follows lm-eval's rule (``fewshot_split`` if set, else the training split if the source has it,
else the evaluation split); few-shot ids are drawn over *all* docs before ``--limit`` truncates,
because lm-eval's sampler RNG runs over docs in order.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from repaudit.errors import RepauditError
from repaudit.escape import rich_text
from repaudit.run.config import RunConfig
from repaudit.run.records import read_record
from repaudit.tasks.base import Doc, Task
from repaudit.tasks.data import DataRoot, DataSource, available_splits, data_root, load_rows, to_docs
from repaudit.tasks.fewshot import permute, select_fewshot


@dataclass
class DocSet:
    """What the runner evaluates.

    Attributes:
        docs: the evaluated docs (after ``--limit``), in doc_id order.
        n_docs_split: docs in the whole evaluation split.
        source: where the evaluation split was read from.
        pool: the few-shot pool's docs (empty for 0-shot).
        pool_split: the pool's split (``None`` for 0-shot).
        fewshot_ids: per evaluated doc, its few-shot pool ids in prompt order.
        sampler: ``random``, ``first_n``, ``explicit``, ``replayed`` or ``none``.
        num_fewshot: the n-shot actually used.
        pool_fallback: why the few-shot examples come from the evaluated split itself (the task's few-shot split is
            not in the data, or the task names none); ``None``: they do not (or 0-shot).
    """

    docs: list[Doc]
    source: DataSource
    pool: list[Doc]
    pool_split: str | None
    fewshot_ids: dict[int, list[int]]
    sampler: str
    num_fewshot: int
    pool_fallback: str | None = None


def _preferred(cfg: RunConfig, field: str) -> bool:
    """A split set by a protocol (not by the user) falls back like the task's default split."""
    return cfg.protocol is not None and field in cfg.protocol.preferred


def _resolve_split(task: Task, cfg: RunConfig, root: DataRoot, err: Console) -> str:
    if cfg.data.split and not _preferred(cfg, "split"):
        return cfg.data.split
    split = cfg.data.split
    # a split still set here is the protocol's (_preferred: a user's split returned above)
    wanted, whose = ((split, f"protocol {cfg.protocol.name}'s") if split and cfg.protocol is not None
                     else (task.eval_split, "lm-eval"))
    have = available_splits(task, root)
    if have and wanted not in have:
        err.print(rich_text(f"note: {task.name}'s {whose} split '{wanted}' is not in {root.describe()}; "
                            f"evaluating split '{have[0]}' (recorded in the fingerprint)"),
                  soft_wrap=True, highlight=False)
        return have[0]
    return wanted


def _fewshot_pool(task: Task, cfg: RunConfig, root: DataRoot, split: str, eval_docs: list[Doc]
                  ) -> tuple[list[Doc], str, str | None]:
    """The few-shot pool, its split, and why it is the evaluated split where it is (else ``None``)."""
    samples = getattr(task, "fixed_samples", None)
    if samples is not None and not cfg.fewshot.fewshot_split:  # lm-eval's fewshot_config.samples: a fixed list
        return to_docs(task, samples), "samples", None
    wanted = cfg.fewshot.fewshot_split or task.fewshot_split
    if wanted == split:
        return eval_docs, split, None  # asked for: no fallback to say
    if wanted is None:
        return eval_docs, split, f"{task.name} has no few-shot split in {root.describe()}"
    have = available_splits(task, root)
    if have is not None and wanted not in have:
        if cfg.fewshot.fewshot_split and not _preferred(cfg, "fewshot_split"):
            raise RepauditError(f"few-shot split '{wanted}' of {task.name} is not in {root.describe()}")
        return eval_docs, split, f"{task.name}'s few-shot split '{wanted}' is not in {root.describe()}"
    rows, _ = load_rows(task, wanted, root)
    return to_docs(task, rows), wanted, None


def _select(task: Task, cfg: RunConfig, n: int, eval_docs: list[Doc], pool: list[Doc], same_split: bool
            ) -> tuple[dict[int, list[int]], str]:
    # another harness's examples arrive resolved (fewshot_by_doc); a repaudit run file is read here
    recorded = cfg.fewshot_by_doc
    if recorded is None and cfg.fewshot_from is not None:
        recorded = {d.doc_id: list(d.fewshot_ids) for d in read_record(cfg.fewshot_from).docs}
    if recorded is not None:
        bad = sorted({i for ids in recorded.values() for i in ids if i >= len(pool)})
        if bad:
            raise RepauditError(f"--fewshot-from '{cfg.fewshot_from}' names few-shot ids {bad[:5]} beyond the "
                                f"pool of {len(pool)} docs: it is a run of other data")
        return recorded, "replayed"
    if cfg.fewshot_ids is not None:
        bad = [i for i in cfg.fewshot_ids if i >= len(pool)]
        if bad:
            raise RepauditError(f"--fewshot-ids {bad} are out of range: the few-shot pool has {len(pool)} docs")
        return {d.doc_id: list(cfg.fewshot_ids) for d in eval_docs}, "explicit"
    by_cluster = task.cluster(pool[0].row) is not None if pool else False
    # a doc is kept out of its own examples by the task's rule (lm-eval's for recorded configurations)
    exclude = same_split if task.fewshot_exclude_self is None else task.fewshot_exclude_self
    return select_fewshot(eval_docs, pool, n, task.fewshot_sampler, cfg.seeds.fewshot_seed, exclude,
                          by_cluster=by_cluster), task.fewshot_sampler


def load_docs(task: Task, cfg: RunConfig, err: Console) -> DocSet:
    """Read the evaluation split, choose the few-shot pool and every doc's examples, apply ``--limit``.

    Raises:
        RepauditError: missing or malformed data, a few-shot split or ids that do not exist, a
            ``--fewshot-from`` run of other docs.
    """
    root = data_root(task, cfg.data_dir)
    split = _resolve_split(task, cfg, root, err)
    # --revision is the model's; a dataset's revision is the hub default (the loader records what it read)
    rows, source = load_rows(task, split, root)
    all_docs = to_docs(task, rows)
    n_shot = len(cfg.fewshot_ids) if cfg.fewshot_ids is not None else (
        cfg.fewshot.num_fewshot if cfg.fewshot.num_fewshot is not None else task.default_num_fewshot)
    fallback = None
    if n_shot or cfg.fewshot_from or cfg.fewshot_by_doc is not None:
        pool, pool_split, fallback = _fewshot_pool(task, cfg, root, split, all_docs)
    else:
        pool, pool_split = [], None
    if fallback is not None and pool:  # the examples come from the docs being scored: say so before any work
        err.print(rich_text(f"note: {fallback}; few-shot examples are drawn from the evaluated split '{split}' "
                            "(recorded in the fingerprint; a doc among its own examples is counted as leaked)"),
                  soft_wrap=True, highlight=False)
    if pool:
        fewshot_ids, sampler = _select(task, cfg, n_shot, all_docs, pool, pool_split == split)
    else:
        fewshot_ids, sampler = {d.doc_id: [] for d in all_docs}, "none"
    if cfg.fewshot.fewshot_order_seed is not None:
        fewshot_ids = {i: permute(ids, cfg.fewshot.fewshot_order_seed, i) for i, ids in fewshot_ids.items()}
    docs = all_docs[: cfg.data.limit] if cfg.data.limit else all_docs
    if cfg.doc_ids is not None:  # a round of a doc-adaptive audit: few-shot ids were drawn over all docs above
        keep = set(cfg.doc_ids)
        absent = keep - {d.doc_id for d in docs}
        if absent:
            raise RepauditError(f"doc id {min(absent)} is not among the {len(docs)} docs of {task.name} "
                                f"({len(absent)} of the requested ids are absent)")
        docs = [d for d in docs if d.doc_id in keep]
    missing = [d.doc_id for d in docs if d.doc_id not in fewshot_ids]
    if missing:
        raise RepauditError(f"--fewshot-from '{cfg.fewshot_from}' has no few-shot ids for doc {missing[0]} "
                            f"({len(missing)} docs missing): it is a run of other docs")
    if sampler == "replayed":
        n_shot = max((len(fewshot_ids[d.doc_id]) for d in docs), default=0)
    return DocSet(docs=docs, source=source, pool=pool, pool_split=pool_split,
                  fewshot_ids={d.doc_id: fewshot_ids[d.doc_id] for d in docs}, sampler=sampler, num_fewshot=n_shot,
                  pool_fallback=fallback if pool else None)
