"""Few-shot selection, reproducing lm-evaluation-harness 0.4.13's samplers.

lm-eval seeds one ``random.Random(fewshot_seed)`` per task and draws each doc's examples from it
in doc order (``ContextSampler.get_context``): ``rnd.sample(pool, n + 1)`` when the pool is the
evaluation split (the doc itself is then dropped), ``rnd.sample(pool, n)`` otherwise. The
``first_n`` sampler (MMLU) takes the pool's first examples. Few-shot ids are therefore a
function of (seed, pool, doc order), and we record them per doc so that any run can be replayed
with exactly the same examples in the same order.
"""

from __future__ import annotations

import random
from collections import defaultdict

from repaudit.errors import RepauditError, UsageError
from repaudit.tasks.base import Doc


def select_fewshot(eval_docs: list[Doc], pool: list[Doc], num_fewshot: int, sampler: str, seed: int,
                   same_split: bool, by_cluster: bool) -> dict[int, list[int]]:
    """Few-shot doc ids (indices into ``pool``), in prompt order, for every doc of ``eval_docs``.

    Args:
        eval_docs: all docs of the evaluation split in doc_id order (before ``--limit``, because
            lm-eval's RNG stream runs over docs in order and ``--limit`` only truncates it).
        pool: the few-shot split's docs.
        sampler: ``random`` or ``first_n``.
        same_split: the pool is the evaluation split, so a doc must not be its own example.
        by_cluster: draw from the doc's cluster only, with one RNG per cluster (MMLU: one
            lm-eval task per subject, each with its own sampler).

    Returns:
        ``{doc_id: [pool ids]}``; empty lists when ``num_fewshot == 0``.

    Raises:
        RepauditError: the pool is smaller than ``num_fewshot`` or the sampler is unknown.
    """
    if num_fewshot == 0:
        return {d.doc_id: [] for d in eval_docs}
    if sampler not in ("random", "first_n"):
        raise RepauditError(f"unknown few-shot sampler '{sampler}': use random or first_n")
    pools: dict[str | None, list[Doc]] = defaultdict(list)
    for d in pool:
        pools[d.cluster if by_cluster else None].append(d)
    rngs: dict[str | None, random.Random] = {}
    out: dict[int, list[int]] = {}
    for doc in eval_docs:
        key = doc.cluster if by_cluster else None
        candidates = pools.get(key, [])
        if len(candidates) < num_fewshot:
            raise RepauditError(f"few-shot pool for {key or 'the task'} has {len(candidates)} docs, "
                                f"fewer than num_fewshot={num_fewshot}")
        n = num_fewshot + 1 if same_split else num_fewshot
        if sampler == "first_n":
            drawn = candidates[:n]
        else:
            rng = rngs.setdefault(key, random.Random(seed))
            drawn = rng.sample(candidates, min(n, len(candidates)))
        # lm-eval drops the doc itself by equality of content, not by position.
        chosen = [d.doc_id for d in drawn if not (same_split and d.row == doc.row)][:num_fewshot]
        out[doc.doc_id] = chosen
    return out


def parse_fewshot_ids(text: str, option: str = "--fewshot-ids") -> list[int]:
    """Parse ``--fewshot-ids "12,5,7"`` (or another ``option`` of doc ids) into ``[12, 5, 7]``.

    Raises:
        UsageError: an element is not a non-negative integer (a bad option value: usage, checked before any work).
    """
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{option} '{text[:80]}' is not a comma-separated list of doc ids") from None
    if any(i < 0 for i in ids):
        raise UsageError(f"{option} '{text[:80]}' has a negative doc id")
    return ids


def permute(ids: list[int], seed: int, doc_id: int) -> list[int]:
    """Doc ``doc_id``'s few-shot ids in a seeded random order (same examples, other order).

    Each doc gets its own permutation, drawn from ``random.Random`` seeded with ``(seed, doc_id)``
    so that it depends neither on the other docs nor on ``--limit``. Few-shot order is known to move
    scores by itself (Lu et al. 2022, "Fantastically Ordered Prompts", ACL).
    """
    out = list(ids)
    random.Random(f"{seed}:{doc_id}").shuffle(out)
    return out
