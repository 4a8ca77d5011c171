"""Runner stage 4: answers → per-doc results (metrics, predictions, hashes as lm-eval computes them)."""

from __future__ import annotations

import json

from repaudit.hashing import sha256_json, sha256_text
from repaudit.run.metrics import argmax_first, multiple_choice_metrics
from repaudit.run.records import DocResult
from repaudit.tasks.base import OutputType, Task
from repaudit.tasks.filters import NO_FILTER, exact_match
from repaudit.tasks.prompts import RenderedDoc
from repaudit.tasks.requests import LoglikelihoodResult

#: how each multiple-choice metric's aggregate is labelled (the normalisation it uses)
MC_VARIANTS = {"acc": "none", "acc_norm": "char_length", "acc_bytes": "byte_length", "exact_match": "is_greedy"}


def doc_hash(row: dict) -> str:
    """lm-eval's ``doc_hash``: sha256 of ``json.dumps(doc, indent=2, ensure_ascii=False)``."""
    return sha256_text(json.dumps(row, indent=2, default=str, ensure_ascii=False))


def pipelines(task: Task):
    """The answer filters of a generate_until task (lm-eval's default ``none`` = take_first)."""
    return task.filter_pipelines or (NO_FILTER,)


def metric_variants(task: Task, acc_norm: str = "char_length") -> dict[str, str]:
    """Per-doc metric key -> the variant recorded with its aggregate (acc_norm's: its normalisation)."""
    if task.output_type is OutputType.generate_until:
        return {f"exact_match,{p.name}": p.name for p in pipelines(task)}
    if task.output_type is OutputType.loglikelihood:
        return {"acc": "is_greedy"}
    return {m: acc_norm if m == "acc_norm" else MC_VARIANTS[m] for m in task.metrics}


def doc_result(task: Task, rd: RenderedDoc, answers: list, acc_norm: str = "char_length") -> DocResult:
    """One doc's :class:`DocResult` from its backend answers (one per request, in request order).

    ``acc_norm`` picks acc_norm's normalisation (:data:`repaudit.run.metrics.ACC_NORMS`): scoring
    only, so runs that differ in it share every batch.

    ``answers`` are :class:`LoglikelihoodResult` for log-likelihood requests, one
    :class:`~repaudit.tasks.requests.Generation` for generate_until. Generations go through every
    answer filter of the task; ``prediction`` is the first filter's answer.
    """
    base = dict(doc_id=rd.doc.doc_id, doc_hash=doc_hash(rd.doc.row), prompt_hash=sha256_text(rd.requests[0].context),
                cluster=rd.doc.cluster, fewshot_ids=rd.fewshot_ids, choices=rd.choices)
    if task.output_type is OutputType.generate_until:
        gen = answers[0]
        text = gen.text
        extracted = {p.name: p.apply(text) for p in pipelines(task)}
        metrics = {f"exact_match,{name}": exact_match(a, rd.target, task.em_options) for name, a in extracted.items()}
        return DocResult(**base, target=rd.target, target_hash=sha256_text(rd.target), gold=None,
                         loglikelihoods=[], is_greedy=[], continuation_tokens=[],
                         prediction=next(iter(extracted.values())), metrics=metrics, generation=text,
                         generated_tokens=gen.n_tokens, finish=gen.finish,
                         extracted=extracted)
    results: list[LoglikelihoodResult] = answers
    lls = [a.logprob for a in results]
    greedy = [a.is_greedy for a in results]
    if task.output_type is OutputType.loglikelihood:
        metrics = {"acc": float(greedy[0])}
        prediction: int | str = int(greedy[0])
    else:
        all_metrics = multiple_choice_metrics(lls, rd.choices, rd.gold, greedy, acc_norm,
                                              [a.n_tokens for a in results])
        metrics = {m: all_metrics[m] for m in task.metrics}
        prediction = argmax_first(lls)
    target = rd.target if task.output_type is OutputType.loglikelihood else str(rd.gold)
    conts = sha256_json([r.continuation for r in rd.requests])
    return DocResult(**base, choices_hash=conts, target=target, target_hash=sha256_text(target), gold=rd.gold,
                     loglikelihoods=lls, is_greedy=greedy, continuation_tokens=[a.n_tokens for a in results],
                     prediction=prediction, metrics=metrics)
