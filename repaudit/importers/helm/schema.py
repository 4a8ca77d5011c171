"""Typed models of the files of a HELM run folder (``benchmark_output/runs/<suite>/<run name>/``), for
:mod:`repaudit.boundary`. Names and meanings are HELM's (``helm.benchmark.run_spec.RunSpec``,
``helm.benchmark.adaptation.adapter_spec.AdapterSpec``, ``helm.benchmark.metrics.statistic.Stat``,
``helm.benchmark.adaptation.scenario_state.ScenarioState``); only what repaudit reads is modelled.

* ``run_spec.json`` — the run's name, its scenario and its ``adapter_spec`` (every adaptation setting: HELM writes
  the whole dataclass, so a field it holds is recorded);
* ``stats.json`` — the run's aggregate statistics, one per metric name, split and perturbation;
* ``per_instance_stats.json`` — the same statistics per instance (and train trial, perturbation);
* ``scenario_state.json`` — every request with its instance (input, references, split, id), prompt and completions;
* ``scenario.json`` — the scenario's name and description.

The adapter-spec values a reader maps are kept as written (a ``dict``): :func:`repaudit.importers.declared.
read_declared` coerces each to its settings field's type, or keeps it as written with a note. Optional parts are
:data:`~repaudit.boundary.Lenient`: a wrong type there is *not recorded*, never a refusal.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import Lenient


class _Helm(BaseModel):
    """A part of a HELM run file: numbers are JSON numbers, other keys ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, protected_namespaces=())


OptStr = Annotated[str | None, Lenient]
Perturbation = Annotated[dict[str, Any] | None, Lenient]


class ObjectSpec(_Helm):
    """A ``class_name`` with its ``args`` (``scenario_spec``, ``metric_specs[]``)."""

    class_name: str
    args: Annotated[dict[str, Any] | None, Lenient] = None


class RunSpec(_Helm):
    """``run_spec.json``: the run's name (``bbq:subject=all,method=…,model=…``), scenario, adapter spec, metrics."""

    name: str = Field(min_length=1)
    adapter_spec: dict[str, Any]
    scenario_spec: Annotated[ObjectSpec | None, Lenient] = None
    metric_specs: Annotated[list[ObjectSpec] | None, Lenient] = None
    groups: Annotated[list[str] | None, Lenient] = None


class StatName(_Helm):
    """``Stat.name`` (a ``MetricName``): the metric, the split and sub-split, the perturbation if any."""

    name: str
    split: OptStr = None
    sub_split: OptStr = None
    perturbation: Perturbation = None


class Stat(_Helm):
    """One statistic: its name and its aggregate over what it counts (``mean`` is null where ``count`` is 0)."""

    name: StatName
    count: Annotated[int | float | None, Lenient] = None
    mean: Annotated[float | None, Lenient] = None
    stddev: Annotated[float | None, Lenient] = None


class InstanceStats(_Helm):
    """One entry of ``per_instance_stats.json``: an instance's statistics for one train trial (and perturbation)."""

    instance_id: str | int
    stats: list[Stat]
    train_trial_index: Annotated[int, Field(ge=0), Lenient] = 0
    perturbation: Perturbation = None


class Text(_Helm):
    """``input``/``output`` of an instance or reference: its text."""

    text: OptStr = None


class Reference(_Helm):
    """One reference of an instance: its text and tags (``correct``)."""

    output: Annotated[Text | None, Lenient] = None
    tags: Annotated[list[str] | None, Lenient] = None


class Instance(_Helm):
    """An instance of the scenario: its id, split, input and references."""

    id: Annotated[str | int | None, Lenient] = None
    split: OptStr = None
    input: Annotated[Text | None, Lenient] = None
    references: Annotated[list[Reference] | None, Lenient] = None
    perturbation: Perturbation = None


class Completion(_Helm):
    """One completion of a request's result."""

    text: OptStr = None


class RequestResult(_Helm):
    """A request's result: whether it succeeded, its completions."""

    success: Annotated[bool | None, Lenient] = None
    completions: Annotated[list[Completion] | None, Lenient] = None


class Request(_Helm):
    """The request sent: its prompt (the other fields are the adapter spec's, as sent)."""

    prompt: OptStr = None


class RequestState(_Helm):
    """One entry of ``scenario_state.request_states``: an instance, its prompt, its result."""

    instance: Instance
    train_trial_index: Annotated[int, Field(ge=0), Lenient] = 0
    reference_index: Annotated[int | None, Lenient] = None
    output_mapping: Annotated[dict[str, str] | None, Lenient] = None
    request: Annotated[Request | None, Lenient] = None
    result: Annotated[RequestResult | None, Lenient] = None


class ScenarioState(_Helm):
    """``scenario_state.json``: every request of the run."""

    request_states: list[RequestState]
    adapter_spec: Annotated[dict[str, Any] | None, Lenient] = None
