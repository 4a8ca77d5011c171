"""One task of an lm-evaluation-harness results file (0.3 to 0.4.x, GPT-NeoX's evaluate.py) as the vocabulary's
record (:mod:`repaudit.vocabulary`): every setting the file holds with its key, lm-eval's own defaults where it is
silent (shown as such, with the version the file records), and nothing else.

The settings fields declare their lm-eval keys (:func:`repaudit.settings.harness_map`); this reader builds the
sources they name (:data:`SOURCES`) and executes that map (:func:`repaudit.importers.declared.read_declared`); what
no single key holds — n-shot across versions, the backend, the chat template, the few-shot pool, decoding without a
``do_sample`` — is read here by hand, each value with its key or how it was derived. lm-eval's defaults are in
:data:`DEFAULTS` (the harness's own, whatever the backend) and :data:`CLASS_DEFAULTS` (those of the model class the
run used: ``HFLM``, ``VLLM``, ``SGLangLM``, told from ``config.model``), each with the place in lm-eval's code; a
backend whose class is not among them leaves what its file does not say not recorded. The tokenizer's special
tokens are recorded with their ids (``tokenizer_eos_token``'s second element, ``eot_token_id``).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from repaudit.importers.declared import HarnessDefault, Source, apply_defaults, generative, read_declared, source
from repaudit.importers.lmeval.fields import (
    GGUF_BACKENDS,
    QUANT_ARGS,
    clean,
    gen_kwargs,
    int_or,
    is_api,
    model_args,
    num_fewshot,
    other_settings,
    parse_pretty_env_info,
    quantisation,
)
from repaudit.importers.lmeval.schema import LmevalResults, TaskConfig
from repaudit.settings import harness_map
from repaudit.vocabulary import Recorded, apply_conditions, default, derived, not_applicable, recorded, setting_paths

HARNESS = "lm-eval"
#: the sources this reader builds for the lmeval keys of the settings fields
SOURCES = ("config", "top", "model_args", "gen_kwargs", "task")
_HF = "lm_eval/models/huggingface.py"
_NORM = "lm_eval/models/utils.py normalize_gen_kwargs"


def _loglikelihood(rec: Recorded) -> bool:
    return rec.value("data.output_type") in ("multiple_choice", "loglikelihood", "loglikelihood_rolling")


#: lm-eval's own defaults for settings its files may leave unsaid, whatever the backend (0.4.x: the versions whose
#: files record their version; a 0.3 file's version is not recorded, so its defaults are shown as not recorded)
DEFAULTS: dict[str, HarnessDefault] = {
    "seeds.seed": HarnessDefault(0, "lm_eval/_cli/run.py --seed default 0,1234,1234,1234", ("0.4",)),
    "seeds.numpy_seed": HarnessDefault(1234, "lm_eval/_cli/run.py --seed default 0,1234,1234,1234", ("0.4",)),
    "seeds.torch_seed": HarnessDefault(1234, "lm_eval/_cli/run.py --seed default 0,1234,1234,1234", ("0.4",)),
    "seeds.fewshot_seed": HarnessDefault(1234, "lm_eval/_cli/run.py --seed default 0,1234,1234,1234", ("0.4",)),
    "data.limit": HarnessDefault(None, "lm_eval/evaluator.py simple_evaluate(limit=None)", ("0.4",),
                                 note="every doc of the split"),
    "prompt.system_prompt": HarnessDefault(None, "lm_eval/evaluator.py simple_evaluate(system_instruction=None)",
                                           ("0.4",), note="no system prompt"),
    "prompt.fewshot_as_multiturn": HarnessDefault(False, "lm_eval/_cli/run.py --fewshot_as_multiturn (a flag)",
                                                  ("0.4",)),
    "fewshot.sampler": HarnessDefault("default", "lm_eval/api/task.py: fewshot_config.sampler 'default' (random)",
                                      ("0.4",)),
    "fewshot.fewshot_order_seed": HarnessDefault(None, "lm_eval/api/samplers.py ContextSampler.get_context",
                                                 note="the sampler's order"),
    "scoring.acc_norm": HarnessDefault("char_length", "lm_eval/api/task.py ConfigurableTask.process_results: "
                                       "log-likelihood / len(choice) in characters"),
    "scoring.score_normalisation": HarnessDefault("raw", "lm_eval reports raw scores"),
}

def _not_gemma(rec: Recorded) -> bool:
    """vLLM and SGLang add a BOS token to a model whose name holds ``gemma`` whatever ``add_bos_token`` says."""
    return "gemma" not in str(rec.value("model.name") or "").lower()


_VLLM = "lm_eval/models/vllm_causallms.py"
_SGLANG = "lm_eval/models/sglang_causallms.py"
#: lm-eval's registry name of a backend (``config.model``) → the model class that ran it; a backend not listed (an
#: API model, ``gguf``, ``mamba_ssm``, a fork's own) has no class defaults here: what its file leaves unsaid is not
#: recorded
BACKEND_CLASSES = {"hf": "HFLM", "hf-auto": "HFLM", "huggingface": "HFLM", "vllm": "VLLM", "sglang": "SGLangLM",
                   # lm-eval 0.3's names of its transformers class (0.3 files record no version: its defaults are
                   # then shown as lm-eval's, never as values)
                   "gpt2": "HFLM", "hf-causal": "HFLM", "hf-causal-experimental": "HFLM"}
#: each model class's own defaults for what a run's ``model_args`` and generation kwargs leave unsaid, with the place
#: in its code (the class a run used decides them: a vLLM run's revision is not HFLM's 'main')
CLASS_DEFAULTS: dict[str, dict[str, HarnessDefault]] = {
    "HFLM": {
        "generation.max_gen_toks": HarnessDefault(256, f"{_NORM}(default_max_gen_toks=256); HFLM.max_gen_toks",
                                                  ("0.4",), applies=generative),
        "generation.do_sample": HarnessDefault(False, f"{_NORM}: do_sample unset and temperature unset (0.0): greedy",
                                               ("0.4",), applies=generative),
        "generation.stop_at_eos": HarnessDefault(True, f"{_HF} HFLM.generate_until: the EOS string joins until",
                                                 ("0.4",), applies=generative),
        "serving.device": HarnessDefault(None, f"{_HF} HFLM.__init__", ("0.4",), note="cuda if available, else cpu"),
        "serving.dtype": HarnessDefault("auto", f"{_HF} HFLM.__init__(dtype='auto'): the checkpoint's torch_dtype",
                                        ("0.4",)),
        "serving.padding_side": HarnessDefault("right", f"{_HF} HFLM._loglikelihood_tokens: "
                                               "pad_and_concat(padding_side='right')", ("0.4",),
                                               applies=_loglikelihood),
        "serving.scoring_strategy": HarnessDefault("full_sequence", f"{_HF} HFLM._loglikelihood_tokens: every "
                                                   "continuation scored with its whole context", ("0.4",),
                                                   applies=_loglikelihood),
        "model.revision": HarnessDefault("main", f"{_HF} HFLM.__init__(revision='main')", ("0.4",)),
        "model.trust_remote_code": HarnessDefault(False, f"{_HF} HFLM.__init__(trust_remote_code=False)", ("0.4",)),
    },
    "VLLM": {
        "generation.max_gen_toks": HarnessDefault(256, f"{_VLLM} VLLM.__init__(max_gen_toks=256)", ("0.4",),
                                                  applies=generative),
        "generation.do_sample": HarnessDefault(False, f"{_VLLM} VLLM.modify_gen_kwargs: temperature unset → 0.0 "
                                               "(greedy)", ("0.4",), applies=generative),
        "generation.stop_at_eos": HarnessDefault(True, f"{_VLLM} VLLM.generate_until: handle_stop_sequences adds the "
                                                 "EOS string to until", ("0.4",), applies=generative),
        "serving.device": HarnessDefault(None, f"{_VLLM} VLLM.__init__ drops device", ("0.4",),
                                         note="vLLM places the model on its own devices"),
        "serving.dtype": HarnessDefault("auto", f"{_VLLM} VLLM.__init__(dtype='auto'): vLLM's own 'auto' (the "
                                        "checkpoint's dtype; float16 for a float32 checkpoint)", ("0.4",)),
        "serving.add_bos_token": HarnessDefault(False, f"{_VLLM} VLLM.__init__(add_bos_token=False)", ("0.4",),
                                                applies=_not_gemma),
        "model.revision": HarnessDefault(None, f"{_VLLM} VLLM.__init__(revision=None)", ("0.4",),
                                         note="the model repository's default branch"),
        "model.trust_remote_code": HarnessDefault(False, f"{_VLLM} VLLM.__init__(trust_remote_code=False)", ("0.4",)),
    },
    "SGLangLM": {
        "generation.max_gen_toks": HarnessDefault(256, f"{_SGLANG} SGLangLM.__init__(max_gen_toks=256)", ("0.4",),
                                                  applies=generative),
        "generation.do_sample": HarnessDefault(False, f"{_SGLANG} SGLangLM.modify_gen_kwargs: temperature unset → "
                                               "0.0 (greedy)", ("0.4",), applies=generative),
        "generation.stop_at_eos": HarnessDefault(True, f"{_SGLANG} SGLangLM.generate_until: handle_stop_sequences "
                                                 "adds the EOS string to until", ("0.4",), applies=generative),
        "serving.device": HarnessDefault("cuda", f"{_SGLANG} SGLangLM.__init__(device='cuda')", ("0.4",)),
        "serving.dtype": HarnessDefault("auto", f"{_SGLANG} SGLangLM.__init__(dtype='auto')", ("0.4",)),
        "serving.add_bos_token": HarnessDefault(False, f"{_SGLANG} SGLangLM.__init__(add_bos_token=False)", ("0.4",),
                                                applies=_not_gemma),
        "model.trust_remote_code": HarnessDefault(True, f"{_SGLANG} SGLangLM.__init__(trust_remote_code=True)",
                                                  ("0.4",)),
    },
}


def backend_class(backend: object) -> str | None:
    """The lm-eval model class of a recorded backend (``config.model``), or ``None`` where it is not one whose
    defaults repaudit knows (:data:`BACKEND_CLASSES`)."""
    return BACKEND_CLASSES.get(backend) if isinstance(backend, str) else None


def task_record(res: LmevalResults, task: str) -> Recorded:
    """The record of one task of an lm-eval results file (see the module docstring)."""
    cfg = (res.configs or {}).get(task)
    version = res.lm_eval_version
    rec = Recorded()
    _identity(rec, res, task, cfg)
    read_declared("lmeval", _sources(res, task, cfg), rec)
    _machine(rec, res)
    _backend(rec, res)
    _fewshot(rec, res, task, cfg)
    _prompt(rec, res, task, cfg)
    _generation(rec, res, cfg)
    _scoring(rec, task, cfg)
    _model(rec, res)
    apply_defaults(rec, HARNESS, version, DEFAULTS)
    cls = backend_class(rec.value("serving.backend"))
    if cls is not None:  # the defaults of the class the run used (a backend not known: left not recorded)
        apply_defaults(rec, HARNESS, version, CLASS_DEFAULTS[cls])
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _sources(res: LmevalResults, task: str, cfg: TaskConfig | None) -> dict[str, Source]:
    """The dicts the settings fields' lmeval keys name (:data:`SOURCES`)."""
    config: dict[str, Any] = {}
    if res.config is not None:  # the keys the file holds
        held = res.config.model_fields_set | set(res.config.model_extra or {})
        config = {k: v for k, v in res.config.model_dump(exclude_none=False, by_alias=True).items() if k in held}
    margs = model_args(res.config) or {}
    top: dict[str, Any] = {k: getattr(res, k) for k in ("system_instruction", "fewshot_as_multiturn", "chat_template")
           if k in res.model_fields_set}
    return {"config": source(config, "config."), "top": source(top, ""),
            "model_args": {k: (v, f"config.model_args: {k}") for k, v in margs.items()},
            "gen_kwargs": _gen_source(res, task, cfg),
            "task": source(clean(cfg.model_dump(exclude_none=True)) if cfg else {}, f"configs.{task}.")}


def _gen_source(res: LmevalResults, task: str, cfg: TaskConfig | None) -> Source:
    """The task's generation_kwargs, overridden key by key by ``--gen_kwargs`` (``config.gen_kwargs``)."""
    out: Source = {}
    if cfg is not None and cfg.generation_kwargs is not None:
        out = source(cfg.generation_kwargs.model_dump(exclude_none=True), f"configs.{task}.generation_kwargs.")
    cli = res.config.gen_kwargs if res.config else None
    if cli is not None:
        where = "config.gen_kwargs." if not isinstance(cli, str) else "config.gen_kwargs: "
        out.update({k: (v, where + k) for k, v in gen_kwargs(cli).items()})
    return out


def _identity(rec: Recorded, res: LmevalResults, task: str, cfg: TaskConfig | None) -> None:
    """data.task/task_version/output_type/n_docs/task_hash."""
    rec.put("data.task", task, f"results.{task}")
    versions = res.versions or {}
    if task in versions:
        v = versions[task]
        with contextlib.suppress(TypeError, ValueError, OverflowError):  # 0.4 dev files write "Yaml"
            v = float(v)
        rec.put("data.task_version", v, f"versions.{task}")
    if cfg is not None and cfg.output_type:
        rec.put("data.output_type", cfg.output_type, f"configs.{task}.output_type")
    ns = (res.n_samples or {}).get(task)
    if ns is not None and ns.effective is not None:
        rec.put("data.n_docs", ns.effective, f"n-samples.{task}.effective")
    if res.task_hashes and res.task_hashes.get(task):
        rec.put("data.task_hash", res.task_hashes[task], f"task_hashes.{task}")


def _backend(rec: Recorded, res: LmevalResults) -> None:
    """The backend (``config.model``), batch sizes used, quantisation; an API model's device/dtype do not apply."""
    backend = res.config.model if res.config else None
    if backend:
        rec.put("serving.backend", backend, "config.model")
    if res.config and res.config.batch_sizes:
        rec.put("engine.batch_sizes_used", {str(s): None for s in res.config.batch_sizes}, "config.batch_sizes",
                note="the sizes lm-eval chose (auto), not how many batches of each")
    if not rec.known("serving.device") and backend_class(backend) == "HFLM":
        gpus = rec.value("hardware.gpus")
        if isinstance(gpus, list):  # --device unset: HFLM takes cuda when available; the environment tells
            rec["serving.device"] = derived("cuda" if gpus else "cpu", "--device not set: lm-eval takes cuda when it "
                                            "is available, and the recorded environment (pretty_env_info) has "
                                            + (f"{len(gpus)} GPU(s)" if gpus else "none"))
    margs = model_args(res.config)
    if is_api(backend):
        why = f"an API model ({backend}): the provider serves it"
        for p in ("serving.device", "serving.dtype", "serving.quantization", "serving.padding_side",
                  "serving.add_bos_token"):
            rec[p] = not_applicable(why, rec.get(p))
    elif margs is not None and not (isinstance(backend, str) and backend in GGUF_BACKENDS):
        method, args = quantisation(margs)
        where = ", ".join(f"config.model_args: {k}" for k in args) or "config.model_args (no quantisation argument)"
        rec["serving.quantization"] = (recorded(method, where) if args else derived(method, where))
        if args:
            rec.put("model.quantization_args", args, where)


def _fewshot(rec: Recorded, res: LmevalResults, task: str, cfg: TaskConfig | None) -> None:
    """n-shot across versions; the few-shot pool where fewshot_split is unset; the sampler as recorded."""
    shots = num_fewshot(res, task, cfg)
    if shots is not None:
        rec.put("fewshot.num_fewshot", int_or(shots[0]), shots[1])
    if cfg is None:
        return
    if rec.value("fewshot.fewshot_split") is None:  # unset (null): lm-eval's own pool
        pool = cfg.training_split or cfg.validation_split or cfg.test_split
        if pool:
            rec["fewshot.fewshot_split"] = derived(pool, "lm-eval's pool where fewshot_split is unset: training_split, "
                                                         "else validation_split, else test_split (api/task.py "
                                                         "fewshot_docs)")
    if cfg.fewshot_config is not None and cfg.fewshot_config.sampler:
        rec.put("fewshot.sampler", cfg.fewshot_config.sampler, f"configs.{task}.fewshot_config.sampler")


def _prompt(rec: Recorded, res: LmevalResults, task: str, cfg: TaskConfig | None) -> None:
    """The task's templates and delimiters, the chat template."""
    rec["prompt.prompt_format"] = derived("lmeval", "an lm-eval run builds prompts with its task's own templates")
    if cfg is not None:
        raw = clean(cfg.model_dump())
        for k in ("doc_to_text", "doc_to_choice", "doc_to_target", "target_delimiter", "fewshot_delimiter"):
            if raw.get(k) is not None:
                rec.put(f"prompt.{k}", raw[k], f"configs.{task}.{k}")
    if "chat_template" in res.model_fields_set:  # the template text where one was applied ("" for an API's)
        rec.put("prompt.chat_template", res.chat_template is not None, "chat_template",
                note="" if res.chat_template is not None else "null: no chat template applied")
        if res.chat_template_sha:
            rec.put("prompt.chat_template_sha256", res.chat_template_sha, "chat_template_sha")


def _generation(rec: Recorded, res: LmevalResults, cfg: TaskConfig | None) -> None:
    """Decoding without a recorded ``do_sample`` (lm-eval samples when temperature > 0); the EOS string."""
    if not rec.known("generation.do_sample") and rec.known("generation.temperature"):
        t = rec.value("generation.temperature")
        if isinstance(t, (int, float)):
            rec["generation.do_sample"] = derived(t > 0, f"{_NORM}: do_sample unset, temperature {t}")
    if res.tokenizer_eos_token and generative(rec):
        rec.put("generation.eos_token", res.tokenizer_eos_token[0], "tokenizer_eos_token[0]")


def _scoring(rec: Recorded, task: str, cfg: TaskConfig | None) -> None:
    """Metrics and filters as the task's config lists them; exact_match's options; generations matched exactly."""
    if cfg is None:
        return
    if cfg.metric_list is not None:
        rec.put("metric.metrics", [m.metric for m in cfg.metric_list], f"configs.{task}.metric_list")
        for i, m in enumerate(cfg.metric_list):
            for opt in ("ignore_case", "ignore_punctuation", "regexes_to_ignore"):
                if getattr(m, opt, None) is not None:
                    rec.put(f"scoring.{opt}", getattr(m, opt), f"configs.{task}.metric_list[{i}].{opt}")
    if cfg.filter_list is not None:
        rec.put("metric.filters", [x.name for x in cfg.filter_list], f"configs.{task}.filter_list")
    elif generative(rec):
        rec["metric.filters"] = default(["none"], HARNESS, None, "lm_eval/api/task.py: no filter_list → 'none'")
    if generative(rec):
        rec["scoring.answer_match"] = derived("exact", "lm-eval's exact_match compares the whole answer")


def _model(rec: Recorded, res: LmevalResults) -> None:
    """model.* from model_args (pretrained=, or model= for API backends) and the top-level model facts."""
    margs = model_args(res.config)
    settings = res.config
    # GPT-NeoX evaluate.py (config.model "neox"): the checkpoint folder it loads is the model
    neox = ("load",) if settings is not None and settings.model == "neox" else ()
    for key in ("pretrained", "model", "path", "model_name", *neox):
        if margs and margs.get(key):
            rec.put("model.name", margs[key], f"config.model_args: {key}")
            break
    else:
        if res.model_name:
            rec.put("model.name", res.model_name, "model_name")
    if margs and margs.get("revision"):
        rec.put("model.revision", margs["revision"], "config.model_args: revision")
    elif settings and settings.model_revision:
        rec.put("model.revision", settings.model_revision, "config.model_revision")
    if settings and settings.model_sha:  # "" for a local folder: not recorded
        rec.put("model.sha", settings.model_sha, "config.model_sha")
    if settings and settings.model_num_parameters:
        rec.put("model.num_parameters", settings.model_num_parameters, "config.model_num_parameters")
    if margs is not None:
        if "trust_remote_code" in margs:
            rec.put("model.trust_remote_code", str(margs["trust_remote_code"]).lower() == "true",
                    "config.model_args: trust_remote_code")
        if "iteration" in margs:  # GPT-NeoX evaluate.py: the checkpoint's training step
            rec.put("model.step", int_or(margs["iteration"]), "config.model_args: iteration")
        mapped = {key for places in harness_map("lmeval").values() for src, key in places if src == "model_args"}
        mapped |= {"pretrained", "model", "revision", "trust_remote_code", "iteration", *neox, *QUANT_ARGS}
        rest = {k: v for k, v in sorted(margs.items()) if k not in mapped}
        rec.put("model.args", rest, "config.model_args")
    for k in ("bos", "eos", "pad"):
        tok = getattr(res, f"tokenizer_{k}_token")
        if tok:
            rec.put(f"tokenizer.{k}_token", tok[0], f"tokenizer_{k}_token[0]")
        if tok and len(tok) > 1:  # the id: a string ("151643", "None") in most files, an int in 0.4.3–0.4.4
            rec.put(f"tokenizer.{k}_token_id", _token_id(tok[1]), f"tokenizer_{k}_token[1]")
    if res.eot_token_id is not None:
        rec.put("tokenizer.eot_token_id", res.eot_token_id, "eot_token_id")
    if margs and isinstance(margs.get("gguf_file"), str) and margs["gguf_file"]:
        _gguf_weights(rec, margs["gguf_file"])


def _token_id(v: object) -> object:
    """A token id as lm-eval writes it, as an int (``"151643"`` → 151643; ``"None"``/null → None: the tokenizer has
    no such token); anything else as written."""
    if isinstance(v, str) and v.strip().lower() in ("none", "null", ""):
        return None
    with contextlib.suppress(TypeError, ValueError):
        return int(v)  # type: ignore[call-overload]
    return v


#: a quantisation named in a GGUF file's name (``model.Q4_1.gguf``, ``model-q4_k_m.gguf``)
_GGUF_QUANT = re.compile(r"[.\-_]((?:I?Q\d[A-Z0-9_]*)|BF16|F16|F32)\.gguf$", re.IGNORECASE)


def _gguf_weights(rec: Recorded, name: str) -> None:
    """``model.weights_format`` of a run that loaded a GGUF (``model_args gguf_file=``): transformers de-quantises it
    to the dtype asked; its quantisation is read from the file's name, which is all the results file keeps."""
    m = _GGUF_QUANT.search(name)
    dtype = rec.value("serving.dtype")
    head = f"{m.group(1).upper()} GGUF" if m else "GGUF"
    rest = f"de-quantised to {dtype}" if isinstance(dtype, str) and dtype != "auto" else "de-quantised on load"
    rec["model.weights_format"] = derived(f"{head} {rest}", "config.model_args: gguf_file names a GGUF file"
                                          + (" (its quantisation read from the file's name)" if m else "")
                                          + "; transformers de-quantises GGUF weights to the dtype asked")


def _machine(rec: Recorded, res: LmevalResults) -> None:
    """Hardware and versions (torch's environment text, lm-eval's own fields), the context window, other
    settings."""
    hw, libs = parse_pretty_env_info(res.pretty_env_info)
    for k, v in hw.items():
        rec.put(f"hardware.{k}", v, "pretty_env_info")
    for k, v in libs.items():
        rec.put(f"software.{k}", v, "pretty_env_info")
    if res.lm_eval_version:
        rec.put("software.lm_eval", res.lm_eval_version, "lm_eval_version")
    if res.transformers_version:
        rec.put("software.transformers", res.transformers_version, "transformers_version")
    for k in ("git_hash", "upper_git_hash"):  # the harness's own commit: a version
        v = (res.model_extra or {}).get(k) or getattr(res, k, None)
        if v:
            rec.put(f"software.lm_eval_{k}", v, k)
    if res.max_length is not None:
        rec.put("engine.max_length", res.max_length, "max_length")
    for name, (v, key) in other_settings(res).items():
        rec.put(f"other.{name}", v, key)
