"""Runner stage 4: answers → per-doc results (metrics, predictions, hashes as lm-eval computes them)."""

from __future__ import annotations

import json

from repaudit.hashing import sha256_text
from repaudit.run.metrics import GSM8K_FILTERS, argmax_first, exact_match, extract_answer, multiple_choice_metrics
from repaudit.run.records import DocResult
from repaudit.tasks.base import OutputType, Task
from repaudit.tasks.prompts import RenderedDoc
from repaudit.tasks.requests import LoglikelihoodResult


def doc_hash(row: dict) -> str:
    """lm-eval's ``doc_hash``: sha256 of ``json.dumps(doc, indent=2, ensure_ascii=False)``."""
    return sha256_text(json.dumps(row, indent=2, default=str, ensure_ascii=False))


def metric_variants(task: Task) -> dict[str, str]:
    """Per-doc metric key -> the variant recorded with its aggregate."""
    if task.output_type is OutputType.generate_until:
        return {f"exact_match,{f}": f for f in GSM8K_FILTERS}
    return {m: ("char_length" if m == "acc_norm" else "none") for m in task.metrics}


def doc_result(task: Task, rd: RenderedDoc, answers: list) -> DocResult:
    """One doc's :class:`DocResult` from its backend answers (one per request, in request order).

    ``answers`` are :class:`LoglikelihoodResult` for multiple choice, one generated string for
    generate_until.
    """
    base = dict(doc_id=rd.doc.doc_id, doc_hash=doc_hash(rd.doc.row), prompt_hash=sha256_text(rd.requests[0].context),
                cluster=rd.doc.cluster, fewshot_ids=rd.fewshot_ids, choices=rd.choices)
    if task.output_type is OutputType.generate_until:
        text = answers[0]
        extracted = {f: extract_answer(text, f) for f in GSM8K_FILTERS}
        metrics = {f"exact_match,{f}": exact_match(a, rd.target) for f, a in extracted.items()}
        return DocResult(**base, target=rd.target, target_hash=sha256_text(rd.target), gold=None,
                         loglikelihoods=[], is_greedy=[], continuation_tokens=[],
                         prediction=extracted["strict-match"], metrics=metrics, generation=text, extracted=extracted)
    results: list[LoglikelihoodResult] = answers
    lls = [a.logprob for a in results]
    all_metrics = multiple_choice_metrics(lls, rd.choices, rd.gold)
    target = str(rd.gold)
    return DocResult(**base, target=target, target_hash=sha256_text(target), gold=rd.gold,
                     loglikelihoods=lls, is_greedy=[a.is_greedy for a in results],
                     continuation_tokens=[a.n_tokens for a in results], prediction=argmax_first(lls),
                     metrics={m: all_metrics[m] for m in task.metrics})
