"""Typed models of Every Eval Ever records of schema 0.1.x and 0.2.x — the versions of the records on public GitHub
(EEE moved its data to a datastore before 0.3.0) — for :mod:`repaudit.boundary`.

Only what repaudit reads is modelled; the fields mean what EEE's schema files of those versions say
(``eval.schema.json`` and ``instance_level_eval.schema.json`` at EEE's commits of 0.1.0, 0.2.0 and 0.2.1/0.2.2).
The layouts differ from 0.3.0 and between themselves:

* 0.1.x: ``source_data`` at the top (a list of URLs, or a dataset object), no ``eval_library``,
  ``model_info.inference_engine`` a string, ``generation_config`` free-form (EEE's HELM converter put HELM's
  ``temperature``/``max_tokens``/``stop_sequences`` there directly), per-sample rows inline in
  ``detailed_evaluation_results_per_samples`` (``sample_id``, ``input``, ``prompt``, ``ground_truth``,
  ``response``, ``choices``; no score);
* 0.2.x: ``source_data`` per result, ``eval_library`` (0.2.1 on), ``model_info.inference_engine`` an object,
  ``generation_config.generation_args``, ``metric_config.metric_id``/``metric_unit`` (0.2.1 on), and a JSONL
  sidecar named by ``detailed_evaluation_results`` whose rows carry ``evaluation.score`` (0.2.0: ``input.reference``
  and ``output.raw`` strings; 0.2.1 on: lists, and ``evaluation_result_id``).

Every optional part is :data:`~repaudit.boundary.Lenient`: a wrong type there is *not recorded* (with a note), never
a refusal; what the reader needs (the model id, each result's name and score) is required.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from repaudit.boundary import Lenient

#: the schema versions this module reads
LEGACY_VERSION = re.compile(r"0\.[12]\.\d+")


class _Legacy(BaseModel):
    """A part of an EEE 0.1.x/0.2.x file: numbers are JSON numbers (no string coerced), other keys ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, protected_namespaces=())


OptStr = Annotated[str | None, Lenient]
Bound = Annotated[float | str | None, Lenient]
Text = Annotated[str | list[str] | None, Lenient]


class Engine(_Legacy):
    """``model_info.inference_engine`` of 0.2.x (an object; 0.1.x writes a string)."""

    name: OptStr = None
    version: OptStr = None


class ModelInfo(_Legacy):
    """``model_info``: the model's id (required), platform, engine and free-form details."""

    id: str = Field(min_length=1)
    name: OptStr = None
    inference_platform: OptStr = None
    inference_engine: Annotated[Engine | str | None, Lenient] = None
    additional_details: Annotated[dict[str, Any] | None, Lenient] = None


class Library(_Legacy):
    """``eval_library`` (0.2.1 on): the tool that ran the evaluation."""

    name: str
    version: OptStr = None


class MetricConfig(_Legacy):
    """``evaluation_results[].metric_config``: the metric's name, unit, direction and range."""

    evaluation_description: OptStr = None
    metric_id: OptStr = None
    metric_name: OptStr = None
    metric_unit: OptStr = None
    lower_is_better: Annotated[bool | None, Lenient] = None
    min_score: Bound = None
    max_score: Bound = None


class StandardError(_Legacy):
    """``score_details.uncertainty.standard_error``."""

    value: float


class Interval(_Legacy):
    """A recorded confidence interval: its bounds (or a ± half-width around 0), its level and method where stated."""

    lower: float
    upper: float
    confidence_level: Annotated[float | None, Lenient] = None
    method: OptStr = None


class Uncertainty(_Legacy):
    """``score_details.uncertainty`` (0.2.x)."""

    standard_error: Annotated[StandardError | None, Lenient] = None
    confidence_interval: Annotated[Interval | None, Lenient] = None
    standard_deviation: Annotated[float | None, Lenient] = None
    num_samples: Annotated[int | None, Field(ge=0), Lenient] = None


class ScoreDetails(_Legacy):
    """``evaluation_results[].score_details``: the score, and what the converter added."""

    score: float
    details: Annotated[dict[str, Any] | None, Lenient] = None
    uncertainty: Annotated[Uncertainty | None, Lenient] = None
    #: early 0.2.0 records: the interval directly in ``score_details``
    confidence_interval: Annotated[Interval | None, Lenient] = None


class Result(_Legacy):
    """One entry of ``evaluation_results``: one metric of one evaluation."""

    evaluation_name: str
    evaluation_result_id: OptStr = None
    source_data: Annotated[dict[str, Any] | list[Any] | None, Lenient] = None
    metric_config: MetricConfig
    score_details: ScoreDetails
    generation_config: Annotated[dict[str, Any] | None, Lenient] = None


class Detailed(_Legacy):
    """``detailed_evaluation_results`` (0.2.x): where the sidecar is and what it must hash to."""

    file_path: str = Field(min_length=1)
    format: OptStr = None
    hash_algorithm: Annotated[str | None, Lenient] = None
    checksum: OptStr = None
    total_rows: Annotated[int | None, Field(ge=0), Lenient] = None


class Sample(_Legacy):
    """One inline row of ``detailed_evaluation_results_per_samples`` (0.1.x): the sample, its prompt, the reference
    and the model's response (no score)."""

    sample_id: str | int
    input: OptStr = None
    prompt: OptStr = None
    ground_truth: Text = None
    response: OptStr = None
    choices: Annotated[list[str | list[str]] | None, Lenient] = None


class Aggregate(_Legacy):
    """An aggregate record of schema 0.1.x or 0.2.x: one evaluation of one model."""

    schema_version: str
    evaluation_id: str
    model_info: ModelInfo
    evaluation_results: list[Result]
    source_metadata: Annotated[dict[str, Any] | None, Lenient] = None
    source_data: Annotated[dict[str, Any] | list[Any] | None, Lenient] = None
    eval_library: Annotated[Library | None, Lenient] = None
    detailed_evaluation_results: Annotated[Detailed | None, Lenient] = None
    detailed_evaluation_results_per_samples: Annotated[list[Sample] | str | None, Lenient] = None


class RowInput(_Legacy):
    """``input`` of a sidecar row: the prompt, the reference (0.2.0 a string, 0.2.1 on a list), the choices."""

    raw: OptStr = None
    reference: Text = None
    choices: Annotated[list[str] | None, Lenient] = None


class RowOutput(_Legacy):
    """``output`` of a sidecar row: the raw response (0.2.0 a string, 0.2.1 on a list)."""

    raw: Text = None


class Attribution(_Legacy):
    """One entry of ``answer_attribution``: the answer extracted from the response."""

    extracted_value: str
    is_terminal: bool = False


class Evaluation(_Legacy):
    """``evaluation`` of a sidecar row: the sample's score (0.2.0 allows a boolean)."""

    score: float | bool


class Row(_Legacy):
    """One sidecar row (instance_level_eval.schema.json of 0.2.x): one sample under one evaluation."""

    evaluation_id: str
    evaluation_name: str
    sample_id: str | int
    evaluation: Evaluation
    evaluation_result_id: OptStr = None
    input: Annotated[RowInput | None, Lenient] = None
    output: Annotated[RowOutput | None, Lenient] = None
    answer_attribution: Annotated[list[Attribution] | None, Lenient] = None
