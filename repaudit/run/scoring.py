"""Runner stage 4: answers → per-doc results (metrics, predictions, hashes as lm-eval computes them)."""

from __future__ import annotations

import dataclasses
import json

from repaudit.hashing import sha256_json, sha256_text
from repaudit.run.metrics import argmax_first, multiple_choice_metrics
from repaudit.run.records import DocResult
from repaudit.tasks.base import OutputType, Task
from repaudit.tasks.filters import NO_FILTER, ExactMatchOptions, match_answer
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


def em_options(task: Task, ignore_case: bool | None = None, ignore_punctuation: bool | None = None,
               regexes_to_ignore: list[str] | None = None) -> ExactMatchOptions:
    """The task's ``exact_match`` options with the ones given (not ``None``) put in their place."""
    given = dict(ignore_case=ignore_case, ignore_punctuation=ignore_punctuation,
                 regexes_to_ignore=None if regexes_to_ignore is None else tuple(regexes_to_ignore))
    return dataclasses.replace(task.em_options, **{k: v for k, v in given.items() if v is not None})


def doc_result(task: Task, rd: RenderedDoc, answers: list, acc_norm: str = "char_length",
               answer_match: str = "exact", options: ExactMatchOptions | None = None) -> DocResult:
    """One doc's :class:`DocResult` from its backend answers (one per request of ``rd.requests``
    then ``rd.unconditional``, in that order).

    ``acc_norm`` picks acc_norm's normalisation (:data:`repaudit.run.metrics.ACC_NORMS`);
    ``answer_match`` and ``options`` (default: the task's) how a generation's extracted answer is
    matched (:func:`repaudit.tasks.filters.match_answer`). Both are scoring only, except ``pmi``
    which needs the unconditional answers: runs that differ in them share every other batch.

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
        opts = options or task.em_options
        metrics = {f"exact_match,{name}": match_answer(a, rd.target, opts, answer_match)
                   for name, a in extracted.items()}
        return DocResult(**base, target=rd.target, target_hash=sha256_text(rd.target), gold=None,
                         loglikelihoods=[], is_greedy=[], continuation_tokens=[],
                         prediction=next(iter(extracted.values())), metrics=metrics, generation=text,
                         generated_tokens=gen.n_tokens, finish=gen.finish,
                         extracted=extracted)
    results: list[LoglikelihoodResult] = answers[:len(rd.requests)]
    uncond = [a.logprob for a in answers[len(rd.requests):]] or None
    lls = [a.logprob for a in results]
    greedy = [a.is_greedy for a in results]
    if task.output_type is OutputType.loglikelihood:
        metrics = {"acc": float(greedy[0])}
        prediction: int | str = int(greedy[0])
    else:
        all_metrics = multiple_choice_metrics(lls, rd.choices, rd.gold, greedy, acc_norm,
                                              [a.n_tokens for a in results], uncond)
        metrics = {m: all_metrics[m] for m in task.metrics}
        prediction = argmax_first(lls)
    target = rd.target if task.output_type is OutputType.loglikelihood else str(rd.gold)
    conts = sha256_json([r.continuation for r in rd.requests])
    return DocResult(**base, choices_hash=conts, target=target, target_hash=sha256_text(target), gold=rd.gold,
                     loglikelihoods=lls, is_greedy=greedy, continuation_tokens=[a.n_tokens for a in results],
                     prediction=prediction, metrics=metrics, unconditional_loglikelihoods=uncond)
