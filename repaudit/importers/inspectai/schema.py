"""Typed models of inspect_ai evaluation logs (``EvalLog`` version 2), for :mod:`repaudit.boundary`.

Only what a fingerprint and per-sample outcomes need is typed; unknown keys are kept (inspect adds fields
in most releases) and every optional field is ``Lenient``: a value of the wrong type is dropped with a
note and its factor is *not recorded*. Field names and meanings follow inspect_ai's ``inspect_ai.log``
models (``EvalLog``, ``EvalSpec``, ``EvalPlan``, ``EvalResults``, ``EvalSample``, ``EvalSampleReductions``)
as of 0.3.285; the file format is not a frozen public spec (the maintainers' word, inspect_ai issue #5066),
so nothing here is required that a log of any 0.3 release may lack.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import Lenient
from repaudit.importers.lmeval.schema import MAX_COUNT

Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
OptStr = Annotated[str | None, Lenient]
OptInt = Annotated[int | None, Lenient]
OptCount = Annotated[Count | None, Lenient]
OptBool = Annotated[bool | None, Lenient]
OptNum = Annotated[float | None, Lenient]
OptDict = Annotated[dict[str, Any] | None, Lenient]
#: a sample id: inspect accepts strings and integers (a sample without one gets its position, from 1)
SampleId = str | int
#: a score value: a string (``C``/``I``/``P``/``N``, ``yes``…), a number, a bool, or a list/dict of them
ScoreValue = str | int | float | bool | list | dict | None


class _Model(BaseModel):
    """A part of an inspect_ai log; field names and meanings are inspect's (``inspect_ai.log``, https://inspect.aisi.org.uk/reference/inspect_ai.log.html)."""

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True, protected_namespaces=())


class GenerateConfig(_Model):
    """``model_generate_config`` / ``plan.config``: what generation was asked for (``None`` = the provider's
    default). In inspect's ``hf/`` provider the requests in flight at once — the batch — are ``max_connections``."""

    temperature: OptNum = None
    top_p: OptNum = None
    top_k: OptInt = None
    max_tokens: OptCount = None
    stop_seqs: Annotated[list[str] | None, Lenient] = None
    seed: OptInt = None
    max_connections: OptCount = None
    system_message: OptStr = None
    num_choices: OptCount = None
    best_of: OptCount = None
    frequency_penalty: OptNum = None
    presence_penalty: OptNum = None
    reasoning_effort: OptStr = None
    reasoning_tokens: OptCount = None


class EvalDataset(_Model):
    """``eval.dataset``: inspect's ``EvalDataset`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evaldataset)."""

    name: OptStr = None
    location: OptStr = None
    samples: OptCount = None
    sample_ids: Annotated[list[SampleId] | None, Lenient] = None
    shuffled: OptBool = None


class EvalConfig(_Model):
    """``eval.config``: ``limit`` is a count or a ``[start, end]`` range; ``epochs_reducer`` names reducers."""

    limit: Annotated[int | list[int] | None, Lenient] = None
    sample_id: Annotated[SampleId | list[SampleId] | None, Lenient] = None
    sample_shuffle: Annotated[bool | int | None, Lenient] = None
    epochs: OptCount = None
    epochs_reducer: Annotated[list[str] | None, Lenient] = None
    fail_on_error: Annotated[bool | float | None, Lenient] = None
    max_samples: OptCount = None


class EvalRevision(_Model):
    """``eval.revision``: inspect's ``EvalRevision``, the git state of the task's code (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalrevision)."""

    type: OptStr = None
    origin: OptStr = None
    commit: OptStr = None
    dirty: OptBool = None


class MetricSpec(_Model):
    """One of ``eval.scorers[i].metrics``: inspect's ``EvalMetricDefinition`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html)."""

    name: str


class ScorerSpec(_Model):
    """``eval.scorers[i]``: a scorer and the metrics it reports (``inspect_ai/accuracy``)."""

    name: str
    metrics: Annotated[list[MetricSpec] | None, Lenient] = None


class EvalSpec(_Model):
    """``eval``: the task, its arguments, the dataset, the model and how it was called."""

    task: str
    task_version: Annotated[int | str | None, Lenient] = None
    task_registry_name: OptStr = None
    task_args: OptDict = None
    solver: OptStr = None
    solver_args: OptDict = None
    dataset: Annotated[EvalDataset | None, Lenient] = None
    model: OptStr = None
    model_base_url: OptStr = None
    model_args: OptDict = None
    model_generate_config: Annotated[GenerateConfig | None, Lenient] = None
    config: Annotated[EvalConfig | None, Lenient] = None
    revision: Annotated[EvalRevision | None, Lenient] = None
    packages: Annotated[dict[str, str] | None, Lenient] = None
    scorers: Annotated[list[ScorerSpec] | None, Lenient] = None


class PlanStep(_Model):
    """One of ``plan.steps`` (or ``plan.finish``): inspect's ``EvalPlanStep`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalplanstep)."""

    solver: str
    params: OptDict = None


class EvalPlan(_Model):
    """``plan``: inspect's ``EvalPlan``, the solver steps and the generate config (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalplan)."""

    name: OptStr = None
    steps: Annotated[list[PlanStep] | None, Lenient] = None
    finish: Annotated[PlanStep | None, Lenient] = None
    config: Annotated[GenerateConfig | None, Lenient] = None


class EvalMetric(_Model):
    """One of ``results.scores[i].metrics``: inspect's ``EvalMetric`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalmetric)."""

    name: OptStr = None
    value: Annotated[float | int | dict | None, Lenient] = None


class EvalScore(_Model):
    """One scorer's aggregate (``results.scores[i]``): ``name`` is the score's name (the scorer's unless it
    returns several), ``reducer`` the epochs reducer."""

    name: str
    scorer: OptStr = None
    reducer: OptStr = None
    scored_samples: OptCount = None
    unscored_samples: OptCount = None
    metrics: Annotated[dict[str, EvalMetric], Field(default_factory=dict)]


class EvalResults(_Model):
    """``results``: inspect's ``EvalResults`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalresults)."""

    total_samples: OptCount = None
    completed_samples: OptCount = None
    scores: Annotated[list[EvalScore], Field(default_factory=list)]


class Score(_Model):
    """One of a sample's ``scores``: inspect's ``Score`` (https://inspect.aisi.org.uk/reference/inspect_ai.scorer.html#score)."""

    value: ScoreValue = None
    answer: OptStr = None
    explanation: OptStr = None


class ChatMessage(_Model):
    """A message; ``content`` is text or a list of content parts (``{"type": "text", "text": …}``)."""

    role: str
    content: str | list[dict[str, Any]] = ""


class OutputChoice(_Model):
    """One of ``output.choices``: inspect's ``ChatCompletionChoice`` (https://inspect.aisi.org.uk/reference/inspect_ai.model.html#chatcompletionchoice)."""

    message: Annotated[ChatMessage | None, Lenient] = None
    stop_reason: OptStr = None


class ModelUsage(_Model):
    """``output.usage``: inspect's ``ModelUsage`` (https://inspect.aisi.org.uk/reference/inspect_ai.model.html#modelusage)."""

    input_tokens: OptCount = None
    output_tokens: OptCount = None


class ModelOutput(_Model):
    """A sample's ``output``: inspect's ``ModelOutput`` (https://inspect.aisi.org.uk/reference/inspect_ai.model.html#modeloutput)."""

    model: OptStr = None
    choices: Annotated[list[OutputChoice] | None, Lenient] = None
    completion: OptStr = None
    usage: Annotated[ModelUsage | None, Lenient] = None
    error: OptStr = None


class SampleError(_Model):
    """A sample's ``error``: inspect's ``EvalError`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html)."""

    message: OptStr = None


class EvalSample(_Model):
    """One sample of one epoch (``samples/{id}_epoch_{n}.json``, or the ``sample.json`` shell of the
    folder shape, which leaves ``messages``/``events``/``attachments`` to chunk entries)."""

    id: SampleId
    epoch: Annotated[int, Field(ge=1, le=MAX_COUNT)] = 1
    input: str | list[ChatMessage]
    choices: Annotated[list[str] | None, Lenient] = None
    target: str | list[str] = ""
    output: Annotated[ModelOutput | None, Lenient] = None
    scores: Annotated[dict[str, Score] | None, Lenient] = None
    messages: Annotated[list[ChatMessage] | None, Lenient] = None
    attachments: Annotated[dict[str, str] | None, Lenient] = None
    error: Annotated[SampleError | None, Lenient] = None
    limit: OptDict = None


class ReducedSample(_Model):
    """``reductions.json``: one sample's score after the epochs reducer."""

    sample_id: SampleId
    value: ScoreValue = None
    answer: OptStr = None


class SampleReductions(_Model):
    """One scorer's entry of ``reductions.json``: inspect's ``EvalSampleReductions`` (https://inspect.aisi.org.uk/reference/inspect_ai.log.html#evalsamplereductions)."""

    scorer: str
    reducer: OptStr = None
    samples: list[ReducedSample]


class EvalLog(_Model):
    """``header.json`` of a ``.eval`` log, or a whole ``.json`` log (which also holds ``samples`` and
    ``reductions``); a crashed ``.eval`` log has only ``_journal/start.json`` (``version``, ``eval``, ``plan``)."""

    version: Annotated[int, Field(ge=1, le=100)] = 2
    status: OptStr = None
    eval: EvalSpec
    plan: Annotated[EvalPlan | None, Lenient] = None
    results: Annotated[EvalResults | None, Lenient] = None
    error: OptDict = None
    samples: list[dict[str, Any]] | None = None
    reductions: list[dict[str, Any]] | None = None
