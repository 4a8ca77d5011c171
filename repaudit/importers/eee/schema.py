"""Every Eval Ever records as repaudit reads them: the vendored JSON Schemas, typed models of the fields read, and
the ``repaudit.`` keys an export writes into EEE's extension points (which take string values only).

Every EEE 0.3.0 file passes the same checks in this order: the boundary's limits (:func:`repaudit.boundary.read_json`,
:func:`repaudit.boundary.parse_json` per sidecar line), the ``schema_version`` (only 0.3.0 is read here: another is
refused in one line before any other field is looked at; 0.1.x and 0.2.x records are read by
:mod:`.legacy` with their own models, :mod:`.legacy_schema`), the vendored JSON Schema of that version (``schemas/``,
draft-07, through ``jsonschema``: the contract — EEE's own ``validate_file()`` is looser and lets non-string
``metadata`` values through), then the typed models below (:func:`repaudit.boundary.validate`). A failure is one
:class:`~repaudit.boundary.InputError` naming the file, the sidecar line and the JSON path.

The models of EEE's own schema carry only what repaudit reads; their fields mean what EEE's schema files say
(``schemas/eval.schema.json``, ``schemas/instance_level_eval.schema.json``). The payload models at the end are
repaudit's own: what an export embeds so that the reader rebuilds the run it came from (``docs/eee.md``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictStr

from repaudit.boundary import InputError, json_path
from repaudit.importers.comparable import DocOutcome
from repaudit.run.diagnostics import Diagnostics

#: the one EEE schema version read and written
SCHEMA_VERSION = "0.3.0"
#: the vendored schema files (``schemas/SOURCES.md``: version, sha256, licence)
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMA_FILES = {"aggregate": "eval.schema.json", "instance": "instance_level_eval.schema.json"}

# --- the repaudit. keys of an export (docs/eee.md has the table) ------------------------------------------------
#: eval_library.additional_details: the payload's format version ("1"); its presence marks a repaudit export
K_EXPORT = "repaudit.export"
EXPORT_VERSION = "2"
#: "run" (a repaudit run file: the record embedded) or "comparable" (another harness's run as compare reads it)
K_KIND = "repaudit.kind"
#: sha256 of the whole run as exported: the uuid and the grouping of a folder's records derive from it
K_RUN = "repaudit.run_sha256"
#: the run's harness and version as compare names it ("lm-eval 0.4.13")
K_SOURCE = "repaudit.source"
#: the task this record holds (one record per task)
K_TASK = "repaudit.task"
#: kind "run": the run file's JSON without its docs, and its fingerprint digest
K_RECORD = "repaudit.record"
K_DIGEST = "repaudit.fingerprint_digest"
#: sha256 of the JSON list of the per-doc payloads (checked after they are read back from the sidecar)
K_DOCS = "repaudit.docs_sha256"
#: kind "run": which prompts the export shows (rebuilt from the fingerprint and the data where they are available on
#: the exporting machine): their count and the sha256 of the texts; the uuid derives from it too
K_PROMPTS = "repaudit.prompts"
#: kind "comparable": the task's outcome without its docs, and the run's notes
K_OUTCOME = "repaudit.outcome"
K_NOTES = "repaudit.notes"
#: one key per vocabulary path: ``repaudit.factor.<path>`` = the value with its provenance as JSON
#: (:class:`repaudit.vocabulary.Value`; payload version 2 — version 1 held bare values by factor group)
K_FACTOR = "repaudit.factor."
#: metric_config.additional_details: the metric's direction as repaudit knows it (higher, lower, unknown)
K_DIRECTION = "repaudit.direction"

#: sidecar row metadata: the per-doc payload (on the doc's first row), the per-choice values as JSON lists
M_DOC = "repaudit.doc"
M_LOGLIKELIHOODS = "repaudit.loglikelihoods"
M_IS_GREEDY = "repaudit.is_greedy"
M_FEWSHOT_IDS = "repaudit.fewshot_ids"
#: why ``input.raw`` is empty, or why a row has no answer attribution
M_PROMPT_NOTE = "repaudit.prompt"
M_PREDICTION_NOTE = "repaudit.prediction"
#: per-doc field -> its metadata key; hashes as plain strings (the names EEE's lm-eval converter uses), lists as JSON
MOVED = {"doc_hash": "doc_hash", "prompt_hash": "prompt_hash", "target_hash": "target_hash",
         "loglikelihoods": M_LOGLIKELIHOODS, "is_greedy": M_IS_GREEDY, "fewshot_ids": M_FEWSHOT_IDS}
PLAIN = {"doc_hash", "prompt_hash", "target_hash"}


def dumps(obj: Any) -> str:
    """The JSON text of a payload value: sorted keys, no whitespace, UTF-8 kept, non-finite floats as ``NaN`` /
    ``Infinity`` (it lands inside a JSON string, so the record stays strict JSON)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def result_id(metric: str) -> str:
    """EEE's ``evaluation_result_id`` of a metric key: ``acc`` → ``acc``, ``exact_match,strict-match`` →
    ``exact_match:strict-match`` (EEE's lm-eval converter's spelling)."""
    return metric.replace(",", ":", 1)


def metric_of(rid: str) -> str:
    """The metric key of an ``evaluation_result_id`` (the inverse of :func:`result_id`)."""
    return rid.replace(":", ",", 1)


def flatten_factors(rec: Any) -> dict[str, str]:
    """A task's record (:class:`~repaudit.vocabulary.Recorded`) → ``{"repaudit.factor.<path>": JSON of its value
    with its provenance}`` (defaults left out of each value's JSON)."""
    return {f"{K_FACTOR}{path}": dumps(value.model_dump(mode="json", exclude_defaults=True))
            for path, value in rec.items()}


def unflatten_factors(details: dict[str, str], path: Path, where: str) -> Any:
    """The record of :func:`flatten_factors` read back.

    Raises:
        InputError: a key that names no path of the vocabulary, or a value that is not a valued provenance.
    """
    from pydantic import ValidationError

    from repaudit.vocabulary import Recorded, Value, known_path

    out = Recorded()
    for key, text in details.items():
        if not key.startswith(K_FACTOR):
            continue
        at = f"{where}[{json.dumps(key)}]"
        name = key[len(K_FACTOR):]
        if not known_path(name):
            raise InputError(path, at, "names no setting or fact of repaudit's vocabulary")
        try:
            out[name] = Value.model_validate(loads(text, path, at))
        except ValidationError as exc:
            raise InputError(path, at, f"is not a value with its provenance ({exc.errors()[0]['msg']})") from None
    return out.sorted()


def loads(text: str, path: Path, at: str, where: str = "") -> Any:
    """A payload value parsed (the boundary's limits apply to it as to any JSON).

    Raises:
        InputError: not JSON, or over a limit (``at``: the JSON path of the string that holds it).
    """
    from repaudit.boundary import parse_json

    try:
        return parse_json(text, path, where=where)
    except InputError as exc:
        inner = f"{exc.path}: " if exc.path else ""
        raise InputError(path, at, f"holds no valid payload ({inner}{exc.problem})", where) from None


# --- validation against the vendored schemas ---------------------------------------------------------------------
@functools.cache
def _validator(kind: str) -> Any:
    import jsonschema

    schema = json.loads((SCHEMA_DIR / SCHEMA_FILES[kind]).read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def schema_error(obj: Any, kind: Literal["aggregate", "instance"]) -> tuple[str, str] | None:
    """The most relevant violation of EEE's JSON Schema ``kind`` by ``obj``, as ``(JSON path, one-line problem)``,
    or ``None`` when it validates."""
    from jsonschema.exceptions import best_match

    err = best_match(_validator(kind).iter_errors(obj))
    if err is None:
        return None
    message = " ".join(err.message.split())
    return json_path(tuple(err.absolute_path)), (message[:117] + "…" if len(message) > 120 else message)


def check(obj: Any, kind: Literal["aggregate", "instance"], path: Path, where: str = "") -> None:
    """The version first (another one refused in one line), then EEE's JSON Schema of that version.

    Raises:
        InputError: another ``schema_version``, or the first violation of the schema (its JSON path named).
    """
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if version != SCHEMA_VERSION:
        shown = json.dumps(version, ensure_ascii=False)[:40] if version is not None else "missing"
        read = (f"records of Every Eval Ever schemas 0.1.x, 0.2.x and {SCHEMA_VERSION}" if kind == "aggregate" else
                f"sidecar rows of Every Eval Ever schema {SCHEMA_VERSION} beside a {SCHEMA_VERSION} record")
        raise InputError(path, "$.schema_version", f"is {shown}: this repaudit reads {read} (convert the record "
                                                   "with EEE's tools of one of those versions)", where)
    bad = schema_error(obj, kind)
    if bad is not None:
        raise InputError(path, bad[0], f"{bad[1]} (EEE schema {SCHEMA_VERSION}, {SCHEMA_FILES[kind]})", where)


# --- typed models of EEE's schema (only the fields repaudit reads; see the schema files for their meaning) -----
Details = dict[str, StrictStr]


class _Eee(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=())


class EvalLibrary(_Eee):
    """``eval_library`` (eval.schema.json)."""

    name: str
    version: str
    additional_details: Details | None = None


class InferenceEngine(_Eee):
    """``model_info.inference_engine``."""

    name: str | None = None
    version: str | None = None


class ModelInfo(_Eee):
    """``model_info`` (``$defs.model_info``)."""

    name: str
    id: str
    developer: str | None = None
    inference_engine: InferenceEngine | None = None
    additional_details: Details


class SourceData(_Eee):
    """``evaluation_results[].source_data`` (any of its three variants)."""

    dataset_name: str
    source_type: str
    hf_repo: str | None = None
    hf_split: str | None = None
    samples_number: int | None = None


class MetricConfig(_Eee):
    """``evaluation_results[].metric_config``."""

    metric_id: str | None = None
    metric_name: str | None = None
    metric_unit: str | None = None
    min_score: float | Literal["Infinity", "-Infinity"] | None = None
    max_score: float | Literal["Infinity", "-Infinity"] | None = None
    lower_is_better: bool
    additional_details: Details | None = None


class StandardError(_Eee):
    """``score_details.uncertainty.standard_error``."""

    value: float


class ConfidenceInterval(_Eee):
    """``score_details.uncertainty.confidence_interval``: its bounds, level and method."""

    lower: float
    upper: float
    confidence_level: float | None = None
    method: str | None = None


class Uncertainty(_Eee):
    """``score_details.uncertainty``."""

    standard_error: StandardError | None = None
    confidence_interval: ConfidenceInterval | None = None
    standard_deviation: float | None = None
    num_samples: int | None = None


class ScoreDetails(_Eee):
    """``evaluation_results[].score_details``."""

    score: float
    uncertainty: Uncertainty | None = None


class GenerationArgs(_Eee):
    """``generation_config.generation_args``: EEE's named arguments, and any other a converter writes (EEE: "properties
    may vary by model type"), kept for the settings fields that declare an ``eee`` key."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None
    max_tokens: int | None = None


class GenerationConfig(_Eee):
    """``evaluation_results[].generation_config``."""

    generation_args: GenerationArgs | None = None
    additional_details: Details | None = None


class EvaluationResult(_Eee):
    """One entry of ``evaluation_results``."""

    evaluation_result_id: str | None = None
    evaluation_name: str
    source_data: SourceData
    metric_config: MetricConfig
    score_details: ScoreDetails
    generation_config: GenerationConfig | None = None


class DetailedResults(_Eee):
    """``detailed_evaluation_results``: where the sidecar is and what it must hash to."""

    format: str
    file_path: str
    hash_algorithm: Literal["sha256", "md5"] | None = None
    checksum: str | None = None
    total_rows: int | None = None


class Aggregate(_Eee):
    """An aggregate record (eval.schema.json), one evaluation of one model."""

    schema_version: str
    evaluation_id: str
    retrieved_timestamp: str
    evaluation_timestamp: str | None = None
    eval_library: EvalLibrary
    model_info: ModelInfo
    evaluation_results: list[EvaluationResult]
    detailed_evaluation_results: DetailedResults | None = None


class Input(_Eee):
    """``input`` of a sidecar row (instance_level_eval.schema.json)."""

    raw: str
    reference: list[str]
    choices: list[str] | None = None


class Output(_Eee):
    """``output`` of a sidecar row."""

    raw: list[str]


class Attribution(_Eee):
    """One entry of a row's ``answer_attribution``."""

    source: str
    extracted_value: str
    extraction_method: str
    is_terminal: bool


class Evaluation(_Eee):
    """``evaluation`` of a sidecar row."""

    score: float
    is_correct: bool


class Row(_Eee):
    """One sidecar row: one sample under one aggregate result."""

    schema_version: str
    evaluation_id: str
    model_id: str
    evaluation_name: str
    evaluation_result_id: str | None = None
    sample_id: str
    input: Input
    output: Output | None = None
    answer_attribution: list[Attribution]
    evaluation: Evaluation
    metadata: Details | None = None


# --- repaudit's payload (what an export embeds; docs/eee.md) -----------------------------------------------------
class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class OutcomePayload(_Payload):
    """A task of a run of another harness as ``compare`` read it, without its per-doc outcomes (those are the
    sidecar's rows): :class:`~repaudit.importers.comparable.TaskOutcome`'s fields."""

    task: str
    """The task's name."""
    reported: dict[str, tuple[float, float | None]]
    """Metric key → (reported value, standard error or None), in the file's own unit."""
    n_docs: int | None
    """Docs evaluated, if recorded."""
    n_original: int | None
    """Docs in the split before a limit, if recorded."""
    is_group: bool
    """Whether the task is an aggregate of other tasks."""
    higher_is_better: dict[str, bool]
    """The file's own direction per metric key."""
    source_name: str | None
    """The task's name in its file when compare paired it under another name."""
    metric_names: dict[str, str]
    """Metric key → the file's own name where a rename changed it."""
    diagnostics: Diagnostics | None
    """Silent-failure counts, if the reader computed them."""
    has_docs: bool
    """Whether the run has per-doc outcomes for the task (an empty set stays empty, ``False`` stays None)."""
    declared: dict[str, tuple[str | None, float | None, float | None]] = {}
    """Metric key → (unit, low, high) as the run's file declares them (absent in payloads written before it)."""


class DocPayload(_Payload):
    """One doc of a run of another harness as ``compare`` read it (the sidecar's ``repaudit.doc``, with the fields
    of :data:`MOVED` read from the row's own metadata)."""

    doc: DocOutcome
    """The doc's outcome: ids, hashes, per-doc metric values, prediction, log-likelihoods, texts."""
