"""The factors that move a score, grouped as ``compare`` reports them, and their values per run.

A run's factors are ``{group: {field: value}}``. A field the run's file does not record holds
:data:`UNKNOWN`, which ``compare`` reports as *unknown* — never as equal to anything. Volatile
values (dates, paths, timings, git state) are not factors and are never extracted.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from repaudit.run.factors import serving_unset
from repaudit.run.fingerprint import Fingerprint

#: The value of a factor that the run's file does not record.
UNKNOWN = "<not recorded>"
#: The value of a setting the run's recorded command line did not pass (an lm-eval ``model_args`` without
#: ``dtype=``): the harness's default applied, which may depend on its version. Recorded, so it is compared.
NOT_SET = "<not set>"


class FactorGroup(str, Enum):
    """Factor groups, in report order."""

    seed = "seed"
    hardware = "hardware"
    backend = "backend"
    dtype = "dtype"
    quantisation = "quantisation"
    serving = "serving"
    batch_size = "batch_size"
    padding = "padding"
    bos = "bos"
    prompt_format = "prompt_format"
    fewshot = "fewshot"
    chat_template = "chat_template"
    stop = "stop"
    max_tokens = "max_tokens"
    sampling = "sampling"
    metric_variant = "metric_variant"
    model = "model"
    tokenizer = "tokenizer"
    data = "data"
    library_versions = "library_versions"
    other = "other"


Factors = dict[str, dict[str, Any]]

#: serving settings of the ``serving`` group and their value where a run does not set them (one GPU,
#: engine defaults); ``attention_backend`` is read from the engine facts, whichever backend ran
SERVING_UNSET: dict[str, Any] = {k: v for k, v in serving_unset(group="serving").items() if k != "attention_backend"}


def empty_factors() -> Factors:
    """Every group present and empty, so that a group one run lacks still shows up."""
    return {g.value: {} for g in FactorGroup}


#: factors whose compare field is not the setting as used, or not always shown: the engine's facts for serving
#: settings, the resolved BOS fact, options read from the resolved metric facts, settings that apply only to some
#: runs (lettered prompts, generations, sampling)
_BY_HAND = {"add_bos_token", "description", "ignore_case", "ignore_punctuation", "regexes_to_ignore",
            "label_style", "choice_separator", "sampling_seed", "generation_strategy", "acc_norm", "answer_match"}


def factors_from_fingerprint(fp: Fingerprint) -> Factors:
    """Group a repaudit fingerprint into factors: every setting through the factor registry's reader (the one the
    replay uses: :data:`repaudit.run.factors.FACTORS`), then the facts (hashes, machine, versions)."""
    from repaudit.run.factors import FACTORS

    st, g = fp.settings, fp.settings.generation
    f = empty_factors()
    for factor in FACTORS:
        if factor.path is None or factor.compare is None or factor.name in _BY_HAND or factor.serving:
            continue
        if factor.path.startswith("generation.") and g is None:
            continue  # a log-likelihood run generated nothing: its generation settings do not apply
        group, name = factor.compare
        f[group][name] = factor.fingerprint(fp)[0]
    hw = fp.hardware
    f["hardware"] = {"cpu_model": hw.cpu_model, "cpu_flags": hw.cpu_flags, "cpu_count": hw.cpu_count,
                     "gpus": [x.name for x in hw.gpus], "gpu_driver": hw.gpu_driver, "cuda_version": hw.cuda_version}
    if g is not None:  # how generate_until ran (a loglikelihood run generated nothing)
        f["backend"]["generation_strategy"] = g.generation_strategy
    engine = fp.backend.engine or {}
    if engine:
        f["backend"]["engine"] = engine
    # the weights as run: repaudit loads float weights (a GGUF is de-quantised on load); vLLM may quantise
    quant = engine.get("quantization")
    f["quantisation"] = {"method": str(quant) if quant else "none"}
    f["batch_size"]["batch_sizes_used"] = fp.backend.batch_sizes_used
    # the resolved fact (did the ids sent start with BOS), not the request; older files: not recorded
    f["bos"] = {"bos_first": fp.backend.bos_first if fp.backend.bos_first is not None else UNKNOWN}
    f["prompt_format"].update(_prompt_facts(fp))
    # 0-shot: there are no examples, whatever the number of docs (the hash of n empty lists would differ with --limit)
    zero = st.fewshot.num_fewshot == 0
    f["fewshot"].update(sampler=fp.fewshot.sampler, ids_sha256="none" if zero else fp.fewshot.ids_sha256)
    f["chat_template"]["chat_template_sha256"] = fp.prompt.chat_template_sha256
    f["stop"] = {"until": list(g.until or []) if g else None, "eos_token": fp.generation.eos_token if g else None}
    f["max_tokens"] = {"max_gen_toks": g.max_gen_toks if g else None, "max_length": fp.backend.max_length}
    if g is None:
        f["sampling"] = {"do_sample": None}
    elif g.do_sample:  # the seed decides sampled generations only
        f["sampling"]["seed"] = g.sampling_seed if g.sampling_seed is not None else st.seeds.torch_seed
    # serving settings as the engine ran them; transformers has only its attention implementation (the
    # vLLM-only ones do not apply); a vLLM run that did not record one ran its engine's default: unknown
    vllm = st.serving.backend == "vllm"
    f["serving"] = {k: engine.get(k, UNKNOWN if vllm else unset) for k, unset in SERVING_UNSET.items()}
    f["serving"]["attention_backend"] = engine.get("attention_backend", engine.get("attn_implementation"))
    f["metric_variant"] = _metric_variant(fp)
    f["model"] = {"name": fp.model.name, "revision": fp.model.revision,
                  "sha": fp.model.revision if fp.model.source == "hub" else UNKNOWN,
                  "weights_sha256": fp.model.weights_sha256, "num_parameters": fp.model.num_parameters,
                  "args": {},  # repaudit passes no extra loading arguments
                  "trust_remote_code": fp.model.trust_remote_code}
    f["tokenizer"] = {"tokenizer_sha256": fp.model.tokenizer_sha256, **fp.model.special_tokens}
    # the content hash, not the file hash: the same docs from a data dir, the package or the hub are the same data
    f["data"].update(task=fp.data.task, task_version=fp.data.task_version, content_sha256=fp.data.content_sha256,
                     n_docs=fp.data.n_docs)
    f["library_versions"] = dict(fp.software.libraries) | {"python": fp.software.python}
    return f


def _prompt_facts(fp: Fingerprint) -> dict[str, Any]:
    """The ``prompt_format`` fields recorded beside the settings: template, delimiters, task config, description."""
    st = fp.settings
    out: dict[str, Any] = {"template_sha256": fp.prompt.template_sha256, "target_delimiter": fp.prompt.target_delimiter,
                           "fewshot_delimiter": fp.prompt.fewshot_delimiter}
    if fp.task_config is not None:  # built from an lm-eval configuration: its templates, as lm-eval files show them
        out.update({k: fp.task_config.get(k, "" if k == "description" else None)
                    for k in ("doc_to_text", "doc_to_choice", "doc_to_target", "description")})
    if fp.prompt.description_sha256 is not None:  # the text used; one that varies by doc (MMLU subject) by hash
        out["description"] = (fp.prompt.description if fp.prompt.description is not None
                              else f"per doc (sha256 {fp.prompt.description_sha256[:12]})")
    if st.prompt.prompt_format == "lettered":  # lettered prompts only
        out.update(label_style=st.prompt.label_style, choice_separator=st.prompt.choice_separator)
    return out


def _metric_variant(fp: Fingerprint) -> dict[str, Any]:
    """The ``metric_variant`` group: the metrics and filters as recorded, and only the options that applied."""
    st, m = fp.settings, fp.metric
    out = {"metrics": m.metrics, "acc_norm": st.scoring.acc_norm if "acc_norm" in m.metrics else None,
           "filters": m.filters, "score": st.scoring.score_normalisation}
    if st.generation is not None:  # generate_until: matching rule and lm-eval's exact_match options
        out.update(answer_match=st.scoring.answer_match, exact_match_options=m.options.get("exact_match"))
    if st.scoring.score_normalisation != "raw":
        out["random_baseline"] = m.random_baseline
    return out


def recorded(factors: Factors, group: str, name: str, path: Any, none_too: bool = False) -> Any:
    """The value a run records for ``group.name``, for a replay that needs it.

    Raises:
        RepauditError: the file does not record it (:data:`UNKNOWN`; also ``None`` with ``none_too``), or its
            command line did not set it (:data:`NOT_SET`: the harness's default, which depends on its version).
    """
    from repaudit.errors import RepauditError

    v = factors.get(group, {}).get(name, UNKNOWN)
    if v == UNKNOWN or (none_too and v is None):
        raise RepauditError(f"'{path}' does not record {group}.{name}: it cannot be replayed")
    if v == NOT_SET:
        raise RepauditError(f"'{path}' does not set {group}.{name} (the harness took its default, which depends on "
                            "its version): it cannot be replayed")
    return v
