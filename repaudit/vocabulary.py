"""One vocabulary for every harness: a run's settings and facts by path, each value with its provenance.

Every reader of a run file — repaudit's own fingerprints and lm-eval, lighteval, inspect_ai, Every Eval Ever, HELM
and GPT-NeoX files — fills the same :class:`Recorded` record for each task: ``path -> Value``. A path is either a
settings field of :mod:`repaudit.settings` (``generation.temperature``: the stage and the field, exactly as
``repaudit run`` records it) or one of the facts declared in :data:`FACTS` (``model.name``, ``hardware.gpus``,
``software.<library>``). ``compare``, ``gate``, the appendix and the exports read that record by path; nothing
downstream knows a file format.

Every :class:`Value` says where it came from (:data:`Source`):

* ``recorded`` — the file holds it; ``key`` is its JSON path in the file (``configs.gsm8k.generation_kwargs.until``);
* ``default`` — the file does not hold it, the harness applied its own default: ``harness`` and the ``version`` the
  file records, ``key`` where in that harness's code the default lives. It is shown as ``default of lighteval
  0.13.0: 42`` only when the version is known; otherwise as not recorded (a default can change between versions);
* ``derived`` — computed from what the file holds (``key`` says how);
* ``not_recorded`` — the file does not say;
* ``not_applicable`` — the setting does not apply to this run (few-shot settings of a 0-shot run, sampling settings
  under greedy decoding); ``note`` says why, ``value``/``key`` keep what the file held, if anything.

:func:`apply_conditions` turns settings that do not apply into ``not_applicable`` for every reader alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.settings import STAGES, field_info

Source = Literal["recorded", "default", "derived", "not_recorded", "not_applicable"]

#: the groups of paths, in report order, with their labels: the settings stages first as a run's data flows
#: through them, then the facts
GROUPS: dict[str, str] = {
    "model": "model", "data": "data", "prompt": "prompt", "fewshot": "few-shot", "generation": "generation",
    "scoring": "scoring", "metric": "metric", "serving": "serving", "engine": "engine", "seeds": "seeds",
    "tokenizer": "tokenizer", "server": "serving endpoint", "hardware": "hardware", "software": "software versions",
    "other": "other recorded settings"}

#: facts a run file may record beside its settings (path -> what it is); groups marked open in :data:`OPEN_GROUPS`
#: take any field name (a library's version, a setting of one harness only)
FACTS: dict[str, str] = {
    "model.name": "the model as the run names it (a hub id, a local path, an API model)",
    "model.revision": "the revision asked for (a hub commit, branch or tag)",
    "model.sha": "the commit of the weights' repository the harness resolved",
    "model.weights_sha256": "sha256 over the weight files loaded",
    "model.weights_format": "the weights as stored and as run (a GGUF's quantisation de-quantised to a dtype)",
    "model.weights_quantisation": "the weights' quantisation as stored (Q4_1, or none), whatever dtype they are run "
                                  "in: de-quantised weights carry its rounding",
    "model.num_parameters": "parameters of the loaded model",
    "model.step": "the training step of a checkpoint (a series of checkpoints)",
    "model.provider": "the API provider or inference provider the model was called through",
    "model.base_url": "the API endpoint the model was called at",
    "model.args": "every other model loading argument the run passed",
    "model.quantization_args": "the weight-quantisation arguments the run passed",
    "model.trust_remote_code": "whether the model repository's own code was allowed",
    "data.task": "the task's name",
    "data.task_version": "the task definition's version",
    "data.output_type": "what the task asks of the model: multiple_choice, loglikelihood, generate_until, …",
    "data.content_sha256": "sha256 of the evaluated docs' content",
    "data.task_hash": "the harness's own hash of the task's requests (lm-eval task_hashes)",
    "data.n_docs": "docs evaluated",
    "data.subset": "the dataset's subset (configuration)",
    "data.dataset": "the dataset the docs came from",
    "data.task_args": "arguments the task was built with",
    "data.shuffled": "whether the docs were shuffled",
    "data.sample_shuffle": "the seed of the docs' shuffle",
    "data.epochs": "how many times each doc was evaluated",
    "prompt.doc_to_text": "the template of a doc's question (lm-eval)",
    "prompt.doc_to_choice": "the template of a doc's choices (lm-eval)",
    "prompt.doc_to_target": "the template of a doc's answer (lm-eval)",
    "prompt.prompt_function": "the function that builds a doc's prompt (lighteval)",
    "prompt.solver_plan": "the solvers that build the prompt and call the model (inspect_ai)",
    "prompt.prompt_version": "the prompt template's version (lm-eval 0.3 forks)",
    "prompt.template_sha256": "sha256 of the prompt template's source",
    "prompt.target_delimiter": "text between a question and its answer",
    "prompt.fewshot_delimiter": "text between examples",
    "prompt.chat_template_sha256": "sha256 of the chat template applied",
    "prompt.instructions": "instructions given to the model (HELM)",
    "fewshot.sampler": "how the few-shot examples were chosen (random, first_n, balanced, fixed)",
    "fewshot.ids_sha256": "sha256 of every doc's few-shot example ids, in order",
    "generation.eos_token": "the tokenizer's end-of-sequence string (a stop sequence where stop_at_eos)",
    "generation.num_choices": "completions generated per doc",
    "metric.metrics": "the metrics computed per doc",
    "metric.filters": "the answer filters applied to generations",
    "metric.sample_level_fn": "the per-doc function behind a metric (lighteval)",
    "metric.scorers": "the scorers applied (inspect_ai)",
    "metric.epochs_reducer": "how several epochs' scores of a doc reduce to one (inspect_ai)",
    "metric.exact_match_options": "lm-eval's exact_match options as the task's metric_list states them",
    "metric.random_baseline": "the chance score used to normalise",
    "engine.batch_sizes_used": "batch size -> batches of that size actually run",
    "engine.max_length": "the context window requests were cut to (tokens)",
    "engine.facts": "the engine's own facts that can change numbers (attention kernel, scheduler limits, …)",
    "engine.determinism": "determinism switches that were on (batch invariance, deterministic algorithms, …)",
    "tokenizer.sha256": "sha256 of the serialised tokenizer",
    "tokenizer.bos_token": "the tokenizer's beginning-of-sequence string",
    "tokenizer.eos_token": "the tokenizer's end-of-sequence string",
    "tokenizer.pad_token": "the tokenizer's padding string",
    "tokenizer.bos_token_id": "the id of the tokenizer's beginning-of-sequence token",
    "tokenizer.eos_token_id": "the id of the tokenizer's end-of-sequence token",
    "tokenizer.pad_token_id": "the id of the tokenizer's padding token",
    "tokenizer.eot_token_id": "the token id the backend stops generating at (lm-eval's eot_token_id)",
    "server.kind": "the server behind a served model's endpoint (vllm, sglang, llama.cpp)",
    "server.version": "the server's version, as it reports it",
    "server.model_root": "what the served model id serves (vLLM's root: the weights' path or hub id)",
    "server.max_model_len": "the server's context window (tokens)",
    "server.system_fingerprints": "the system_fingerprint values the endpoint's responses carried",
    "server.tokenizer": "whose tokenisation located the scored tokens (the server's /tokenize, a local tokenizer)",
    "server.facts": "other facts the server reports about its serving (SGLang's arguments, llama.cpp's build)",
    "hardware.cpu_model": "the CPU",
    "hardware.cpu_flags": "the CPU's numeric instruction sets (avx512_bf16, amx, …)",
    "hardware.cpu_count": "CPU cores",
    "hardware.gpus": "the GPUs",
    "hardware.gpu_driver": "the GPU driver's version",
    "hardware.cuda_version": "the CUDA version torch was built with",
}
#: groups whose field names are open: a library's version (``software.vllm``), a harness's own setting
OPEN_GROUPS = ("software", "other", "hardware")


def setting_paths() -> list[str]:
    """Every settings field's path (``stage.field``), in declaration order."""
    return [f"{stage}.{name}" for stage, cls in STAGES.items() for name in cls.model_fields]


def is_setting(path: str) -> bool:
    """Whether ``path`` is a settings field (:mod:`repaudit.settings`), not a fact."""
    stage, _, name = path.partition(".")
    return stage in STAGES and name in STAGES[stage].model_fields


def doc(path: str) -> str:
    """What a path is: the settings field's docstring, the fact's description, or a generic line for an open group."""
    if is_setting(path):
        return " ".join((field_info(path).description or "").split())
    if path in FACTS:
        return FACTS[path]
    group, _, name = path.partition(".")
    return {"software": f"the version of {name}", "other": f"a setting only this harness records ({name})",
            "hardware": f"a hardware fact ({name})"}.get(group, name)


def known_path(path: str) -> bool:
    """Whether ``path`` belongs to the vocabulary: a settings field, a declared fact, or a field of an open group."""
    group, _, name = path.partition(".")
    return is_setting(path) or path in FACTS or (group in OPEN_GROUPS and bool(name))


_ORDER: dict[str, int] = {}


def order(path: str) -> tuple[int, int, str]:
    """Sort key of a path: its group's place in :data:`GROUPS`, then its declaration order, then its name."""
    if not _ORDER:
        for i, p in enumerate([*setting_paths(), *FACTS]):
            _ORDER.setdefault(p, i)
    group = path.partition(".")[0]
    groups = list(GROUPS)
    return (groups.index(group) if group in groups else len(groups), _ORDER.get(path, 10**6), path)


class Value(BaseModel):
    """One setting or fact of one run, with where it came from (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
    value: Any = None
    """The value as the run used it (recorded, default or derived); for not_applicable what the file held, if
    anything; None where not recorded."""
    source: Source = "not_recorded"
    """recorded, default, derived, not_recorded or not_applicable."""
    key: str | None = None
    """recorded: the value's JSON path in the file; default: where in the harness's code the default lives; derived:
    how it was computed; not_applicable: the file's key of a value that does not apply, if any."""
    harness: str | None = None
    """default: the harness whose default applied (``lm-eval``, ``lighteval``)."""
    version: str | None = None
    """default: the harness version the file records; None: not recorded (the default is then not shown as a
    value: it may differ between versions)."""
    note: str = ""
    """Why a setting does not apply (``0-shot``), what a harness does with a setting left unset, or how a value was
    read (``as written``: it did not parse as the setting's type)."""

    @property
    def known(self) -> bool:
        """Whether the value is the one the run used: recorded, derived, or a harness default of a known version."""
        return self.source in ("recorded", "derived") or (self.source == "default" and self.version is not None)


def recorded(value: Any, key: str, note: str = "") -> Value:
    """A value the file holds at ``key``."""
    return Value(value=value, source="recorded", key=key, note=note)


def default(value: Any, harness: str, version: str | None, where: str, note: str = "") -> Value:
    """A harness's default (``where``: the place in its code), applied because the file does not set it."""
    return Value(value=value, source="default", harness=harness, version=version, key=where, note=note)


def derived(value: Any, how: str) -> Value:
    """A value computed from what the file holds (``how``)."""
    return Value(value=value, source="derived", key=how)


NOT_RECORDED = Value()


def missing(note: str = "") -> Value:
    """A value the file does not record (``note``: why, where it helps)."""
    return Value(note=note) if note else NOT_RECORDED


def not_applicable(why: str, held: Value | None = None) -> Value:
    """A setting that does not apply (``why``), keeping what the file held (``held``), if anything."""
    if held is not None and held.source == "not_applicable":
        return held  # the first reason stands
    keep = held if held is not None and held.source in ("recorded", "derived") else None
    return Value(value=keep.value if keep else None, source="not_applicable", key=keep.key if keep else None,
                 note=why)


class Recorded(dict):
    """One task's settings and facts, ``path -> Value`` (a dict; see the module docstring)."""

    def put(self, path: str, value: Any, key: str, note: str = "") -> None:
        """Record ``value`` read at the file's ``key``."""
        self[path] = recorded(value, key, note)

    def value(self, path: str, fallback: Any = None) -> Any:
        """The value at ``path`` where it is known (:attr:`Value.known`), else ``fallback``."""
        v = self.get(path)
        return v.value if v is not None and v.known else fallback

    def need(self, path: str, where: Any) -> Any:
        """The value the run used at ``path``, for a replay that needs it.

        Raises:
            RepauditError: the file (``where``) does not record it, or it is a default of a harness version the
                file does not record (one line naming the setting).
        """
        from repaudit.errors import RepauditError

        v = self.get(path)
        if v is None or not v.known:
            why = ("the harness took its default, which depends on its version (not recorded)"
                   if v is not None and v.source == "default" else "not applicable" if v is not None and
                   v.source == "not_applicable" else "not recorded")
            raise RepauditError(f"'{where}' does not record {path} ({why}): it cannot be replayed")
        return v.value

    def known(self, path: str) -> bool:
        """Whether ``path`` holds a known value."""
        v = self.get(path)
        return v is not None and v.known

    def source(self, path: str) -> Source:
        """Where the value at ``path`` came from (``not_recorded`` where the record has no entry)."""
        v = self.get(path)
        return v.source if v is not None else "not_recorded"

    def fill(self, paths: Iterable[str]) -> Recorded:
        """Every path of ``paths`` the record lacks added as not recorded; returns the record."""
        for p in paths:
            self.setdefault(p, NOT_RECORDED)
        return self

    def sorted(self) -> Recorded:
        """The same record with its paths in report order (:func:`order`)."""
        return Recorded(sorted(self.items(), key=lambda kv: order(kv[0])))

    def renamed_task(self, task: str) -> Recorded:
        """The record under a paired task name: ``data.task`` derived from the rename (said in a note elsewhere)."""
        out = Recorded(self)
        if "data.task" in out:
            out["data.task"] = derived(task, f"paired as {task}")
        return out


def condition_paths(mark: str) -> list[str]:
    """Settings fields whose declaration carries ``mark`` (``fewshot_only``, ``sampling``, ``lettered``) in its
    ``json_schema_extra``: the settings a condition of :func:`apply_conditions` switches off."""
    out = []
    for path in setting_paths():
        extra = field_info(path).json_schema_extra
        if isinstance(extra, dict) and extra.get(mark):
            out.append(path)
    return out


#: facts that apply only with few-shot examples
_FEWSHOT_FACTS = ("fewshot.sampler", "fewshot.ids_sha256", "prompt.fewshot_delimiter")
#: log-likelihood tasks generate nothing; HELM and others name generation tasks their own way
_GENERATIVE = ("generate_until", "greedy_until", "generation")


#: backends that run the model in the evaluating process (repaudit's, lm-eval's and lighteval's names): a served
#: model's settings (``served_only``) do not apply to them
IN_PROCESS = frozenset({"hf", "vllm", "hf-auto", "huggingface", "hf-causal", "hf-causal-experimental", "accelerate",
                        "transformers", "sglang", "nanotron", "gguf", "ggml", "mamba_ssm", "neuronx"})


def apply_conditions(rec: Recorded) -> Recorded:
    """Settings that do not apply to this run, marked not applicable in place (and returned):

    * few-shot settings (split, sampler, seeds, order, ids, delimiter, multiturn) where the run is 0-shot;
    * every generation setting (and the matching rules of generations) where the task generates nothing
      (``data.output_type`` known and not a generation);
    * vLLM's engine settings where the backend is known and is not vLLM; a served model's settings where the backend
      runs in-process;
    * sampling settings (temperature, top-p, top-k, the sampling seed, …) under greedy decoding (``do_sample``
      false, as lm-eval, transformers and vLLM read it);
    * the lettered-prompt options where the prompt format is not lettered; acc_norm's normalisation where no
      acc_norm is computed.
    """
    shots = rec.value("fewshot.num_fewshot")
    if isinstance(shots, int) and not isinstance(shots, bool) and shots == 0:
        for p in [*condition_paths("fewshot_only"), *_FEWSHOT_FACTS]:
            if p in rec:
                rec[p] = not_applicable("0-shot", rec[p])
    out_type = rec.value("data.output_type")
    if isinstance(out_type, str) and out_type not in _GENERATIVE:
        for p in [q for q in rec if q.startswith("generation.")] + condition_paths("generative"):
            if p in rec:
                rec[p] = not_applicable(f"{out_type}: nothing is generated", rec[p])
    elif rec.value("generation.do_sample") is False:
        for p in condition_paths("sampling"):
            if p in rec and rec[p].source != "not_applicable":
                rec[p] = not_applicable("greedy decoding (do_sample false)", rec[p])
    backend = rec.value("serving.backend")
    if isinstance(backend, str) and backend in IN_PROCESS:
        for p in condition_paths("served_only"):
            if p in rec:
                rec[p] = not_applicable(f"a served model's setting; this run's backend ({backend}) runs in-process",
                                        rec[p])
    if isinstance(backend, str) and "vllm" not in backend.lower():
        for p in condition_paths("vllm_only"):
            if p in rec and p != "serving.quantization":  # any backend's weight quantisation is shown there
                rec[p] = not_applicable(f"a vLLM engine setting; this run's backend is {backend}", rec[p])
    fmt = rec.value("prompt.prompt_format")
    if isinstance(fmt, str) and fmt != "lettered":
        for p in condition_paths("lettered"):
            if p in rec:
                rec[p] = not_applicable(f"{fmt} prompts have no choice labels", rec[p])
    metrics = rec.value("metric.metrics")
    if isinstance(metrics, list) and "acc_norm" not in metrics and "scoring.acc_norm" in rec:
        rec["scoring.acc_norm"] = not_applicable("no acc_norm computed", rec["scoring.acc_norm"])
    if rec.value("prompt.chat_template") is False and "prompt.fewshot_as_multiturn" in rec:
        rec["prompt.fewshot_as_multiturn"] = not_applicable("no chat template", rec["prompt.fewshot_as_multiturn"])
    return rec


def shown(v: Value | None) -> str:
    """A value as a report shows it, provenance included (plain text; each format escapes it):

    recorded: the value; derived: ``value (derived)``; a default of a known version: ``default of lm-eval 0.4.13:
    256``; a default whose harness version is not recorded: ``not recorded (lm-eval's default; version not
    recorded)``; a setting left unset: ``not set (…)``; not recorded: ``not recorded``; not applicable: ``n/a
    (0-shot)``.
    """
    if v is None or v.source == "not_recorded":
        return "not recorded" + (f" ({v.note})" if v is not None and v.note else "")
    if v.source == "not_applicable":
        return f"n/a ({v.note})" if v.note else "n/a"
    if v.source == "default":
        if v.value is None and v.note:  # a setting left unset: what the harness then does
            return f"not set ({v.harness}: {v.note})"
        if v.version is None:
            return f"not recorded ({v.harness}'s default; {v.harness} version not recorded)"
        return f"default of {v.harness} {v.version}: {text(v.value)}"
    out = text(v.value)
    return f"{out} (derived)" if v.source == "derived" else out


def text(value: Any) -> str:
    """A value as one line of text: strings as they are, numbers plainly, anything else as compact JSON."""
    import json

    if value is None:
        return "none"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
