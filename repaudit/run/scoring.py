"""Runner stage 4: answers → per-doc results (metrics, predictions, hashes as lm-eval computes them)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np

from repaudit.errors import RepauditError
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


def metric_key(metric: str, filter_name: str) -> str:
    """A generation's per-doc metric key: ``metric,filter``, or the bare metric for lm-eval's unnamed ``none``
    filter (as lm-eval's files key it, and :mod:`repaudit.importers.lmeval.results` reads them)."""
    return metric if filter_name == "none" else f"{metric},{filter_name}"


def metric_variants(task: Task, acc_norm: str = "char_length") -> dict[str, str]:
    """Per-doc metric key -> the variant recorded with its aggregate (acc_norm's: its normalisation)."""
    if task.output_type is OutputType.generate_until:
        names = task.metrics if task.results_function() else ("exact_match",)
        return {metric_key(m, p.name): p.name for m in names for p in pipelines(task)}
    if task.results_function():
        return {m: "none" for m in task.metrics}  # lm-eval's key "<metric>,none": no filter on log-likelihoods
    if task.output_type is OutputType.loglikelihood:
        return {"acc": "is_greedy"}
    return {m: acc_norm if m == "acc_norm" else MC_VARIANTS[m] for m in task.metrics}


def em_options(task: Task, ignore_case: bool | None = None, ignore_punctuation: bool | None = None,
               regexes_to_ignore: Sequence[str] | None = None) -> ExactMatchOptions:
    """The task's ``exact_match`` options with the ones given (not ``None``) put in their place."""
    o = task.em_options
    return dataclasses.replace(
        o, ignore_case=o.ignore_case if ignore_case is None else ignore_case,
        ignore_punctuation=o.ignore_punctuation if ignore_punctuation is None else ignore_punctuation,
        regexes_to_ignore=o.regexes_to_ignore if regexes_to_ignore is None else tuple(regexes_to_ignore))


def _lmeval_metrics(task: Task, fn, rd: RenderedDoc, results: list) -> dict[str, float]:
    """``task.metrics`` of one doc from lm-eval's ``process_results(doc, results)``, each one number.

    Raises:
        RepauditError: the function fails on this doc, or a metric it does not return or returns as other than
            one number (a list: lm-eval aggregates those otherwise).
    """
    try:
        out = fn(rd.doc.row, results)
    except Exception as exc:  # lm-eval's code on this doc: its failure is the user's answer, not a traceback
        raise RepauditError(f"{task.name}: lm-eval's process_results failed on doc {rd.doc.doc_id}: "
                            f"{type(exc).__name__}: {str(exc)[:200]}") from None
    metrics = {}
    for m in task.metrics:
        v = out.get(m) if isinstance(out, dict) else None
        # lm-eval's functions return Python or numpy scalars (MC2's np.float64, IFEval's bools)
        if isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)):
            metrics[m] = float(v)
            continue
        raise RepauditError(f"{task.name}: lm-eval's process_results gave {m!r} = {str(v)[:40]!r} for doc "
                            f"{rd.doc.doc_id}, not one number per doc (repaudit records one number per doc and metric)")
    return metrics


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
        fn = task.results_function()
        if fn is not None:
            metrics = {metric_key(m, name): v for name, a in extracted.items()
                       for m, v in _lmeval_metrics(task, fn, rd, [a]).items()}
        else:
            metrics = {metric_key("exact_match", name): match_answer(a, rd.target, opts, answer_match)
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
    fn = task.results_function()
    if fn is not None:
        metrics = _lmeval_metrics(task, fn, rd, list(zip(lls, greedy)))
        prediction: int | str = argmax_first(lls) if task.output_type is OutputType.multiple_choice else int(greedy[0])
    elif task.output_type is OutputType.loglikelihood:
        metrics = {"acc": float(greedy[0])}
        prediction = int(greedy[0])
    else:
        if rd.gold is None:  # a multiple-choice doc's prompt always names its gold choice (tasks.prompts)
            raise RepauditError(f"doc {rd.doc.doc_id}: a multiple-choice doc without a gold choice cannot be scored")
        all_metrics = multiple_choice_metrics(lls, rd.choices, rd.gold, greedy, acc_norm,
                                              [a.n_tokens for a in results], uncond)
        metrics = {m: all_metrics[m] for m in task.metrics}
        prediction = argmax_first(lls)
    target = rd.target if task.output_type is OutputType.loglikelihood else str(rd.gold)
    conts = sha256_json([r.continuation for r in rd.requests])
    return DocResult(**base, choices_hash=conts, target=target, target_hash=sha256_text(target), gold=rd.gold,
                     loglikelihoods=lls, is_greedy=greedy, continuation_tokens=[a.n_tokens for a in results],
                     prediction=prediction, metrics=metrics, unconditional_loglikelihoods=uncond)
