"""What an lm-evaluation-harness results file records, field by field: ``model_args``, the torch environment text,
n-shot (0.3's per-task lists included), ``--gen_kwargs``, quantisation arguments and the settings that map to no
factor. :mod:`repaudit.importers.lmeval.record` turns them into the vocabulary's record.

Python functions in task YAMLs are written as ``<function f at 0x…>``; the address is dropped so two dumps of the
same YAML compare equal.
"""

from __future__ import annotations

import re
from typing import Any

from repaudit.importers.lmeval.schema import GenerationKwargs, LmevalResults, RunSettings, TaskConfig
from repaudit.run.environment import NUMERIC_CPU_FLAGS

_FUNC_ADDR = re.compile(r"<function (\S+) at 0x[0-9a-fA-F]+>")
#: model_args keys of weight quantisation (transformers/bitsandbytes, AutoGPTQ, AutoAWQ, vLLM)
QUANT_ARGS = ("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "bnb_4bit_compute_dtype",
              "bnb_4bit_use_double_quant", "gptq", "autogptq", "gptq_use_triton", "awq", "autoawq", "quantization",
              "quantization_config", "quantize")
#: lm-eval model types that call a remote API: how the weights were stored, the device and dtype are not knowable
API_BACKENDS = ("openai", "anthropic", "local-completions", "local-chat-completions", "textsynth", "goose",
                "forefront", "watsonx", "api", "-chat-completions", "-completions")
#: model types served by a local GGUF / ggml server: weights quantised by the server, not model_args
GGUF_BACKENDS = ("gguf", "ggml")
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


def model_args(settings: RunSettings | None) -> dict[str, Any] | None:
    """``config.model_args`` as a dict (a comma string split as lm-eval splits it, its values strings; a dict — as
    GPT-NeoX's evaluate.py writes it — kept with its values); ``None`` when the file does not record it."""
    args = settings.model_args if settings else None
    if isinstance(args, dict):
        return {str(k): v for k, v in args.items()}
    if isinstance(args, str):
        return dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return None


def is_api(backend: Any) -> bool:
    """Whether an lm-eval ``--model`` type calls a remote API (``openai-chat-completions``, ``local-completions``)."""
    return isinstance(backend, str) and any(k in backend for k in API_BACKENDS)


def _env_field(env: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:\s*(.*)$", env, flags=re.M)
    if not m:
        return None
    v = m.group(1).strip()
    return None if v in _NOT_STATED else v


def parse_pretty_env_info(env: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Hardware and library versions from torch's ``collect_env`` text that lm-eval stores.

    Returns ``(hardware, libraries)``, each holding only what the text states: a field it does not state (the text
    missing, an error string instead of the report, "No CUDA" for a driver version) is absent — not recorded, never
    a value that could compare equal to another file's missing value.
    """
    env = env or ""
    hw: dict[str, Any] = {}
    flags_line = _env_field(env, "Flags")
    if model := _env_field(env, "Model name"):
        hw["cpu_model"] = model
    if flags_line:
        hw["cpu_flags"] = [f for f in NUMERIC_CPU_FLAGS if f in set(flags_line.split())]
    cpus = _env_field(env, "CPU(s)")
    if cpus and cpus.isdigit():
        hw["cpu_count"] = int(cpus)
    cuda_available = _env_field(env, "Is CUDA available")
    if "GPU 0:" in env:
        hw["gpus"] = [g.strip() for g in re.findall(r"GPU \d+: (.+)", env)]
    elif cuda_available == "False":
        hw["gpus"] = []
    elif gpu := _env_field(env, "GPU models and configuration"):
        hw["gpus"] = [gpu]
    if driver := _env_field(env, "Nvidia driver version"):
        hw["gpu_driver"] = driver
    elif hw.get("gpus") == []:
        hw["gpu_driver"] = None
    if cuda := _env_field(env, "CUDA used to build PyTorch"):
        hw["cuda_version"] = cuda
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


def num_fewshot(res: LmevalResults, task: str, cfg: TaskConfig | None) -> tuple[Any, str] | None:
    """n-shot of ``task`` and the key it was read at: ``n-shot``, the task config, or 0.3's ``config.num_fewshot``
    (an int for every task, a dict by task, or a per-task list: see :func:`fewshot_list_order`); ``None`` where the
    file does not tell."""
    if res.n_shot and task in res.n_shot:
        return res.n_shot[task], f"n-shot.{task}"
    if cfg is not None and cfg.num_fewshot is not None:
        return cfg.num_fewshot, f"configs.{task}.num_fewshot"
    legacy = res.config.num_fewshot if res.config else None
    if isinstance(legacy, int):
        return legacy, "config.num_fewshot"
    if isinstance(legacy, dict):
        return (legacy[task], f"config.num_fewshot.{task}") if task in legacy else None
    if isinstance(legacy, list) and legacy:
        order = fewshot_list_order(res)
        if order is not None and task in order:
            return legacy[order.index(task)], f"config.num_fewshot[{order.index(task)}] (in the order of versions)"
        if len(set(legacy)) == 1:  # the same n-shot for every task: the order does not matter
            return legacy[0], "config.num_fewshot (one value for every task)"
    return None


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
    """``--gen_kwargs`` as recorded: a typed dict (unknown keys kept), or lm-eval's comma string
    (``temperature=0,top_k=0``)."""
    if isinstance(value, GenerationKwargs):
        return value.model_dump(exclude_none=True)
    out: dict[str, Any] = {}
    for kv in value.split(","):
        if "=" in kv:
            k, v = (x.strip() for x in kv.split("=", 1))
            out[k] = {"true": True, "false": False}.get(v.lower(), int_or(v))
    return out


def quantisation(margs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The quantisation method ``model_args`` asks for (``none``, ``bitsandbytes 8-bit``, ``bitsandbytes 4-bit nf4``,
    ``GPTQ``, ``AWQ``, or vLLM's ``quantization`` value) and the raw quantisation arguments."""
    q = {k: margs[k] for k in QUANT_ARGS if k in margs}
    on = (lambda k: str(q.get(k, "")).lower() in _TRUE)
    if on("load_in_8bit"):
        return "bitsandbytes 8-bit", q
    if on("load_in_4bit"):
        return "bitsandbytes 4-bit " + str(q.get("bnb_4bit_quant_type", "fp4")), q
    if q.get("gptq") not in (None, "", "False", "false") or on("autogptq"):
        return "GPTQ", q
    if q.get("awq") not in (None, "", "False", "false") or on("autoawq"):
        return "AWQ", q
    if q.get("quantization") not in (None, "", "None", "none"):
        return str(q["quantization"]), q
    return "none", q


def other_settings(res: LmevalResults) -> dict[str, tuple[Any, str]]:
    """Recorded settings that map to no factor (``bootstrap_iters``, a fork's own keys such as a pruning setting),
    top-level and in ``config``, each with its key; volatile and structural keys are left out."""
    out = {str(k): (v, str(k)) for k, v in (res.model_extra or {}).items() if _setting(k)}
    if res.config is not None:
        out |= {f"config.{k}": (v, f"config.{k}") for k, v in (res.config.model_extra or {}).items() if _setting(k)}
    return out


def _setting(key: str) -> bool:
    """A key that may be a setting: not structural or read elsewhere, and not a timing or date (volatile)."""
    k = str(key).lower()
    return key not in _NOT_SETTINGS and not any(w in k for w in ("time", "date", "duration", "elapsed"))
