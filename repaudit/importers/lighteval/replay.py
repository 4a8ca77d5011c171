"""Replay of a lighteval run: the RunConfig that re-runs a log-likelihood task whose prompt function repaudit
reimplements, on the docs and few-shot examples its details record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.run.config import RunConfig
from repaudit.vocabulary import Recorded

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


def config_from_lighteval(task: str, rec: Recorded, path: Path, docs: dict[int, Any] | None,
                          data_dir: Path | None, model: str | None = None, cache_dir: Path | None = None) -> RunConfig:
    """The RunConfig that replays a lighteval log-likelihood run of a task whose prompt function repaudit
    reimplements (:data:`LIGHTEVAL_TASKS`): the docs its details list (else its ``--max-samples`` choice,
    :func:`lighteval_doc_ids`, over the split as loaded here), every doc's own few-shot examples from those
    details (rows of its few-shot split, in order), its dtype, batch size and model, no chat template.

    Raises:
        RepauditError: a prompt function or dataset repaudit cannot rebuild, a generative task, a chat
            template (lighteval does not record the templated text), or a setting the file does not record.
    """
    fn = rec.value("prompt.prompt_function", "not recorded")
    subset = rec.value("data.subset", "not recorded")
    ours = LIGHTEVAL_TASKS.get((str(fn), str(subset)))
    if ours is None:
        known = ", ".join(sorted({f"{f} on {s}" for f, s in LIGHTEVAL_TASKS}))
        raise RepauditError(f"'{path}': lighteval's prompt function '{fn}' on '{subset}' is not reimplemented, so "
                            f"{task} cannot be replayed (replayable: {known})")
    if rec.value("data.output_type") == "generate_until":
        raise RepauditError(f"'{path}': {task} is a generative lighteval task; only log-likelihood tasks replay")
    if rec.value("prompt.chat_template") is not False:
        raise RepauditError(f"'{path}' ran with a chat template (or does not say): lighteval does not record the "
                            "templated prompt, so it cannot be replayed")
    n_shot = int(rec.need("fewshot.num_fewshot", path))
    if n_shot and not docs:
        raise RepauditError(f"'{path}' is a {n_shot}-shot lighteval run without its details: the examples each doc "
                            "got are known only from them (lighteval's own few-shot draws are not reimplemented)")
    if n_shot and docs and any(d.fewshot_ids is None for d in docs.values()):
        raise RepauditError(f"'{path}' is a {n_shot}-shot lighteval run whose details do not list every doc's "
                            "few-shot examples")
    limit = rec.value("data.limit")
    split = str(rec.need("data.split", path))
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
    dtype = str(rec.need("serving.dtype", path)).removeprefix("torch.")
    backend = str(rec.need("serving.backend", path))
    if backend not in ("hf", "vllm"):
        raise RepauditError(f"'{path}' ran on lighteval's '{backend}' backend, which repaudit cannot replay")
    batch_size = rec.need("serving.batch_size", path)
    pool = rec.value("fewshot.fewshot_split")
    # split, num_fewshot, prompt_format, dtype, …: factor names, routed to their records by RunConfig's wrap
    # validator (the pydantic plugin's __init__ knows only the model's own fields)
    return RunConfig(task=ours, model=model or str(rec.need("model.name", path)),  # type: ignore[call-arg]
                     data_dir=data_dir, cache_dir=cache_dir,
                     split=split, doc_ids=doc_ids, num_fewshot=n_shot, prompt_format="lmeval", dtype=dtype,
                     batch_size=int(batch_size), device="cpu", backend=backend,
                     fewshot_split=str(pool) if n_shot and pool is not None else None,
                     fewshot_from=Path(path) if n_shot and docs else None,
                     fewshot_by_doc={i: list(d.fewshot_ids) for i, d in docs.items()} if n_shot and docs
                     else None)
