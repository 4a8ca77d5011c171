"""Typed models of Hugging Face lighteval output files, for :mod:`repaudit.boundary`.

A results file (``results/<model>/results_<timestamp>.json``) holds ``config_general`` (run settings
and, from 0.8 on, ``model_config``), ``results`` (task key → metric → value, plus an ``all``
aggregate), ``versions``, ``config_tasks`` (each task's ``LightevalTaskConfig`` as a dict) and
``summary_tasks``/``summary_general`` (hashes and truncation counts). A details file
(``details/<model>/<timestamp>/details_<task key>_<timestamp>.parquet``) holds one row per doc with
``doc`` (the formatted Doc: query, choices, gold_index, id, few-shot samples), ``metric`` (per-doc
metric values) and ``model_response`` (log-probabilities per choice, or generated text).

Only ``config_general`` and ``results`` are required. Every other field is ``Lenient``: a value of the
wrong type is dropped with a note and its factor is *not recorded*. Unknown keys are kept: every
lighteval version renames some (``metric`` in ≤0.7, ``metrics`` from 0.8; ``model_dtype`` in
``config_general`` before ``model_config`` existed).
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
StrList = Annotated[list[str] | None, Lenient]


class _Model(BaseModel):
    """A part of a lighteval results or details file (https://huggingface.co/docs/lighteval/saving-and-reading-results);
    names and meanings are lighteval's."""

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True, protected_namespaces=())


class GenerationParameters(_Model):
    """``model_config.generation_parameters``: what generation used (``None`` = the backend's default)."""

    max_new_tokens: OptCount = None
    seed: OptInt = None
    stop_tokens: StrList = None
    temperature: OptNum = None
    top_k: OptInt = None
    top_p: OptNum = None


class ModelConfig(_Model):
    """``config_general.model_config`` (lighteval ≥ 0.8): the model and how it was loaded and run."""

    model_name: OptStr = None
    generation_parameters: Annotated[GenerationParameters | None, Lenient] = None
    system_prompt: OptStr = None
    revision: OptStr = None
    batch_size: OptCount = None
    max_length: OptCount = None
    dtype: OptStr = None
    device: OptStr = None
    trust_remote_code: OptBool = None
    add_special_tokens: OptBool = None
    #: ``None`` = the tokenizer's chat template when it has one (lighteval's default); False = plain text
    override_chat_template: OptBool = None
    use_chat_template: OptBool = None
    model_loading_kwargs: Annotated[dict[str, Any] | None, Lenient] = None
    multichoice_continuations_start_space: OptBool = None
    pairwise_tokenization: OptBool = None


class ConfigGeneral(_Model):
    """``config_general``: run-level settings."""

    lighteval_sha: OptStr = None
    num_fewshot_seeds: OptCount = None
    max_samples: OptCount = None
    model_name: OptStr = None
    model_sha: OptStr = None
    model_dtype: OptStr = None
    model_config_: Annotated[ModelConfig | None, Lenient] = Field(None, alias="model_config")


class MetricEntry(_Model):
    """One metric of a task config (``metrics`` or ≤0.7's ``metric``)."""

    metric_name: Annotated[str | list[str] | None, Lenient] = None
    category: OptStr = None
    sample_level_fn: OptStr = None
    higher_is_better: Annotated[bool | dict[str, Any] | None, Lenient] = None


class TaskConfig(_Model):
    """One ``config_tasks`` entry: a ``LightevalTaskConfig`` as lighteval dumps it."""

    name: OptStr = None
    prompt_function: OptStr = None
    hf_repo: OptStr = None
    hf_subset: OptStr = None
    hf_revision: OptStr = None
    metrics: Annotated[list[Annotated[MetricEntry | str, Lenient]] | None, Lenient] = None
    metric: Annotated[list[Annotated[MetricEntry | str, Lenient]] | None, Lenient] = None
    hf_avail_splits: StrList = None
    evaluation_splits: StrList = None
    few_shots_split: OptStr = None
    few_shots_select: OptStr = None
    generation_size: OptInt = None
    stop_sequence: StrList = None
    num_fewshots: OptCount = None
    version: Annotated[int | str | None, Lenient] = None
    original_num_docs: OptInt = None
    effective_num_docs: OptInt = None
    must_remove_duplicate_docs: OptBool = None

    def metric_entries(self) -> list[MetricEntry]:
        """The task's metrics whichever key the version wrote them under; bare names become entries."""
        out = []
        for m in self.metrics or self.metric or []:
            if isinstance(m, str):
                out.append(MetricEntry(metric_name=m))
            elif m is not None:
                out.append(m)
        return out


class LightevalResults(_Model):
    """A lighteval results file; ``results`` maps a task key (``arc:easy|25``, ``leaderboard|arc:challenge|25``
    or ``all``) to metric → value."""

    config_general: ConfigGeneral
    results: dict[str, dict[str, Any]]
    versions: Annotated[dict[str, Any] | None, Lenient] = None
    config_tasks: Annotated[dict[str, Annotated[TaskConfig | None, Lenient]] | None, Lenient] = None
    summary_tasks: Annotated[dict[str, Any] | None, Lenient] = None


class FewshotDoc(_Model):
    """A few-shot example inside a details row: only what identifies it and its rendered answer."""

    id: OptStr = None
    query: OptStr = None
    choices: StrList = None
    gold_index: Annotated[int | list[int] | None, Lenient] = None
    instruction: OptStr = None


class DetailDoc(_Model):
    """``doc`` of a details row: the formatted Doc lighteval scored."""

    query: str
    choices: StrList = None
    gold_index: Annotated[int | list[int] | None, Lenient] = None
    instruction: OptStr = None
    id: OptStr = None
    fewshot_samples: Annotated[list[FewshotDoc] | None, Lenient] = None
    generation_size: OptInt = None
    stop_sequences: StrList = None


class ModelResponse(_Model):
    """``model_response`` of a details row."""

    logprobs: Annotated[list[float] | None, Lenient] = None
    text: StrList = None
    text_post_processed: StrList = None
    argmax_logits_eq_gold: Annotated[list[bool] | None, Lenient] = None
    truncated_tokens_count: OptInt = None
    padded_tokens_count: OptInt = None
    input_tokens: Annotated[list[int] | None, Lenient] = None
    output_tokens: Annotated[list[list[int]] | None, Lenient] = None


class DetailRow(_Model):
    """One row (one doc) of a lighteval details parquet file."""

    doc: DetailDoc
    metric: Annotated[dict[str, Any] | None, Lenient] = None
    model_response: Annotated[ModelResponse | None, Lenient] = None
