"""A run as ``compare`` sees it, whatever file it came from: each task's record in the one vocabulary
(:mod:`repaudit.vocabulary`), reported scores, and per-doc outcomes where the file has them (each harness's adapter
builds one: :mod:`repaudit.importers.adapter`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from repaudit.errors import RepauditError
from repaudit.run.diagnostics import Diagnostics
from repaudit.vocabulary import Recorded, Value


@dataclass
class DocOutcome:
    """One doc of one task: hashes for matching, per-doc metric values, the prediction and the
    per-choice log-likelihoods (nats) where the task is log-likelihood multiple choice."""

    doc_id: int
    doc_hash: str | None
    prompt_hash: str | None
    target: str | None
    cluster: str | None
    metrics: dict[str, float]
    prediction: int | str | None
    loglikelihoods: list[float] | None = None
    fewshot_ids: list[int] | None = None
    #: sha256 of the JSON list of scored continuations; checks a pairing where doc_hash is not recorded
    choices_hash: str | None = None
    #: generate_until: raw generation, filter name -> extracted answer, generated tokens, finish reason
    generation: str | None = None
    extracted: dict[str, str] | None = None
    generated_tokens: int | None = None
    finish: str | None = None
    #: corpus-level metrics whose per-doc value is a ``(log-likelihood, words|bytes)`` pair (word_perplexity)
    weighted: dict[str, tuple[float, float]] | None = None
    #: the text the file holds (for the per-doc browser): the first request's context (the prompt) and the
    #: scored continuations; ``None`` where the file does not keep them (repaudit runs rebuild the prompt)
    prompt: str | None = None
    choices: list[str] | None = None
    #: the harness's own id of the doc where it is not a row index (inspect's sample id): pairs two runs
    #: whose doc orders differ
    key: str | None = None
    #: ``(question, choices, target)`` as the harness gave them (inspect: the last user message of the
    #: input, the choice texts, the target letter): pairs docs across harnesses by content
    content: tuple[str, list[str] | None, str] | None = None
    #: per choice, the continuation's length in tokens (acc_norm's ``token_length``), where the file keeps it
    continuation_tokens: list[int] | None = None
    #: per choice, the log-likelihood after an empty context (acc_norm's ``pmi``), where the file keeps it
    unconditional: list[float] | None = None


@dataclass
class TaskOutcome:
    """Reported aggregates (metric key -> (value, stderr)) and, if available, per-doc outcomes.

    Attributes:
        n_docs: docs evaluated (per-doc results, lm-eval's ``n-samples.effective``), ``None`` if not recorded.
        n_original: docs in the split before ``--limit`` (lm-eval's ``n-samples.original``), if recorded.
        is_group: an aggregate of other tasks (lm-eval ``group_subtasks`` with subtasks, or ``groups``).
        higher_is_better: the file's own direction per metric key (lm-eval 0.4's ``higher_is_better``).
        source_name: the task's name in its file when compare paired it under another name.
        metric_names: metric key -> the file's own ``task metric`` where a rename changed it.
        declared: metric key -> ``(unit, low, high)`` as the file declares them (Every Eval Ever's
            ``metric_config.metric_unit``, ``min_score``, ``max_score``; ``None`` where a part is not declared):
            the metric's scale, unit and range for :func:`repaudit.importers.metric_kinds.metric_kind`.
        stderr_notes: metric key -> how its stderr in ``reported`` was read where the file records no standard error
            as such (an Every Eval Ever record's confidence interval or standard deviation): the rows that use it say
            so.
    """

    task: str
    reported: dict[str, tuple[float, float | None]]
    docs: dict[int, DocOutcome] | None
    n_docs: int | None
    diagnostics: Diagnostics | None = None
    n_original: int | None = None
    is_group: bool = False
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    source_name: str | None = None
    metric_names: dict[str, str] = field(default_factory=dict)
    declared: dict[str, tuple[str | None, float | None, float | None]] = field(default_factory=dict)
    stderr_notes: dict[str, str] = field(default_factory=dict)


@dataclass
class ComparableRun:
    """A run of repaudit or an imported run of another harness.

    Attributes:
        path: the file (or folder) read.
        source: the harness and version as the file says (``lm-eval 0.4.13``, ``EEE 0.2.0: helm``).
        factors: task -> its settings and facts, each with its provenance (:class:`~repaudit.vocabulary.Recorded`).
        tasks: task -> reported scores and per-doc outcomes.
        notes: what the import boundary dropped as not recorded (values of the wrong type), one line each.
        warnings: what makes the run's own numbers doubtful, one line each naming the file (a converter's per-doc
            rows whose mean is not the score it reports); ``compare`` adds them to its warnings.
        timestamp: when the run was made, whole Unix seconds as text, as its file records it (lm-eval's ``date``, an
            Every Eval Ever record's ``evaluation_timestamp``); ``None``: not recorded. An export publishes it as
            EEE's ``evaluation_timestamp`` and ``retrieved_timestamp``.
        compute: what the run cost, as its file records it (NeurIPS checklist Q8), by name: ``wall_s`` (the whole
            run, seconds), ``model_load_s``, ``eval_s``, ``torch_threads``; each a :class:`~repaudit.vocabulary.Value`
            with the file's key. Empty: this reader reads none (never a factor: a run's wall time differs every time).
    """

    path: str
    source: str
    factors: dict[str, Recorded]
    tasks: dict[str, TaskOutcome] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timestamp: str | None = None
    compute: dict[str, Value] = field(default_factory=dict)


def metric_key(name: str, variant: str) -> str:
    """The key a score is compared under: ``acc``, ``acc_norm``, ``exact_match,strict-match``.

    lm-eval's ``,none`` filter and repaudit's descriptive variants of the default aggregate
    (``none``, ``char_length``, ``micro``) collapse to the bare metric name, as does acc_norm under any
    ``--acc-norm`` normalisation (that is a recorded factor of the run, not another metric).
    """
    if "," in name:  # generate_until metrics are already keyed by filter (``exact_match,strict-match``)
        return name
    if name == "acc_norm" and variant in ("token_length", "byte_length"):
        return name
    return name if variant in ("none", "char_length", "micro", "") else f"{name},{variant}"


def per_doc_gaps(scores: dict[str, tuple[float, float | None]], docs: dict[int, DocOutcome],
                 declared: dict[str, tuple] | None = None) -> list[tuple[str, float, float]]:
    """``(metric, mean of its per-doc values, reported score)`` for every metric that every doc carries, that
    aggregates as a mean (:mod:`repaudit.importers.metric_kinds`, with what the file ``declared`` of it; not
    perplexity) and whose mean differs from the reported score by more than 1e-6 (a percentage may be reported over
    per-doc 0/1 values: ×100 is no gap)."""
    from repaudit.importers.metric_kinds import metric_kind

    out = []
    for key, (value, _) in scores.items():
        if metric_kind(key, [value], declared=(declared or {}).get(key)).aggregation != "mean":  # perplexity: no mean
            continue
        vals = [d.metrics[key] for d in docs.values() if key in d.metrics]
        if len(vals) == len(docs) and vals and all(math.isfinite(v) for v in vals) and math.isfinite(value):
            mean = sum(vals) / len(vals)
            if abs(mean - value) > 1e-6 and abs(100 * mean - value) > 1e-4:
                out.append((key, mean, value))
    return out


def check_per_doc_means(per_doc: Path, results: Path, scores: dict[str, tuple[float, float | None]],
                        docs: dict[int, DocOutcome], what: str) -> None:
    """Refuse per-doc outcomes (lm-eval samples, lighteval details, rows of a repaudit export) whose mean of a
    metric every doc carries differs from the score the results file reports (:func:`per_doc_gaps`).

    Raises:
        RepauditError: the per-doc file belongs to another run.
    """
    for key, mean, value in per_doc_gaps(scores, docs)[:1]:
        raise RepauditError(f"{what} '{per_doc}' does not belong to '{results}': its mean {key} "
                            f"{mean:.6f} differs from the reported {value:.6f}")


def per_doc_warnings(per_doc: Path, task: str, scores: dict[str, tuple[float, float | None]],
                     docs: dict[int, DocOutcome], what: str, declared: dict[str, tuple] | None = None) -> list[str]:
    """One warning per metric whose per-doc mean is not its reported score (:func:`per_doc_gaps`), for files of
    converters whose per-doc rows and aggregates may disagree (Every Eval Ever records of other tools, HELM runs):
    the run is still read, its score rows compared unpaired, and the warning says which numbers disagree."""
    return [f"'{per_doc}': task '{task}': the mean {key} of the {what} ({mean:.6g}) is not the reported score "
            f"({value:.6g}): the run's per-doc values and its aggregate disagree" for key, mean, value in
            per_doc_gaps(scores, docs, declared)]
