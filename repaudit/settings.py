"""One settings record per stage: everything a user can set for a run, declared once.

Each record is a pydantic model whose fields carry their type (``Literal`` for closed sets), their range
(``Field(ge=…, le=…)``) and their meaning (the docstring under the field, through ``use_attribute_docstrings``).
The same objects travel unchanged: :class:`~repaudit.run.config.RunConfig` composes them (as requested; ``None``
means the task's or tokenizer's own), the run resolves them (every ``None`` replaced by what was used), the
fingerprint records the resolved ones (schema 3), and the backends receive them. The factor registry
(:mod:`repaudit.run.factors`) names a factor by its path here (``generation.temperature``); the command-line
options, the ranges ``RunConfig`` checks, ``repaudit factors``' table and the batch store's key all come from
these fields.

A field's ``json_schema_extra`` (built by :func:`engine`) may say:

* how an engine takes it: ``hf`` (a keyword of transformers' ``generate``), ``vllm`` (of vLLM's ``SamplingParams``),
  ``openai`` (a key of an OpenAI-compatible ``/v1/completions`` body), ``vllm_only=True`` (a serving setting only the
  vllm backend takes), ``served_only=True`` (a setting only the openai backend, a model behind an endpoint, takes);
* where each harness's files record it — the per-harness maps the readers execute (:func:`harness_map`):
  ``lmeval``, ``lighteval``, ``inspect``, ``eee``, ``helm``, each ``"source.key"`` or alternatives
  ``"source.key|source.key"`` tried in order, a *source* being one of the dicts that harness's reader builds from a
  file (lm-eval: ``gen_kwargs``, ``model_args``, ``config``, ``top``, ``task``; see each reader's ``SOURCES``);
* ``processor=True``: a logits processor of transformers' ``generate`` (the hf backend's own prefix_cache decode loop
  applies none, so a value off its default needs the exact strategy); ``load=True``: a setting the model is loaded
  with (:meth:`ServingSettings.load_options`);
* when it applies (:func:`repaudit.vocabulary.apply_conditions`): ``fewshot_only`` (not in a 0-shot run),
  ``sampling`` (not under greedy decoding), ``lettered`` (lettered prompts only), ``generative`` (tasks that
  generate), ``vllm_only`` (the vllm backend);
* ``null_unknown=True``: ``None`` is what a served model's run records where the endpoint does not tell, never a
  setting a harness's file can state (a null there is a setting left unset);
* ``later=True``: added after fingerprint schema 3 shipped (left out of a record's digest while at its default, so a
  record written before the field existed keeps its digest).

A new factor is one field here (with its harness keys) and one registry row (:mod:`repaudit.run.factors`): every
reader then reads it from the files that record it.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: seeds are 32-bit, as numpy requires (lm-eval passes them to random, numpy and torch alike)
MAX_SEED = 2**32 - 1
#: a batch or a token budget beyond these is a typo, not a setting
MAX_BATCH = 65_536
MAX_TOKENS = 1 << 20

Dtype = Literal["float32", "bfloat16", "float16"]
PaddingSide = Literal["right", "left"]
ScoringStrategy = Literal["full_sequence", "shared_prefix"]
GenerationStrategy = Literal["exact", "prefix_cache"]
PromptFormat = Literal["lmeval", "lettered", "cloze"]
LabelStyle = Literal["A.", "(A)", "A)", "A:", "none"]
AccNorm = Literal["char_length", "token_length", "byte_length", "pmi"]
AnswerMatch = Literal["exact", "quasi_exact", "prefix", "suffix"]
ScoreNormalisation = Literal["raw", "leaderboard_normalised"]
Backend = Literal["hf", "vllm", "openai"]
#: transformers' attention implementations (``attn_implementation``)
HfAttention = Literal["eager", "sdpa", "flash_attention_2"]
#: vLLM's attention backends (``VLLM_ATTENTION_BACKEND`` / ``attention_backend``)
VllmAttention = Literal["TORCH_SDPA", "FLASH_ATTN", "FLASHINFER", "XFORMERS", "TRITON_ATTN", "FLEX_ATTENTION",
                        "CPU_ATTN"]
AttentionBackend = Literal[HfAttention, VllmAttention]
KvCacheDtype = Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "float32"]
Quantization = Literal["awq", "gptq", "fp8", "bitsandbytes", "gguf", "compressed-tensors", "marlin", "awq_marlin",
                       "gptq_marlin"]
Seed = int


#: the harnesses whose files the readers map through the fields' declarations (:func:`harness_map`)
HARNESSES = ("lmeval", "lighteval", "inspect", "eee", "helm", "nemo")


def engine(**names: Any) -> dict[str, Any]:
    """``json_schema_extra`` of a field (see the module docstring): its name in each engine (``hf=``, ``vllm=``),
    where each harness records it (``lmeval=``, ``lighteval=``, ``inspect=``, ``eee=``, ``helm=``, ``nemo=``), its
    conditions
    (``fewshot_only=``, ``sampling=``, ``lettered=``, ``generative=``) and ``later=``."""
    return dict(names)


def harness_map(harness: str) -> dict[str, list[tuple[str, str]]]:
    """Settings path → the ``(source, key)`` places ``harness``'s files record it, in the order a reader tries them
    (from the fields' declarations; see the module docstring).

    Raises:
        ValueError: ``harness`` is not one of :data:`HARNESSES`, or a declaration is not ``source.key[|…]``.
    """
    if harness not in HARNESSES:
        raise ValueError(f"unknown harness '{harness}': one of {', '.join(HARNESSES)}")
    out: dict[str, list[tuple[str, str]]] = {}
    for stage, cls in STAGES.items():
        for name, f in cls.model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            spec = extra.get(harness)
            if not spec:
                continue
            places = []
            for alt in str(spec).split("|"):
                source, dot, key = alt.partition(".")
                if not (dot and source and key):
                    raise ValueError(f"{stage}.{name}: '{alt}' is not source.key")
                places.append((source, key))
            out[f"{stage}.{name}"] = places
    return out


class Settings(BaseModel):
    """A stage's settings: unknown keys are errors, every field documented, immutable (a changed setting is a new
    record, validated again: ``model_copy(update=…)`` through :meth:`replaced`) and hashable."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True, protected_namespaces=())

    def replaced(self, **changes: Any):
        """A copy with ``changes``, validated like a new record."""
        return type(self).model_validate({**self.model_dump(), **changes})

    def changed(self) -> dict[str, Any]:
        """The fields whose value differs from the field's default, in declaration order."""
        fields = type(self).model_fields
        return {k: getattr(self, k) for k, f in fields.items() if getattr(self, k) != f.get_default()}

    def engine_kwargs(self, engine_name: str, greedy_off: Literal["default", "none"] = "default") -> dict[str, Any]:
        """``{engine keyword: value}`` of the fields that name ``engine_name`` in their ``json_schema_extra`` (a
        field at its default included: the engine then gets the value the run records). A record that decodes
        greedily (``do_sample`` false) sends its ``sampling=True`` fields at their default (``greedy_off="default"``:
        vLLM's neutral values) or as None (``"none"``: transformers then ignores them); a sequence of strings goes as
        a list without empty strings, None when nothing is left (stop sequences)."""
        greedy = getattr(self, "do_sample", True) is False
        out: dict[str, Any] = {}
        for k, f in type(self).model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            name = extra.get(engine_name)
            if not name or not isinstance(name, str):  # an engine's keyword is declared as a string
                continue
            value = getattr(self, k)
            if greedy and extra.get("sampling"):
                value = f.get_default() if greedy_off == "default" else None
            if isinstance(value, tuple):
                value = [x for x in value if x] or None
            out[name] = value
        return out


class ServingSettings(Settings):
    """How the model is served: the backend, its device and numerics, batching, and vLLM's engine options."""

    def load_options(self) -> dict[str, Any]:
        """The settings a model is loaded with (their fields' ``load=True`` mark: vLLM's engine options, the
        attention kernel, batch invariance) that differ from their defaults: a change reloads the backend; the
        rest are set per run (:meth:`repaudit.backends.base.Backend.configure`)."""
        return {k: v for k, v in self.changed().items()
                if isinstance(extra := type(self).model_fields[k].json_schema_extra, dict) and extra.get("load")}

    backend: Backend = "hf"
    """Inference backend: hf (transformers), vllm (vLLM's offline engine) or openai (a model served behind an
    OpenAI-compatible endpoint: vLLM, SGLang, llama.cpp servers, APIs)."""
    device: str | None = Field("cpu", min_length=1, max_length=64, json_schema_extra=engine(
        lmeval="config.device|model_args.device", lighteval="model_config.device", inspect="model_args.device",
        null_unknown=True))
    """torch device the model runs on (where it runs, not what it computes); None: not told (a served model)."""
    dtype: Dtype | None = Field("float32", json_schema_extra=engine(
        lmeval="config.model_dtype|model_args.dtype|model_args.torch_dtype",
        lighteval="model_config.dtype|config_general.model_dtype", inspect="model_args.dtype|model_args.torch_dtype",
        eee="model_details.dtype|model_details.precision", null_unknown=True))
    """Weights and activations dtype; None: not told (a served model: no endpoint says what its weights run in)."""
    batch_size: typing.Annotated[int, Field(ge=1, le=MAX_BATCH)] | Literal["auto"] = Field(8, json_schema_extra=engine(
        lmeval="config.batch_size", lighteval="model_config.batch_size"))
    """Rows per forward pass (vllm: prompts per engine call), or auto: length-sorted batches up to a token budget
    the backend sets for its device (the fingerprint records the budget and the batch sizes used)."""
    padding_side: PaddingSide = "right"
    """Side a batch is padded on: right (lm-eval) or left."""
    add_bos_token: bool | None = Field(None, json_schema_extra=engine(lmeval="model_args.add_bos_token"))
    """Every request starts with BOS (True), never (False), or as the tokenizer does (None)."""
    scoring_strategy: ScoringStrategy = "full_sequence"
    """full_sequence (lm-eval's numerical path: every continuation scored with its context) or shared_prefix
    (each context once)."""
    tensor_parallel_size: int = Field(1, ge=1, le=4096, json_schema_extra=engine(
        vllm_only=True, load=True, lmeval="model_args.tensor_parallel_size",
        lighteval="model_config.tensor_parallel_size"))
    """vLLM: GPUs one model is split across."""
    pipeline_parallel_size: int = Field(1, ge=1, le=4096, json_schema_extra=engine(
        vllm_only=True, load=True, lmeval="model_args.pipeline_parallel_size",
        lighteval="model_config.pipeline_parallel_size"))
    """vLLM: pipeline stages across GPUs."""
    attention_backend: AttentionBackend | None = Field(None, json_schema_extra=engine(
        load=True, lmeval="model_args.attn_implementation|model_args.attention_backend",
        lighteval="model_config.attn_implementation|model_config.attention_backend"))
    """Attention kernel: a vLLM backend name, or transformers' attn_implementation; None = the default."""
    enable_prefix_caching: bool | None = Field(None, json_schema_extra=engine(
        vllm_only=True, load=True, lmeval="model_args.enable_prefix_caching",
        lighteval="model_config.enable_prefix_caching"))
    """vLLM: reuse the KV cache of shared prefixes; None = the engine's default."""
    kv_cache_dtype: KvCacheDtype = Field("auto", json_schema_extra=engine(
        vllm_only=True, load=True, lmeval="model_args.kv_cache_dtype", lighteval="model_config.kv_cache_dtype"))
    """vLLM: dtype the KV cache is stored in."""
    batch_invariant: bool = Field(False, json_schema_extra=engine(load=True))
    """Batch-invariant kernels: results independent of batch composition (vLLM: VLLM_BATCH_INVARIANT; hf:
    batch_invariant_ops' set_batch_invariant_mode, on CUDA and XPU devices)."""
    quantization: Quantization | None = Field(None, json_schema_extra=engine(vllm_only=True, load=True))
    """vLLM: weight quantisation method the engine applies; None = none."""
    max_num_seqs: int | None = Field(None, ge=1, le=MAX_BATCH, json_schema_extra=engine(
        vllm_only=True, load=True, lmeval="model_args.max_num_seqs", lighteval="model_config.max_num_seqs"))
    """vLLM: sequences scheduled in one engine step (its batch size); None = the engine's default."""
    max_concurrency: int = Field(8, ge=1, le=1024, json_schema_extra=engine(
        served_only=True, lmeval="model_args.num_concurrent", later=True))
    """openai: requests in flight at once (a server batches concurrent requests together, which can change numbers:
    repaudit determinism's concurrency axis measures it)."""


class PromptSettings(Settings):
    """How a doc becomes a prompt: the format, its labels and separators, the description, the chat template."""

    prompt_format: PromptFormat = "lmeval"
    """lmeval (lm-eval's templates), lettered (choices with letters) or cloze."""
    label_style: LabelStyle = Field("A.", json_schema_extra=engine(lettered=True))
    """Lettered prompts: the choice labels."""
    choice_separator: str = Field("\n", max_length=1000, json_schema_extra=engine(lettered=True))
    """Lettered prompts: the text between question and choices."""
    description: str | None = Field(None, max_length=100_000, json_schema_extra=engine(
        lmeval="task.description", helm="adapter_spec.instructions"))
    """Text before the examples; None = the task's own, "" = none."""
    chat_template: bool = Field(False, json_schema_extra=engine(
        lmeval="model_args.use_chat_template|model_args.apply_chat_template"))
    """Wrap prompts in the model's chat template."""
    fewshot_as_multiturn: bool = Field(False, json_schema_extra=engine(fewshot_only=True,
                                                                       lmeval="top.fewshot_as_multiturn"))
    """With the chat template, each few-shot example as a user/assistant turn pair (lm-eval's flag)."""
    system_prompt: str | None = Field(None, max_length=1_000_000, json_schema_extra=engine(
        lmeval="top.system_instruction", lighteval="model_config.system_prompt",
        inspect="generate_config.system_message", nemo="interceptors.system_message"))
    """System message (with or without a chat template); None = none."""


class FewshotSettings(Settings):
    """Which examples precede each doc, and in what order."""

    num_fewshot: int | None = Field(None, ge=0, le=10_000, json_schema_extra=engine(
        eee="generation_details.num_fewshot", helm="adapter_spec.max_train_instances"))
    """Few-shot examples per prompt (n-shot); None = the task's."""
    fewshot_split: str | None = Field(None, min_length=1, max_length=200, json_schema_extra=engine(
        fewshot_only=True, lmeval="task.fewshot_split", lighteval="task.few_shots_split"))
    """Split the examples come from; None = the task's pool."""
    fewshot_order_seed: int | None = Field(None, ge=0, le=MAX_SEED, json_schema_extra=engine(fewshot_only=True))
    """Seed of a per-doc permutation of the selected examples; None = the sampler's order."""


class GenerationSettings(Settings):
    """generate_until: stop sequences, the token budget, sampling, and the backend's generation strategy."""

    until: tuple[str, ...] | None = Field(None, json_schema_extra=engine(
        vllm="stop", openai="stop", lmeval="gen_kwargs.until",
        lighteval="generation_parameters.stop_tokens|task.stop_sequence",
        inspect="generate_config.stop_seqs", eee="generation_details.until|generation_args.stop_sequences",
        helm="adapter_spec.stop_sequences"))
    """Stop sequences; None = the task's."""
    stop_at_eos: bool = True
    """Add the tokenizer's EOS to the stop sequences (lm-eval does)."""
    max_gen_toks: int | None = Field(None, ge=1, le=MAX_TOKENS, json_schema_extra=engine(
        hf="max_new_tokens", vllm="max_tokens", openai="max_tokens",
        lmeval="gen_kwargs.max_gen_toks|gen_kwargs.max_new_tokens|gen_kwargs.max_tokens",
        lighteval="generation_parameters.max_new_tokens|task.generation_size", inspect="generate_config.max_tokens",
        eee="generation_args.max_tokens", helm="adapter_spec.max_tokens",
        nemo="params.max_new_tokens|command.max_tokens"))
    """Token budget of a generation (tokens); None = the task's."""
    do_sample: bool = Field(False, json_schema_extra=engine(
        hf="do_sample", lmeval="gen_kwargs.do_sample", inspect="model_args.do_sample",
        eee="generation_details.do_sample"))
    """Sample instead of greedy decoding (with temperature 0 decoding stays greedy)."""
    temperature: float = Field(0.0, ge=0, le=100, json_schema_extra=engine(
        sampling=True, hf="temperature", vllm="temperature", openai="temperature", lmeval="gen_kwargs.temperature",
        lighteval="generation_parameters.temperature",
        inspect="generate_config.temperature", eee="generation_args.temperature", helm="adapter_spec.temperature",
        nemo="params.temperature|command.temperature"))
    """Sampling temperature (0 = greedy)."""
    top_p: float = Field(1.0, gt=0, le=1, json_schema_extra=engine(
        sampling=True, hf="top_p", vllm="top_p", openai="top_p", lmeval="gen_kwargs.top_p",
        lighteval="generation_parameters.top_p",
        inspect="generate_config.top_p", eee="generation_args.top_p", nemo="params.top_p|command.top_p"))
    """Nucleus sampling mass."""
    top_k: int = Field(0, ge=0, le=10**7, json_schema_extra=engine(
        sampling=True, hf="top_k", vllm="top_k", openai="top_k", lmeval="gen_kwargs.top_k",
        lighteval="generation_parameters.top_k",
        inspect="generate_config.top_k", eee="generation_args.top_k"))
    """Top-k sampling (0 = off)."""
    repetition_penalty: float = Field(1.0, gt=0, le=100, json_schema_extra=engine(
        hf="repetition_penalty", vllm="repetition_penalty", openai="repetition_penalty", processor=True,
        lmeval="gen_kwargs.repetition_penalty", lighteval="generation_parameters.repetition_penalty",
        eee="generation_details.repetition_penalty",
        later=True))
    """Penalty on the logits of tokens already in the context or generated (1 = none; CTRL, Keskar et al. 2019),
    greedy decoding included."""
    sampling_seed: int | None = Field(None, ge=0, le=MAX_SEED, json_schema_extra=engine(
        sampling=True, vllm="seed", openai="seed", lmeval="gen_kwargs.seed", lighteval="generation_parameters.seed",
        inspect="generate_config.seed"))
    """Seed of sampled generations; None = the torch seed."""
    generation_strategy: GenerationStrategy = "exact"
    """hf backend: exact (lm-eval's model.generate on padded batches) or prefix_cache (the shared prefix once,
    rows replaced as they finish; greedy)."""


class ScoringSettings(Settings):
    """How outputs become per-doc metrics (scoring only: every stored batch is reused)."""

    acc_norm: AccNorm = "char_length"
    """What acc_norm divides by: char_length (lm-eval), token_length, byte_length, or pmi."""
    answer_match: AnswerMatch = Field("exact", json_schema_extra=engine(generative=True))
    """generate_until: exact (lm-eval), quasi_exact (HELM), prefix or suffix (lighteval)."""
    ignore_case: bool | None = Field(None, json_schema_extra=engine(generative=True))
    """lm-eval's exact_match option; None = the task's own."""
    ignore_punctuation: bool | None = Field(None, json_schema_extra=engine(generative=True))
    """lm-eval's exact_match option; None = the task's own."""
    regexes_to_ignore: tuple[str, ...] | None = Field(None, json_schema_extra=engine(generative=True))
    """lm-eval's exact_match option: patterns removed before matching; None = the task's own."""
    score_normalisation: ScoreNormalisation = "raw"
    """raw, or leaderboard_normalised (extra aggregate rows; per-doc values stay raw)."""


class DataSettings(Settings):
    """Which docs are evaluated."""

    split: str | None = Field(None, min_length=1, max_length=200, json_schema_extra=engine(
        lmeval="task.test_split|task.validation_split", eee="source_data.hf_split"))
    """Evaluation split; None = the task's."""
    limit: int | None = Field(None, ge=1, le=10**9, json_schema_extra=engine(
        lmeval="config.limit", lighteval="config_general.max_samples", inspect="eval_config.limit",
        helm="adapter_spec.max_eval_instances", nemo="params.limit_samples|command.first_n"))
    """Evaluate only the first N docs (docs); None = all."""


class SeedSettings(Settings):
    """Seeds set before the run, in lm-eval's ``--seed`` order."""

    seed: int = Field(0, ge=0, le=MAX_SEED, json_schema_extra=engine(lmeval="config.random_seed"))
    """Python random seed."""
    numpy_seed: int = Field(1234, ge=0, le=MAX_SEED, json_schema_extra=engine(lmeval="config.numpy_seed"))
    """numpy seed."""
    torch_seed: int = Field(1234, ge=0, le=MAX_SEED, json_schema_extra=engine(lmeval="config.torch_seed"))
    """torch seed; also the sampling seed unless generation.sampling_seed is set."""
    fewshot_seed: int = Field(1234, ge=0, le=MAX_SEED, json_schema_extra=engine(
        fewshot_only=True, lmeval="config.fewshot_seed"))
    """Seed of the few-shot sampler (lm-eval's fourth --seed value)."""


#: stage name -> its record, in the order a run's data flows through them
STAGES: dict[str, type[Settings]] = {"data": DataSettings, "seeds": SeedSettings, "prompt": PromptSettings,
                                     "fewshot": FewshotSettings, "serving": ServingSettings,
                                     "generation": GenerationSettings, "scoring": ScoringSettings}


def stage_of(name: str) -> str | None:
    """The stage whose record has a field called ``name`` (field names are unique across stages), or ``None``."""
    return next((stage for stage, cls in STAGES.items() if name in cls.model_fields), None)


def route(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with every stage field (``temperature``) moved into its stage's dict (``generation``); a stage
    given as a record or dict is merged with the loose fields of that stage (the loose ones win)."""
    out: dict[str, Any] = {}
    staged: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        stage = stage_of(key)
        if stage is not None and key not in STAGES:
            staged.setdefault(stage, {})[key] = value
        else:
            out[key] = value
    for stage, loose in staged.items():
        given = out.get(stage)
        base = given.model_dump() if isinstance(given, BaseModel) else dict(given or {})
        out[stage] = {**base, **loose}
    return out


def field_info(path: str):
    """The pydantic ``FieldInfo`` of ``stage.field``.

    Raises:
        KeyError: no such stage or field.
    """
    stage, _, name = path.partition(".")
    return STAGES[stage].model_fields[name]


def get_path(obj: Any, path: str) -> Any:
    """The value at ``stage.field`` of an object holding stage records (a RunConfig, a fingerprint's settings)."""
    stage, _, name = path.partition(".")
    record = getattr(obj, stage)
    return None if record is None else getattr(record, name)


def choices(path: str) -> tuple | None:
    """The allowed values of a settings field whose type is a ``Literal`` (with or without ``None``), else None."""
    ann = field_info(path).annotation
    members = typing.get_args(ann) if typing.get_origin(ann) in (typing.Union, types.UnionType) else (ann,)
    lits = tuple(x for a in members if typing.get_origin(a) is Literal for x in typing.get_args(a))
    return lits or None


def added_later(path: str) -> bool:
    """Whether a field was added after fingerprint schema 3 shipped (its ``later`` mark)."""
    extra = field_info(path).json_schema_extra
    return bool(extra.get("later")) if isinstance(extra, dict) else False


def named_in(engine_name: str, cls: type[Settings] | None = None) -> dict[str, Any]:
    """Field → its value under ``engine_name`` (a name in ``hf``, ``vllm``, ``lmeval``; a mark such as
    ``vllm_only=True``), for the fields of ``cls`` that declare one (default: the generation settings)."""
    cls = cls or GenerationSettings
    out: dict[str, Any] = {}
    for k, f in cls.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        if extra.get(engine_name):
            out[k] = extra[engine_name]
    return out
