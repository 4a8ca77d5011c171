"""Typed models of lm-evaluation-harness output files (0.3 to 0.4.x), for :mod:`repaudit.boundary`.

Only ``results`` is required (a mapping of task to a mapping of metric key to value). Everything
else is optional and marked ``Lenient``: a value of the wrong type is dropped with a note and the
factor it carries is reported as *not recorded*. Unknown keys are kept (``extra="allow"``) because
every lm-eval version adds some. Types follow the files in ``shared/lmeval_public`` (see its
SOURCES.md): ``batch_size`` is an int or a string ("8", "auto", "auto:4"), ``model_args`` a comma
string or a dict, ``versions`` ints, floats or strings, 0.3's ``config.num_fewshot`` an int (or a
per-task list in some forks), samples' log-likelihoods strings.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from repaudit.boundary import Lenient

#: counts (n-shot, batch sizes, doc counts) beyond this are not plausible and are refused
MAX_COUNT = 10**9


class _Model(BaseModel):
    """A part of an lm-eval output file (``--output_path``, ``--log_samples``;
    https://github.com/EleutherAI/lm-evaluation-harness/blob/main/docs/interface.md): names and meanings are
    lm-eval's."""

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True, protected_namespaces=())


Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
OptStr = Annotated[str | None, Lenient]
OptCount = Annotated[Count | None, Lenient]
OptInt = Annotated[int | None, Lenient]
OptBool = Annotated[bool | None, Lenient]


class MetricSpec(_Model):
    """One entry of a task's ``metric_list``: the metric and its options (``exact_match``'s ones here)."""

    metric: str
    aggregation: Any = None
    higher_is_better: OptBool = None
    ignore_case: OptBool = None
    ignore_punctuation: OptBool = None
    ignore_numbers: OptBool = None
    regexes_to_ignore: Annotated[list[str] | None, Lenient] = None


class FilterStep(_Model):
    """One function of a filter pipeline (``regex``, ``take_first``, ``lowercase``, …) and its arguments."""

    function: str


class FilterSpec(_Model):
    """One entry of ``filter_list``: a named pipeline of filter functions."""

    name: str
    filter: list[Annotated[FilterStep, Lenient]] = []


class GenerationKwargs(_Model):
    """``generation_kwargs`` of a task (or ``--gen_kwargs``): stop sequences, token budget, sampling."""

    until: Annotated[list[str] | str | None, Lenient] = None
    max_gen_toks: OptCount = None
    do_sample: OptBool = None
    temperature: Annotated[float | None, Lenient] = None
    top_p: Annotated[float | None, Lenient] = None
    top_k: OptInt = None


class FewshotSpec(_Model):
    """``fewshot_config``: the sampler (``default`` = random, ``first_n``) and fixed samples, if any."""

    sampler: OptStr = None
    samples: Any = None
    doc_to_text: Any = None
    doc_to_target: Any = None
    doc_to_choice: Any = None


class TaskConfig(_Model):
    """``configs.<task>``: a task's complete configuration as lm-eval 0.4 records it."""

    task: OptStr = None
    dataset_path: OptStr = None
    dataset_name: OptStr = None
    dataset_kwargs: Annotated[dict[str, Any] | None, Lenient] = None
    training_split: OptStr = None
    validation_split: OptStr = None
    test_split: OptStr = None
    fewshot_split: OptStr = None
    process_docs: OptStr = None
    doc_to_text: Annotated[str | int | None, Lenient] = None
    doc_to_target: Annotated[str | int | list[Any] | None, Lenient] = None
    doc_to_choice: Annotated[str | list[Any] | dict[str, Any] | None, Lenient] = None
    description: OptStr = None
    target_delimiter: OptStr = None
    fewshot_delimiter: OptStr = None
    num_fewshot: OptCount = None
    fewshot_config: Annotated[FewshotSpec | None, Lenient] = None
    metric_list: Annotated[list[Annotated[MetricSpec, Lenient]] | None, Lenient] = None
    filter_list: Annotated[list[Annotated[FilterSpec, Lenient]] | None, Lenient] = None
    output_type: OptStr = None
    generation_kwargs: Annotated[GenerationKwargs | None, Lenient] = None
    repeats: OptCount = None
    metadata: Annotated[dict[str, Any] | None, Lenient] = None


class RunSettings(_Model):
    """The top-level ``config``: model, its arguments, batch size, device, limit, seeds, gen_kwargs."""

    model: OptStr = None
    model_args: Annotated[str | dict[str, Any] | None, Lenient] = None
    batch_size: Annotated[Count | str | None, Lenient] = None
    batch_sizes: Annotated[list[Count] | None, Lenient] = None
    device: OptStr = None
    limit: Annotated[Annotated[float, Field(ge=0, le=MAX_COUNT)] | None, Lenient] = None
    num_fewshot: Annotated[Count | list[Count] | dict[str, Count] | None, Lenient] = None
    random_seed: OptInt = None
    numpy_seed: OptInt = None
    torch_seed: OptInt = None
    fewshot_seed: OptInt = None
    gen_kwargs: Annotated[GenerationKwargs | str | None, Lenient] = None
    model_dtype: OptStr = None
    model_revision: OptStr = None
    model_sha: OptStr = None
    peft_sha: OptStr = None
    model_num_parameters: Annotated[Annotated[int, Field(ge=0, le=10**15)] | None, Lenient] = None
    description_dict: Any = None


class NSamples(_Model):
    """``n-samples.<task>``: docs in the split and docs evaluated (after ``--limit``)."""

    original: OptCount = None
    effective: OptCount = None


class LmevalResults(_Model):
    """A results file of lm-eval 0.3 to 0.4.x."""

    results: dict[str, dict[str, Any]]
    versions: Annotated[dict[str, Any] | None, Lenient] = None
    configs: Annotated[dict[str, Annotated[TaskConfig, Lenient]] | None, Lenient] = None
    config: Annotated[RunSettings | None, Lenient] = None
    n_shot: Annotated[dict[str, Annotated[Count, Lenient]] | None, Lenient] = Field(None, alias="n-shot")
    n_samples: Annotated[dict[str, Annotated[NSamples, Lenient]] | None, Lenient] = Field(None, alias="n-samples")
    git_hash: OptStr = None
    pretty_env_info: OptStr = None
    transformers_version: OptStr = None
    lm_eval_version: OptStr = None
    # ``[token, id]``: the id is a string ("128009") in most files, an int in lm-eval 0.4.3–0.4.4
    tokenizer_pad_token: Annotated[list[str | int | None] | None, Lenient] = None
    tokenizer_eos_token: Annotated[list[str | int | None] | None, Lenient] = None
    tokenizer_bos_token: Annotated[list[str | int | None] | None, Lenient] = None
    #: the token id generation stops at (the backend's ``eot_token_id``: the tokenizer's EOS id)
    eot_token_id: Annotated[int | None, Lenient] = None
    max_length: OptCount = None
    model_name: OptStr = None
    model_source: OptStr = None
    system_instruction: OptStr = None
    chat_template: OptStr = None
    chat_template_sha: OptStr = None
    fewshot_as_multiturn: OptBool = None
    task_hashes: Annotated[dict[str, str] | None, Lenient] = None
    #: task -> metric -> is higher better (lm-eval ≥ 0.4.3)
    higher_is_better: Annotated[dict[str, Annotated[dict[str, bool | None], Lenient]] | None, Lenient] = None
    #: group -> its subtasks (empty for a plain task)
    group_subtasks: Annotated[dict[str, Annotated[list[str], Lenient]] | None, Lenient] = None
    #: lm-eval 0.4.0–0.4.x: group aggregates (also rows of ``results``)
    groups: Annotated[dict[str, Any] | None, Lenient] = None
    _key_order: list[str] = PrivateAttr(default_factory=list)

    def key_order(self) -> list[str]:
        """The file's top-level keys in the order it wrote them (empty when the loader did not record it)."""
        return list(self._key_order)

    def with_key_order(self, keys: list[str]) -> LmevalResults:
        """Record the file's top-level key order (it tells whether the file was written with sorted keys)."""
        self._key_order = [str(k) for k in keys]
        return self


class SampleLine(_Model):
    """One line of a ``samples_<task>_<timestamp>.jsonl`` (one doc and filter).

    Per-doc metric values are extra keys named by ``metrics`` (or ``acc``/``acc_norm``/``exact_match``
    in older files); ``resps``/``filtered_resps`` hold log-likelihoods and is_greedy as strings.
    """

    doc_id: Count
    doc: Any = None
    target: Any = None
    arguments: Annotated[dict[str, Any] | list[Any] | None, Lenient] = None
    resps: Annotated[list[Any] | None, Lenient] = None
    filtered_resps: Annotated[list[Any] | None, Lenient] = None
    filter: OptStr = None
    metrics: Annotated[list[str] | None, Lenient] = None
    doc_hash: OptStr = None
    prompt_hash: OptStr = None
    target_hash: OptStr = None


class TableRow(_Model):
    """One row of ``table_results``: a task under one prompt, its metrics as extra keys."""

    task_name: Annotated[str | None, Lenient] = None
    prompt_name: Annotated[str | None, Lenient] = None


class TableResults(_Model):
    """A ``table_results`` file: the rows by ``<task>+<prompt>`` and NeoX's model arguments."""

    table_results: dict[str, TableRow] = Field(min_length=1)
    model_args: Annotated[dict[str, Any] | None, Lenient] = None
