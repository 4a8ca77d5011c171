"""Typed models of NeMo Evaluator's files, for :mod:`repaudit.boundary`. Names and meanings are NeMo Evaluator's
(``nemo_evaluator/api/api_dataclasses.py`` ``EvaluationResult``; the "Evaluation Output" page of its documentation);
only what repaudit reads is modelled.

* ``results.yml`` (the documentation also calls it ``results.yaml``) — one task's run: the ``command`` executed (the
  harness's own command line, with the values it actually passed), ``config`` (``type``: the task; ``params``: limit,
  temperature, top-p, max new tokens, parallelism, …), ``target.api_endpoint`` (model id, URL, endpoint type, the
  interceptors of its adapter), ``git_hash``, and ``results`` — ``tasks`` and ``groups``, each ``metrics.<metric>.
  scores.<score>`` with a ``value`` and optional ``stats`` (``stderr``, ``stddev``, ``count``, ``min``, ``max``);
* ``processed_results.json`` — what ``nemo-evaluator-launcher export --dest local --format json`` writes: per benchmark
  and model, each invocation's ``scores`` (flattened names, no statistics), ``harness``, ``container``, ``executor``.

Optional parts are :data:`~repaudit.boundary.Lenient`: a wrong type there is not recorded, never a refusal.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import Lenient


class _Nemo(BaseModel):
    """A part of a NeMo Evaluator file: numbers are numbers, other keys ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, protected_namespaces=())


OptStr = Annotated[str | None, Lenient]


class Stats(_Nemo):
    """``stats`` of a score: its standard error, standard deviation and the count of values behind it."""

    stderr: Annotated[float | None, Lenient] = None
    stddev: Annotated[float | None, Lenient] = None
    count: Annotated[int | None, Field(ge=0), Lenient] = None


class Score(_Nemo):
    """One score of a metric: its value and statistics."""

    value: float
    stats: Annotated[Stats | None, Lenient] = None


class Metric(_Nemo):
    """One metric: its scores by name (``micro``, or the metric's own name)."""

    scores: dict[str, Score]


class TaskResult(_Nemo):
    """A task's or a group's metrics."""

    metrics: dict[str, Metric]


class Results(_Nemo):
    """``results``: tasks and groups by name."""

    tasks: Annotated[dict[str, TaskResult] | None, Lenient] = None
    groups: Annotated[dict[str, TaskResult] | None, Lenient] = None


class Interceptor(_Nemo):
    """One interceptor of the endpoint's adapter (``system_message``, ``caching``, …)."""

    name: str
    enabled: Annotated[bool | None, Lenient] = None
    config: Annotated[dict[str, Any] | None, Lenient] = None


class AdapterConfig(_Nemo):
    """``target.api_endpoint.adapter_config``: the interceptors between the harness and the endpoint."""

    interceptors: Annotated[list[Interceptor] | None, Lenient] = None
    endpoint_type: OptStr = None


class ApiEndpoint(_Nemo):
    """``target.api_endpoint``: the model served, where, and how it is called."""

    model_id: OptStr = None
    url: OptStr = None
    type: OptStr = None
    stream: Annotated[bool | None, Lenient] = None
    adapter_config: Annotated[AdapterConfig | None, Lenient] = None


class Target(_Nemo):
    """``target``."""

    api_endpoint: Annotated[ApiEndpoint | None, Lenient] = None


class EvalConfig(_Nemo):
    """``config``: the task (``type``) and its parameters as given (null: left to the harness)."""

    type: OptStr = None
    params: Annotated[dict[str, Any] | None, Lenient] = None


class ResultsYaml(_Nemo):
    """A ``results.yml``."""

    results: Results
    command: OptStr = None
    config: Annotated[EvalConfig | None, Lenient] = None
    target: Annotated[Target | None, Lenient] = None
    git_hash: Annotated[str | None, Lenient] = None


class Invocation(_Nemo):
    """One entry of ``processed_results.json``'s ``benchmarks.<b>.models.<m>``: an invocation's scores."""

    scores: dict[str, float]
    invocation_id: OptStr = None
    job_id: OptStr = None
    harness: OptStr = None
    container: OptStr = None
    executor: OptStr = None
    timestamp: OptStr = None


class Benchmark(_Nemo):
    """``benchmarks.<b>``: its models, each with its invocations."""

    models: dict[str, list[Invocation]]


class ProcessedResults(_Nemo):
    """A ``processed_results.json``."""

    benchmarks: dict[str, Benchmark]
    export_timestamp: OptStr = None
