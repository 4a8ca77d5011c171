"""The factors one task of an lm-evaluation-harness results file records, from its typed model.

Field mapping onto repaudit factors (``configs.<task>``, ``config`` and top-level keys of 0.4.x;
0.3 files have only ``results``/``versions``/``config``, so most factors are *unknown* there):

========================  ===========================================================
factor                    lm-eval source
========================  ===========================================================
seed                      ``config.random_seed/numpy_seed/torch_seed/fewshot_seed``
hardware                  ``pretty_env_info`` (free text: CPU model and flags, GPUs, driver, CUDA);
                          what the text does not state (or an error string) is *unknown*
backend                   ``config.model``, ``config.device`` (may not say what ran)
dtype                     ``config.model_dtype``, else ``model_args`` ``dtype``
quantisation              ``model_args`` ``load_in_8bit``/``load_in_4bit``/``bnb_4bit_*``, ``gptq``, ``awq``,
                          vLLM's ``quantization`` (none of them: ``none``; an API model: *unknown*)
serving                   ``model_args`` ``tensor_parallel_size``, ``pipeline_parallel_size``,
                          ``enable_prefix_caching``, ``kv_cache_dtype``, ``attn_implementation``
batch_size                ``config.batch_size`` (string, int or "auto"), ``config.batch_sizes``
bos                       ``model_args`` ``add_bos_token`` (unset: the tokenizer's default, not recorded)
prompt_format             ``configs.<task>.doc_to_text/doc_to_choice/doc_to_target/description``
fewshot                   ``n-shot``, else ``configs.<task>.num_fewshot``, else 0.3's ``config.num_fewshot``
                          (an int, or per task); ``fewshot_split``, ``fewshot_config.sampler``
chat_template             ``chat_template`` (+ ``chat_template_sha``), ``system_instruction``
stop / max_tokens         ``generation_kwargs.until`` (+ the EOS lm-eval appends), ``max_gen_toks``, ``max_length``
sampling                  ``generation_kwargs`` do_sample/temperature/top_p/top_k, overridden by ``config.gen_kwargs``
metric_variant            ``metric_list``, ``filter_list``
model / tokenizer         ``model_args`` pretrained/revision and every other key (``model.args``),
                          ``model_revision``, ``model_sha``, ``model_num_parameters``, ``tokenizer_{bos,eos,pad}_token``
data                      ``versions``, ``validation_split``/``test_split``, ``config.limit``, ``n-samples``
library_versions          ``lm_eval_version``, ``transformers_version``, torch/numpy/python from ``pretty_env_info``
other                     every other recorded setting (``bootstrap_iters``, a fork's own keys, ``git_hash``)
========================  ===========================================================

Python functions in task YAMLs are written as ``<function f at 0x…>``; the address is dropped so
two dumps of the same YAML compare equal.
"""

from __future__ import annotations

import re
from typing import Any

from repaudit.importers.factors import NOT_SET, UNKNOWN, Factors, empty_factors
from repaudit.importers.lmeval.schema import GenerationKwargs, LmevalResults, RunSettings, TaskConfig
from repaudit.run.environment import NUMERIC_CPU_FLAGS
from repaudit.run.factors import serving_model_args

_FUNC_ADDR = re.compile(r"<function (\S+) at 0x[0-9a-fA-F]+>")
#: model_args keys of weight quantisation (transformers/bitsandbytes, AutoGPTQ, AutoAWQ, vLLM)
QUANT_ARGS = ("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "bnb_4bit_compute_dtype",
              "bnb_4bit_use_double_quant", "gptq", "autogptq", "gptq_use_triton", "awq", "autoawq", "quantization",
              "quantization_config", "quantize")
#: model_args keys of serving settings (vLLM's engine arguments; transformers' attention implementation)
SERVING_ARGS = {**{k: k for k in serving_model_args()}, "attn_implementation": "attention_backend"}
#: model_args keys mapped to their own factor; every other key is compared under ``model.args``
_MAPPED_ARGS = {"pretrained", "revision", "dtype", "trust_remote_code", "add_bos_token", *QUANT_ARGS, *SERVING_ARGS}
#: lm-eval model types that call a remote API: how the weights were stored is not knowable
API_BACKENDS = ("openai", "anthropic", "local-completions", "local-chat-completions", "gguf", "ggml",
                "textsynth", "goose", "forefront", "watsonx", "api")
#: top-level keys and ``config`` keys that are not settings (volatile, structural, or read elsewhere)
_NOT_SETTINGS = {"results", "versions", "configs", "config", "n-shot", "n-samples", "higher_is_better",
                 "group_subtasks", "groups", "date", "start_time", "end_time", "total_evaluation_time_seconds",
                 "pretty_env_info", "model_name_sanitized", "task_hashes", "samples", "model_args", "model",
                 "batch_size", "batch_sizes", "device", "limit", "num_fewshot", "random_seed", "numpy_seed",
                 "torch_seed", "fewshot_seed", "gen_kwargs", "model_dtype", "model_revision", "model_sha",
                 "model_num_parameters", "transformers_version", "lm_eval_version", "git_hash", "upper_git_hash",
                 "tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id", "max_length",
                 "model_name", "model_source", "system_instruction", "system_instruction_sha", "chat_template",
                 "chat_template_sha", "fewshot_as_multiturn", "use_cache", "output_base_path", "output_path"}
_TRUE = ("true", "1", "yes")
#: what ``pretty_env_info`` says when it does not know
_NOT_STATED = ("", "Could not collect", "N/A", "None", "No CUDA")


def model_args(settings: RunSettings | None) -> dict[str, str] | None:
    """``config.model_args`` as a dict of strings (a comma string is split as lm-eval splits it);
    ``None`` when the file does not record it."""
    args = settings.model_args if settings else None
    if isinstance(args, dict):
        return {str(k): str(v) for k, v in args.items()}
    if isinstance(args, str):
        return dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return None


def _env_field(env: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:\s*(.*)$", env, flags=re.M)
    if not m:
        return None
    v = m.group(1).strip()
    return None if v in _NOT_STATED else v


def parse_pretty_env_info(env: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Hardware and library versions from torch's ``collect_env`` text that lm-eval stores.

    Returns ``(hardware, libraries)``. A field the text does not state — the text missing, an error
    string instead of the report, "No CUDA" for a driver version — is :data:`UNKNOWN`, never a value
    that could compare equal to another file's missing value.
    """
    env = env or ""
    hw: dict[str, Any] = {}
    flags_line = _env_field(env, "Flags")
    hw["cpu_model"] = _env_field(env, "Model name") or UNKNOWN
    hw["cpu_flags"] = [f for f in NUMERIC_CPU_FLAGS if f in set(flags_line.split())] if flags_line else UNKNOWN
    cpus = _env_field(env, "CPU(s)")
    hw["cpu_count"] = int(cpus) if cpus and cpus.isdigit() else UNKNOWN
    cuda_available = _env_field(env, "Is CUDA available")
    if "GPU 0:" in env:
        hw["gpus"] = [g.strip() for g in re.findall(r"GPU \d+: (.+)", env)]
    elif cuda_available == "False":
        hw["gpus"] = []
    elif gpu := _env_field(env, "GPU models and configuration"):
        hw["gpus"] = [gpu]
    else:
        hw["gpus"] = UNKNOWN
    hw["gpu_driver"] = _env_field(env, "Nvidia driver version") or (None if hw["gpus"] == [] else UNKNOWN)
    hw["cuda_version"] = _env_field(env, "CUDA used to build PyTorch") or UNKNOWN
    libs: dict[str, str] = {}
    if v := _env_field(env, "PyTorch version"):
        libs["torch"] = v
    if v := _env_field(env, "Python version"):
        libs["python"] = v.split()[0]
    for name, ver in re.findall(r"^\[(?:pip3?|conda)\] (\S+?)==(\S+)", env, flags=re.M):
        if name == "numpy":
            libs["numpy"] = ver
    return hw, libs


def clean(obj: Any) -> Any:
    """Drop function addresses so that two dumps of the same YAML compare equal."""
    if isinstance(obj, str):
        return _FUNC_ADDR.sub(r"<function \1>", obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    return obj


def int_or(value: Any) -> Any:
    """``"8"`` → 8 and ``8.0`` → 8; anything else unchanged (``"auto"``, ``None``)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def num_fewshot(res: LmevalResults, task: str, cfg: TaskConfig | None) -> Any:
    """n-shot of ``task``: ``n-shot``, the task config, or 0.3's ``config.num_fewshot`` (an int for
    every task, a dict by task, or a per-task list: see :func:`fewshot_list_order`); :data:`UNKNOWN`
    where the file does not tell."""
    if res.n_shot and task in res.n_shot:
        return res.n_shot[task]
    if cfg is not None and cfg.num_fewshot is not None:
        return cfg.num_fewshot
    legacy = res.config.num_fewshot if res.config else None
    if isinstance(legacy, int):
        return legacy
    if isinstance(legacy, dict):
        return legacy.get(task, UNKNOWN)
    if isinstance(legacy, list) and legacy:
        order = fewshot_list_order(res)
        if order is not None and task in order:
            return legacy[order.index(task)]
        if len(set(legacy)) == 1:  # the same n-shot for every task: the order does not matter
            return legacy[0]
    return UNKNOWN


def fewshot_list_order(res: LmevalResults) -> list[str] | None:
    """The tasks in the order of a 0.3 fork's per-task ``config.num_fewshot`` list, or ``None`` when the
    file cannot establish it.

    The forks that take a list (Stability AI's jp-stable and its copies) index it as
    ``num_fewshot[idx]`` while looping over the tasks in command-line order — the loop that also fills
    ``versions`` (lm-eval 0.3 ``evaluator.evaluate``). ``results`` is filled later, grouped by request type,
    so its order is not the list's. The ``versions`` order is trusted only when it holds every result task,
    has one entry per list item, and was not sorted on writing: either its keys are not in sorted order, or
    the file's top-level keys are not (``json.dumps(sort_keys=True)`` sorts every level)."""
    legacy = res.config.num_fewshot if res.config else None
    versions = list(res.versions or {})
    if not isinstance(legacy, list) or len(versions) != len(legacy) or not set(res.results) <= set(versions):
        return None
    top = res.key_order()
    if versions == sorted(versions) and (not top or top == sorted(top)):
        return None
    return versions


def gen_kwargs(value: GenerationKwargs | str) -> dict[str, Any]:
    """``--gen_kwargs`` as recorded: a typed dict, or lm-eval's comma string (``temperature=0,top_k=0``)."""
    if isinstance(value, GenerationKwargs):
        return value.model_dump(exclude_none=True)
    out: dict[str, Any] = {}
    for kv in value.split(","):
        if "=" in kv:
            k, v = (x.strip() for x in kv.split("=", 1))
            out[k] = {"true": True, "false": False}.get(v.lower(), int_or(v))
    return out


def _version(res: LmevalResults, task: str) -> Any:
    v = (res.versions or {}).get(task, UNKNOWN)
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return v  # 0.4 dev files write "Yaml"


def _dtype(settings: RunSettings | None, margs: dict[str, str] | None) -> Any:
    """The dtype lm-eval records (``model_dtype``), else ``model_args``' ``dtype=``; :data:`NOT_SET` when the
    recorded ``model_args`` does not pass one (the backend's default, which differs between versions)."""
    if settings and settings.model_dtype:
        return settings.model_dtype.removeprefix("torch.")
    return UNKNOWN if margs is None else margs.get("dtype", NOT_SET)


def _first(tokens: list | None) -> Any:
    return tokens[0] if tokens else UNKNOWN


def quantisation(margs: dict[str, str] | None, backend: Any) -> dict[str, Any]:
    """The ``quantisation`` factor from ``model_args``: ``method`` (``none``, ``bitsandbytes 8-bit``,
    ``bitsandbytes 4-bit nf4``, ``GPTQ``, ``AWQ``, or vLLM's ``quantization`` value) and the raw
    ``settings``. Unknown when model_args is not recorded or the model ran behind an API."""
    if margs is None or not isinstance(backend, str) or any(k in backend for k in API_BACKENDS):
        return {"method": UNKNOWN}
    q = {k: margs[k] for k in QUANT_ARGS if k in margs}
    on = (lambda k: str(q.get(k, "")).lower() in _TRUE)
    if on("load_in_8bit"):
        method = "bitsandbytes 8-bit"
    elif on("load_in_4bit"):
        method = "bitsandbytes 4-bit " + str(q.get("bnb_4bit_quant_type", "fp4"))
    elif q.get("gptq") not in (None, "", "False", "false") or on("autogptq"):
        method = "GPTQ"
    elif q.get("awq") not in (None, "", "False", "false") or on("autoawq"):
        method = "AWQ"
    elif q.get("quantization") not in (None, "", "None", "none"):
        method = str(q["quantization"])
    else:
        method = "none"
    return {"method": method, "settings": q} if method != "none" else {"method": method}


def serving(margs: dict[str, str] | None, backend: Any) -> dict[str, Any]:
    """The ``serving`` factor from ``model_args``: what is set there, and the engine's default elsewhere — for
    the transformers backend the vLLM-only settings do not apply (their unset value); its attention
    implementation and a vLLM run's batch-invariant mode (an environment variable) are not recorded."""
    from repaudit.importers.factors import SERVING_UNSET

    if margs is None or not isinstance(backend, str) or any(k in backend for k in API_BACKENDS):
        return {k: UNKNOWN for k in (*SERVING_UNSET, "attention_backend")}
    out: dict[str, Any] = dict(SERVING_UNSET)
    out["attention_backend"] = UNKNOWN
    if "vllm" in backend:
        out["batch_invariant"] = UNKNOWN
    for key, factor in SERVING_ARGS.items():
        if key in margs:
            out[factor] = _serving_value(factor, margs[key])
        elif "vllm" in backend and SERVING_UNSET.get(factor, 0) is None:
            out[factor] = UNKNOWN  # not passed: vLLM's own default, which depends on its version and device
    return out


def _serving_value(factor: str, raw: Any) -> Any:
    """A ``model_args`` value parsed as the registry parses the option; kept as written if it does not parse."""
    from repaudit.run.factors import get

    try:
        return get(factor).parse(str(raw))
    except (ValueError, TypeError):
        return raw


def other_settings(res: LmevalResults) -> dict[str, Any]:
    """Recorded settings that map to no factor (``bootstrap_iters``, a fork's own keys such as a pruning
    setting), top-level and in ``config``; volatile and structural keys are left out."""
    out = {k: v for k, v in (res.model_extra or {}).items() if _setting(k)}
    if res.config is not None:
        out |= {f"config.{k}": v for k, v in (res.config.model_extra or {}).items() if _setting(k)}
    for k in ("git_hash", "upper_git_hash"):  # the harness's own commit: a version, kept as a setting
        if v := (res.model_extra or {}).get(k) or getattr(res, k, None):
            out[f"lm_eval_{k}"] = v
    return out


def _setting(key: str) -> bool:
    """A key that may be a setting: not structural or read elsewhere, and not a timing or date (volatile)."""
    k = str(key).lower()
    return key not in _NOT_SETTINGS and not any(w in k for w in ("time", "date", "duration", "elapsed"))


#: ``--device`` not given: lm-eval's HFLM then takes CUDA when it is available, else the CPU
DEFAULT_DEVICE = "default (cuda if available)"


def _device(device: Any, hw: dict[str, Any]) -> Any:
    """lm-eval's device as it ran: ``None`` means CUDA when the recorded environment has a GPU, else CPU;
    without an environment, lm-eval's default (:data:`DEFAULT_DEVICE`)."""
    if device:
        return device
    if isinstance(hw.get("gpus"), list):
        return "cuda" if hw["gpus"] else "cpu"
    return DEFAULT_DEVICE


def task_factors(res: LmevalResults, task: str) -> Factors:
    """Factors of one task of an lm-eval results file (see the module docstring)."""
    settings = res.config
    cfg = (res.configs or {}).get(task)
    margs = model_args(settings)
    hw, env_libs = parse_pretty_env_info(res.pretty_env_info)
    gen = cfg.generation_kwargs.model_dump(exclude_none=True) if cfg and cfg.generation_kwargs else {}
    if settings and settings.gen_kwargs is not None:
        gen.update(gen_kwargs(settings.gen_kwargs))  # --gen_kwargs on the command line overrides the task's
    if isinstance(gen.get("until"), str):
        gen["until"] = [gen["until"]]
    n_shot = num_fewshot(res, task, cfg)
    ns = (res.n_samples or {}).get(task)
    n_docs = ns.effective if ns and ns.effective is not None else UNKNOWN
    get = (lambda k: getattr(settings, k, None) if settings else None)
    f = empty_factors()
    f["seed"] = {name: (v if (v := get(k)) is not None else UNKNOWN) for name, k in
                 (("python", "random_seed"), ("numpy", "numpy_seed"), ("torch", "torch_seed"),
                  ("fewshot", "fewshot_seed"))}
    f["hardware"] = hw
    f["backend"] = {"name": get("model") or UNKNOWN, "device": _device(get("device"), hw), "scoring_strategy": UNKNOWN}
    f["dtype"] = {"dtype": _dtype(settings, margs)}
    f["quantisation"] = quantisation(margs, get("model"))
    f["serving"] = serving(margs, get("model"))
    sizes = get("batch_sizes")
    batch = get("batch_size")
    f["batch_size"] = {"batch_size": int_or(batch) if batch is not None else UNKNOWN,
                       "batch_sizes_used": {str(s): None for s in sizes} if sizes else UNKNOWN}
    f["padding"] = {"padding_side": UNKNOWN}
    # model_args add_bos_token only asks the tokenizer (it may ignore it); unset = its default: not recorded
    bos_arg = (margs or {}).get("add_bos_token")
    f["bos"] = {"bos_first": {"true": True, "false": False}.get(str(bos_arg).lower(), UNKNOWN)}
    f.update(_protocol_factors(res, task, cfg, gen, n_shot, n_docs, get))
    if "chat_template" in res.model_fields_set:
        f["chat_template"] = {"applied": bool(res.chat_template), "chat_template_sha256": res.chat_template_sha or None,
                              "system_prompt": res.system_instruction}
        if "fewshot_as_multiturn" in res.model_fields_set:  # null = the flag was not passed
            f["chat_template"]["fewshot_as_multiturn"] = bool(res.fewshot_as_multiturn)
    f.update(_model_factors(res, margs, env_libs, get))
    if res.task_hashes and res.task_hashes.get(task):
        f["data"]["task_hash"] = res.task_hashes[task]  # lm-eval's hash of the task's requests (docs and prompts)
    f["other"] = other_settings(res)
    return f


def _protocol_factors(res: LmevalResults, task: str, cfg, gen: dict, n_shot, n_docs, get) -> dict:
    """The data, few-shot, prompt, stop, max-token, sampling and metric groups of one task; a file
    without the task's config (0.3) records only its data and n-shot."""
    f: dict = {}
    zero = n_shot == 0
    is_gen = bool(cfg) and cfg.output_type in ("generate_until", "greedy_until")
    if cfg is not None:
        raw = clean(cfg.model_dump())
        f["prompt_format"] = {k: raw.get(k) for k in ("doc_to_text", "doc_to_choice", "doc_to_target", "description",
                                                      "target_delimiter", "fewshot_delimiter")}
        sampler = cfg.fewshot_config.sampler if cfg.fewshot_config else None
        # lm-eval's pool: fewshot_split, else the training split, else validation, else test
        pool = cfg.fewshot_split or cfg.training_split or cfg.validation_split or cfg.test_split
        f["fewshot"] = {"num_fewshot": n_shot,
                        "split": None if zero else (pool or UNKNOWN),
                        "sampler": "none" if zero else ({"default": "random"}.get(sampler, sampler) or UNKNOWN),
                        # lm-eval records no few-shot ids; with 0 shots there are none
                        "ids_sha256": "none" if zero else UNKNOWN,
                        "order_seed": None}  # lm-eval keeps its sampler's order
        eos = _first(res.tokenizer_eos_token)
        until = [str(u) for u in gen.get("until") or []] if is_gen else None
        if is_gen and isinstance(eos, str) and eos != UNKNOWN and until is not None and eos not in until:
            until.append(eos)  # lm-eval's HFLM.generate_until appends the EOS string
        # an EOS the file does not record is unknown in its own field, never an element of the stop list
        f["stop"] = {"until": until, "eos_token": eos if is_gen else None}
        f["max_tokens"] = {"max_gen_toks": gen.get("max_gen_toks", 256) if is_gen else None,
                           "max_length": res.max_length if res.max_length is not None else UNKNOWN}
        f["sampling"] = ({"do_sample": gen.get("do_sample", False), "temperature": gen.get("temperature", UNKNOWN),
                          "top_p": gen.get("top_p", UNKNOWN), "top_k": gen.get("top_k", UNKNOWN)}
                         if is_gen else {"do_sample": None})
        if is_gen:  # every other generation setting lm-eval takes in gen_kwargs, under the name its field declares
            f = _gen_kwargs_factors(f, gen)
        metrics = [m.metric for m in cfg.metric_list or []]
        f["metric_variant"] = {"metrics": metrics, "acc_norm": "char_length" if "acc_norm" in metrics else None,
                               "filters": [x.name for x in cfg.filter_list or []] or ["none"]}
        if is_gen:  # lm-eval matches generations by exact_match (its options are in the task's metric_list)
            f["metric_variant"]["answer_match"] = "exact"
        f["data"] = {"task": task, "task_version": _version(res, task),
                     "split": cfg.test_split or cfg.validation_split or UNKNOWN,
                     "content_sha256": UNKNOWN, "limit": int_or(get("limit")), "n_docs": n_docs}
    else:
        f["data"] = {"task": task, "task_version": _version(res, task),
                     "limit": int_or(get("limit")) if res.config else UNKNOWN, "n_docs": n_docs}
        f["fewshot"] = {"num_fewshot": n_shot, "ids_sha256": "none" if zero else UNKNOWN, "order_seed": None}
    return f


def _model_factors(res: LmevalResults, margs: dict | None, env_libs: dict, get) -> dict:
    """The model, tokenizer and library-version groups of a results file."""
    f: dict = {}
    sha = get("model_sha")
    f["model"] = {"name": (margs or {}).get("pretrained") or res.model_name or UNKNOWN,
                  "revision": (margs or {}).get("revision") or get("model_revision")
                  or (UNKNOWN if margs is None else NOT_SET),
                  "sha": sha or UNKNOWN,  # "" for a local folder: not recorded
                  "weights_sha256": UNKNOWN,
                  "num_parameters": get("model_num_parameters") if get("model_num_parameters") else UNKNOWN,
                  "args": {k: v for k, v in sorted(margs.items()) if k not in _MAPPED_ARGS}
                  if margs is not None else UNKNOWN,
                  "trust_remote_code": (margs or {}).get("trust_remote_code", "False").lower() == "true"
                  if margs is not None else UNKNOWN}
    if res.tokenizer_eos_token is not None:
        f["tokenizer"] = {"tokenizer_sha256": UNKNOWN,
                          **{k: _first(getattr(res, f"tokenizer_{k}_token")) for k in ("bos", "eos", "pad")}}
    libs = dict(env_libs)
    if res.lm_eval_version:
        libs["lm_eval"] = res.lm_eval_version
    if res.transformers_version:
        libs["transformers"] = res.transformers_version
    f["library_versions"] = libs
    return f


def _gen_kwargs_factors(f: Factors, gen: dict[str, Any]) -> Factors:
    """The generation settings beyond the ones mapped by hand, read from the task's and the command line's gen_kwargs
    under their lm-eval names (:func:`repaudit.settings.named_in`) into their registry factor's compare field; a
    setting the run did not pass is not recorded (it ran at the model's own generation default)."""
    from repaudit.run.factors import FACTORS
    from repaudit.settings import named_in

    by_path = {factor.path: factor.compare for factor in FACTORS if factor.path and factor.compare}
    for field, key in named_in("lmeval").items():
        compare = by_path.get(f"generation.{field}")
        if compare is None or compare[1] in f.get(compare[0], {}) or field == "max_gen_toks":
            continue
        f[compare[0]][compare[1]] = gen.get(key, UNKNOWN)
    return f
