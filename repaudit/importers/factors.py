"""A repaudit fingerprint as the vocabulary's record (:mod:`repaudit.vocabulary`): every settings field as the run
used it, and the facts that identify what ran — each with its JSON path in the run file.

The fingerprint records every setting resolved, so nothing here is a default or a guess; the few values that are
not a field of the file are derived (the sampling seed of a sampled run that set none is the torch seed) and say
how.
"""

from __future__ import annotations

from typing import Any

from repaudit.backends.weights_format import quantisation_line
from repaudit.run.fingerprint import Fingerprint
from repaudit.settings import STAGES, get_path
from repaudit.vocabulary import Recorded, apply_conditions, derived, missing, not_applicable, recorded

_FP = "fingerprint."


def record_from_fingerprint(fp: Fingerprint, repaudit_version: str | None = None) -> Recorded:
    """The record of a repaudit run (see the module docstring); ``repaudit_version``: the run file's
    ``repaudit_version``."""
    rec = Recorded()
    _settings(rec, fp)
    _identity(rec, fp)
    _engine(rec, fp)
    _prompt_facts(rec, fp)
    _machine(rec, fp, repaudit_version)
    if fp.settings.serving.backend == "openai":
        _served(rec, fp)
    return apply_conditions(rec).sorted()


def _settings(rec: Recorded, fp: Fingerprint) -> None:
    """Every settings field; a log-likelihood run's generation settings do not apply; BOS as the ids had it."""
    st = fp.settings
    for stage, cls in STAGES.items():
        part = getattr(st, stage)
        for name in cls.model_fields:
            path = f"{stage}.{name}"
            if part is None:
                rec[path] = not_applicable("a log-likelihood task: nothing is generated")
                continue
            value = getattr(part, name)
            rec.put(path, list(value) if isinstance(value, tuple) else value, f"{_FP}settings.{path}")
    if isinstance(fp.backend.bos_first, bool):  # the resolved fact: did the ids sent start with BOS
        rec.put("serving.add_bos_token", fp.backend.bos_first, f"{_FP}backend.bos_first")
    g = st.generation
    if g is not None and g.do_sample and g.sampling_seed is None:
        rec["generation.sampling_seed"] = derived(st.seeds.torch_seed, "a sampled run without a sampling seed "
                                                                        "samples with the torch seed")
    vllm = st.serving.backend == "vllm"
    engine = fp.backend.engine or {}
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "enable_prefix_caching", "kv_cache_dtype",
                 "batch_invariant", "max_num_seqs", "quantization"):
        if vllm and name in engine:  # the value the engine ran with, which may be its own default
            rec.put(f"serving.{name}", engine[name], f"{_FP}backend.engine.{name}")
    if not vllm or "quantization" not in engine:
        rec["serving.quantization"] = derived(engine.get("quantization") or "none", "repaudit's backend quantises "
                                              "nothing at serving (a quantised GGUF is de-quantised on load: the "
                                              "weights' own quantisation is model.weights_quantisation)" if not vllm
                                              else "the vLLM engine reported no quantisation")
    attn = engine.get("attention_backend", engine.get("attn_implementation"))
    if attn is not None:
        rec.put("serving.attention_backend", attn, f"{_FP}backend.engine")


def _served(rec: Recorded, fp: Fingerprint) -> None:
    """A served model's run: what its endpoint told (the server facts), and what no endpoint tells marked so
    (the dtype and device behind it, the in-process settings that do not apply)."""
    server = fp.server
    told = "the endpoint does not tell it"
    for path in ("serving.dtype", "serving.device"):
        if get_path(fp.settings, path) is None:
            rec[path] = missing(told)
    for path in ("serving.padding_side", "serving.scoring_strategy", "serving.batch_invariant",
                 "serving.attention_backend", "serving.quantization", "generation.generation_strategy"):
        if path in rec:
            rec[path] = not_applicable("the server computes its own way (a served model)", rec[path])
    if server is None:
        return
    rec.put("model.base_url", server.base_url, f"{_FP}server.base_url")
    for name in ("kind", "version", "model_root", "max_model_len", "system_fingerprints", "tokenizer"):
        value = getattr(server, name)
        rec[f"server.{name}"] = (recorded(value, f"{_FP}server.{name}") if value not in (None, []) else
                                 missing(told))
    facts = {k: v for k, v in server.facts.items() if k != "usage"}
    if facts:
        rec.put("server.facts", facts, f"{_FP}server.facts")
    for path in ("model.weights_sha256", "tokenizer.sha256", "model.num_parameters", "tokenizer.bos_token",
                 "tokenizer.eos_token", "tokenizer.pad_token"):
        if rec.get(path) is None or rec[path].value is None:
            rec[path] = missing(f"{told}: a served model's files are the server's")
    for path, v in list(rec.items()):  # the machine that evaluated, not the one the model ran on
        if path.startswith("hardware.") and v.source == "recorded":
            rec[path] = recorded(v.value, v.key or "", "the evaluating client's machine; the model ran behind the "
                                 "endpoint")


def _identity(rec: Recorded, fp: Fingerprint) -> None:
    """The model (its weights' format as stored and as run among it), tokenizer and data."""
    m, d = fp.model, fp.data
    rec.put("model.name", m.name, f"{_FP}model.name")
    rec.put("model.revision", m.revision, f"{_FP}model.revision")
    if m.source == "hub":
        rec.put("model.sha", m.revision, f"{_FP}model.revision")
    rec.put("model.weights_sha256", m.weights_sha256, f"{_FP}model.weights_sha256")
    if m.weights_format is not None:
        rec.put("model.weights_format", m.weights_format.summary, f"{_FP}model.weights_format.summary")
        wf = m.weights_format
        line = quantisation_line(wf.stored, wf.dtype)
        if wf.quantisation is not None:
            rec.put("model.weights_quantisation", line, f"{_FP}model.weights_format.quantisation")
        else:  # written before the quantisation was recorded: the stored tensor types say it
            rec["model.weights_quantisation"] = derived(line, f"{_FP}model.weights_format.stored.tensor_types")
    elif m.gguf_sha256 is not None:  # a file written before the format was recorded: the GGUF says what it was
        rec["model.weights_format"] = derived(
            f"GGUF de-quantised to {fp.settings.serving.dtype}", f"{_FP}model.gguf_sha256 is set: the weights were "
            "de-quantised from that GGUF (its file type is not recorded in files of this age)")
    rec.put("model.num_parameters", m.num_parameters, f"{_FP}model.num_parameters")
    rec.put("model.trust_remote_code", m.trust_remote_code, f"{_FP}model.trust_remote_code")
    rec["model.args"] = derived({}, "repaudit passes no other loading arguments")
    rec.put("tokenizer.sha256", m.tokenizer_sha256, f"{_FP}model.tokenizer_sha256")
    for k in ("bos", "eos", "pad"):
        if k in m.special_tokens:
            rec.put(f"tokenizer.{k}_token", m.special_tokens[k], f"{_FP}model.special_tokens.{k}")
    rec.put("data.task", d.task, f"{_FP}data.task")
    rec.put("data.task_version", d.task_version, f"{_FP}data.task_version")
    rec.put("data.output_type", d.output_type, f"{_FP}data.output_type")
    # the content hash, not the file hash: the same docs from a data dir, the package or the hub are the same data
    rec.put("data.content_sha256", d.content_sha256, f"{_FP}data.content_sha256")
    rec.put("data.n_docs", d.n_docs, f"{_FP}data.n_docs")


def _engine(rec: Recorded, fp: Fingerprint) -> None:
    """What the backend did: batch sizes, context window, the engine's facts; the metrics and filters."""
    b = fp.backend
    rec.put("engine.batch_sizes_used", b.batch_sizes_used, f"{_FP}backend.batch_sizes_used")
    rec.put("engine.max_length", b.max_length, f"{_FP}backend.max_length")
    facts = {k: v for k, v in (b.engine or {}).items() if k != "requested"}
    if facts:
        rec.put("engine.facts", facts, f"{_FP}backend.engine")
    rec.put("metric.metrics", fp.metric.metrics, f"{_FP}metric.metrics")
    rec.put("metric.filters", fp.metric.filters, f"{_FP}metric.filters")
    if fp.metric.options.get("exact_match"):
        rec.put("metric.exact_match_options", fp.metric.options["exact_match"], f"{_FP}metric.options.exact_match")
    if fp.settings.scoring.score_normalisation != "raw":
        rec.put("metric.random_baseline", fp.metric.random_baseline, f"{_FP}metric.random_baseline")
    if fp.generation is not None:
        rec.put("generation.eos_token", fp.generation.eos_token, f"{_FP}generation.eos_token")


def _prompt_facts(rec: Recorded, fp: Fingerprint) -> None:
    """Template, delimiters, the recorded task configuration's templates, the description used, few-shot facts."""
    p = fp.prompt
    rec.put("prompt.template_sha256", p.template_sha256, f"{_FP}prompt.template_sha256")
    rec.put("prompt.target_delimiter", p.target_delimiter, f"{_FP}prompt.target_delimiter")
    rec.put("prompt.fewshot_delimiter", p.fewshot_delimiter, f"{_FP}prompt.fewshot_delimiter")
    rec.put("prompt.chat_template_sha256", p.chat_template_sha256, f"{_FP}prompt.chat_template_sha256")
    if fp.task_config is not None:  # built from an lm-eval configuration: its templates, as lm-eval files show them
        for k in ("doc_to_text", "doc_to_choice", "doc_to_target"):
            if fp.task_config.get(k) is not None:
                rec.put(f"prompt.{k}", fp.task_config[k], f"{_FP}task_config.{k}")
    if p.description_sha256 is not None:  # the text used; one that varies by doc (MMLU's subject) by its hash
        if p.description is not None:
            rec.put("prompt.description", p.description, f"{_FP}prompt.description")
        else:
            rec["prompt.description"] = derived(f"per doc (sha256 {p.description_sha256[:12]})",
                                                f"{_FP}prompt.description_sha256: the description varies by doc")
    rec.put("fewshot.sampler", fp.fewshot.sampler, f"{_FP}fewshot.sampler")
    rec.put("fewshot.ids_sha256", fp.fewshot.ids_sha256, f"{_FP}fewshot.ids_sha256")


def _machine(rec: Recorded, fp: Fingerprint, repaudit_version: str | None) -> None:
    """Hardware, library versions, repaudit's own version and commit."""
    hw = fp.hardware
    for k, v in (("cpu_model", hw.cpu_model), ("cpu_flags", hw.cpu_flags), ("cpu_count", hw.cpu_count),
                 ("gpus", [g.name for g in hw.gpus]), ("gpu_driver", hw.gpu_driver),
                 ("cuda_version", hw.cuda_version)):
        rec.put(f"hardware.{k}", v, f"{_FP}hardware.{'gpus[].name' if k == 'gpus' else k}")
    for lib, ver in fp.software.libraries.items():
        rec.put(f"software.{lib}", ver, f"{_FP}software.libraries.{lib}")
    rec.put("software.python", fp.software.python, f"{_FP}software.python")
    if repaudit_version:
        rec.put("software.repaudit", repaudit_version, "repaudit_version")
    if fp.git.commit:
        commit: Any = fp.git.commit + ("+dirty" if fp.git.dirty else "")
        rec.put("software.repaudit_commit", commit, f"{_FP}git.commit")
