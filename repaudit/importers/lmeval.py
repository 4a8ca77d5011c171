"""Read lm-evaluation-harness output (0.3 to 0.4.x): ``results_*.json`` plus ``samples_<task>_*.jsonl``.

Field mapping onto repaudit factors (``configs.<task>``, ``config`` and top-level keys of 0.4.x;
0.3 files have only ``results``/``versions``/``config``, so most factors are *unknown* there):

========================  ===========================================================
factor                    lm-eval source
========================  ===========================================================
seed                      ``config.random_seed/numpy_seed/torch_seed/fewshot_seed``
hardware                  ``pretty_env_info`` (free text: CPU model and flags, GPUs, driver, CUDA)
backend                   ``config.model``, ``config.device`` (may not say what ran)
dtype                     ``config.model_dtype``, else ``model_args`` ``dtype``
batch_size                ``config.batch_size`` (string, int or "auto"), ``config.batch_sizes``
prompt_format             ``configs.<task>.doc_to_text/doc_to_choice/doc_to_target/description``
fewshot                   ``n-shot``, ``configs.<task>.fewshot_split``, ``fewshot_config.sampler``
chat_template             ``chat_template`` (+ ``chat_template_sha``), ``system_instruction``
stop / max_tokens         ``generation_kwargs.until`` (+ the EOS lm-eval appends), ``max_gen_toks``, ``max_length``
sampling                  ``generation_kwargs`` do_sample/temperature/top_p/top_k, overridden by ``config.gen_kwargs``
metric_variant            ``metric_list``, ``filter_list``
model / tokenizer         ``model_args`` pretrained/revision, ``model_revision``, ``model_sha``,
                          ``model_num_parameters``, ``tokenizer_{bos,eos,pad}_token``
data                      ``versions``, ``validation_split``/``test_split``, ``config.limit``, ``n-samples``
library_versions          ``lm_eval_version``, ``transformers_version``, torch/numpy/python from ``pretty_env_info``
========================  ===========================================================

Quirks handled: log-likelihoods and is_greedy inside ``resps`` as strings; ``batch_size`` as a
string or "auto"; ``model_args`` as a comma string or a dict; python functions written as
``<function f at 0x…>`` (the address is dropped); ``Infinity``/``NaN`` in JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome
from repaudit.importers.factors import UNKNOWN, Factors, empty_factors
from repaudit.run.environment import NUMERIC_CPU_FLAGS

_FUNC_ADDR = re.compile(r"<function (\S+) at 0x[0-9a-f]+>")
_TS = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)")


def is_lmeval_results(obj: Any) -> bool:
    """Whether a parsed JSON object looks like an lm-eval results file."""
    return isinstance(obj, dict) and isinstance(obj.get("results"), dict) and (
        "config" in obj or "versions" in obj or "configs" in obj)


def _model_args(config: dict) -> dict[str, str]:
    args = config.get("model_args")
    if isinstance(args, dict):
        return {k: str(v) for k, v in args.items()}
    if isinstance(args, str) and args:
        return dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return {}


def _env_field(env: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:\s*(.*)$", env, flags=re.M)
    if not m:
        return None
    v = m.group(1).strip()
    return None if v in ("", "Could not collect", "N/A", "None") else v


def parse_pretty_env_info(env: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Hardware and library versions from torch's ``collect_env`` text that lm-eval stores.

    Returns ``(hardware, libraries)``; fields the text does not state are :data:`UNKNOWN`.
    """
    if not env:
        keys = ("cpu_model", "cpu_flags", "cpu_count", "gpus", "gpu_driver", "cuda_version")
        return {k: UNKNOWN for k in keys}, {}
    gpus_text = _env_field(env, "GPU models and configuration") or ""
    gpus = re.findall(r"GPU \d+: (.+)", env) if "GPU 0:" in env else ([gpus_text] if gpus_text else [])
    flags_line = _env_field(env, "Flags") or ""
    have = set(flags_line.split())
    cpus = _env_field(env, "CPU(s)")
    hardware = {
        "cpu_model": _env_field(env, "Model name"),
        "cpu_flags": [f for f in NUMERIC_CPU_FLAGS if f in have] if flags_line else UNKNOWN,
        "cpu_count": int(cpus) if cpus and cpus.isdigit() else UNKNOWN,
        "gpus": [g.strip() for g in gpus],
        "gpu_driver": _env_field(env, "Nvidia driver version"),
        "cuda_version": _env_field(env, "CUDA used to build PyTorch"),
    }
    libs = {}
    if v := _env_field(env, "PyTorch version"):
        libs["torch"] = v
    if v := _env_field(env, "Python version"):
        libs["python"] = v.split()[0]
    for name, ver in re.findall(r"^\[pip3?\] (\S+?)==(\S+)", env, flags=re.M):
        if name == "numpy":
            libs["numpy"] = ver
    return hardware, libs


def _clean(obj: Any) -> Any:
    """Drop function addresses so that two dumps of the same YAML compare equal."""
    if isinstance(obj, str):
        return _FUNC_ADDR.sub(r"<function \1>", obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _int_or(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _version(res: dict, task: str) -> Any:
    v = (res.get("versions") or {}).get(task, UNKNOWN)
    try:
        return float(v)
    except (TypeError, ValueError):
        return v  # 0.4 dev files write "Yaml"


def _dtype(config: dict, margs: dict[str, str]) -> Any:
    if md := config.get("model_dtype"):
        return str(md).removeprefix("torch.")
    return margs.get("dtype", UNKNOWN)


def task_factors(res: dict, task: str) -> Factors:
    """Factors of one task of an lm-eval results file."""
    config = res.get("config") or {}
    cfg = _clean((res.get("configs") or {}).get(task) or {})
    margs = _model_args(config)
    hw, env_libs = parse_pretty_env_info(res.get("pretty_env_info"))
    gen = dict(cfg.get("generation_kwargs") or {})
    if isinstance(config.get("gen_kwargs"), dict):
        gen.update(config["gen_kwargs"])  # --gen_kwargs on the command line overrides the task's
    is_gen = cfg.get("output_type") in ("generate_until", "greedy_until")
    n_shot = (res.get("n-shot") or {}).get(task, cfg.get("num_fewshot", UNKNOWN))
    n_docs = ((res.get("n-samples") or {}).get(task) or {}).get("effective", UNKNOWN)
    f = empty_factors()
    seeds = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
    f["seed"] = dict(zip(("python", "numpy", "torch", "fewshot"), (config.get(k, UNKNOWN) for k in seeds)))
    f["hardware"] = hw
    f["backend"] = {"name": config.get("model", UNKNOWN), "device": config.get("device") or UNKNOWN,
                    "scoring_strategy": UNKNOWN}
    f["dtype"] = {"dtype": _dtype(config, margs)}
    sizes = config.get("batch_sizes")
    f["batch_size"] = {"batch_size": _int_or(config.get("batch_size", UNKNOWN)),
                       "batch_sizes_used": {str(s): None for s in sizes} if sizes else UNKNOWN}
    f["padding"] = {"padding_side": UNKNOWN}
    if cfg:
        f["prompt_format"] = {k: cfg.get(k) for k in ("doc_to_text", "doc_to_choice", "doc_to_target", "description",
                                                      "target_delimiter", "fewshot_delimiter")}
        fs = cfg.get("fewshot_config") or {}
        zero = n_shot == 0
        f["fewshot"] = {"num_fewshot": n_shot,
                        "split": None if zero else (cfg.get("fewshot_split") or UNKNOWN),
                        "sampler": "none" if zero else {"default": "random"}.get(fs.get("sampler"),
                                                                                fs.get("sampler", UNKNOWN)),
                        # lm-eval records no few-shot ids; with 0 shots they are empty for every doc
                        "ids_sha256": sha256_json([[]] * n_docs) if zero and isinstance(n_docs, int) else UNKNOWN,
                        "order_seed": None}  # lm-eval keeps its sampler's order
        eos = (res.get("tokenizer_eos_token") or [None])[0]
        until = list(gen.get("until", [])) if is_gen else None
        if is_gen and eos and until is not None and eos not in until:
            until.append(eos)  # lm-eval's HFLM.generate_until appends the EOS string
        f["stop"] = {"until": until, "eos_token": eos if is_gen else None}
        f["max_tokens"] = {"max_gen_toks": gen.get("max_gen_toks", 256) if is_gen else None,
                           "max_length": res.get("max_length", UNKNOWN)}
        f["sampling"] = ({"do_sample": gen.get("do_sample", False), "temperature": gen.get("temperature", UNKNOWN),
                          "top_p": gen.get("top_p", UNKNOWN), "top_k": gen.get("top_k", UNKNOWN)}
                         if is_gen else {"do_sample": None})
        metrics = [m.get("metric") for m in cfg.get("metric_list") or []]
        f["metric_variant"] = {"metrics": metrics, "acc_norm": "char_length" if "acc_norm" in metrics else None,
                               "filters": [x.get("name") for x in cfg.get("filter_list") or []] or ["none"]}
        f["data"] = {"task": task, "task_version": _version(res, task),
                     "split": cfg.get("test_split") or cfg.get("validation_split") or UNKNOWN,
                     "content_sha256": UNKNOWN, "limit": _int_or(config.get("limit")), "n_docs": n_docs}
    else:
        f["data"] = {"task": task, "task_version": _version(res, task),
                     "limit": _int_or(config.get("limit", UNKNOWN)), "n_docs": n_docs}
        f["fewshot"] = {"num_fewshot": n_shot, "order_seed": None}
    if "chat_template" in res:
        f["chat_template"] = {"applied": res.get("chat_template") is not None,
                              "chat_template_sha256": res.get("chat_template_sha"),
                              "system_prompt": res.get("system_instruction")}
    f["model"] = {"name": margs.get("pretrained", res.get("model_name", UNKNOWN)),
                  "revision": margs.get("revision", config.get("model_revision", UNKNOWN)),
                  "weights_sha256": UNKNOWN, "num_parameters": config.get("model_num_parameters", UNKNOWN)}
    if "tokenizer_eos_token" in res:
        f["tokenizer"] = {"tokenizer_sha256": UNKNOWN,
                          **{k: (res.get(f"tokenizer_{k}_token") or [None])[0] for k in ("bos", "eos", "pad")}}
    libs = dict(env_libs)
    for key, name in (("lm_eval_version", "lm_eval"), ("transformers_version", "transformers")):
        if key in res:
            libs[name] = res[key]
    f["library_versions"] = libs
    return f


def _metric_name(key: str) -> tuple[str, str] | None:
    name, _, flt = key.partition(",")
    if name.endswith("_stderr") or name in ("alias", "name", "sample_len", "sample_count"):
        return None
    return name, flt or "none"


def _reported(task_res: dict) -> dict[str, tuple[float, float | None]]:
    out = {}
    for key, value in task_res.items():
        parsed = _metric_name(key)
        if parsed is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        name, flt = parsed
        se_key = f"{name}_stderr,{flt}" if "," in key else f"{name}_stderr"
        se = task_res.get(se_key)
        out[name if flt == "none" else f"{name},{flt}"] = (float(value),
                                                           float(se) if isinstance(se, (int, float)) else None)
    return out


def read_samples(path: Path, task: str) -> dict[int, DocOutcome]:
    """Per-doc outcomes of one ``samples_<task>_*.jsonl`` (one line per doc and filter).

    Raises:
        RepauditError: a line is not JSON or lacks ``doc_id``.
    """
    docs: dict[int, DocOutcome] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RepauditError(f"samples file '{path}' cannot be read ({exc.strerror or exc})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            s = json.loads(line)
            doc_id = int(s["doc_id"])
        except (ValueError, KeyError, TypeError):
            raise RepauditError(f"samples file '{path}' line {lineno} is not an lm-eval sample "
                                "(JSON with a doc_id)") from None
        flt = s.get("filter", "none")
        metric_names = s.get("metrics") or [k for k in ("acc", "acc_norm", "exact_match") if k in s]
        values = {(m if flt == "none" else f"{m},{flt}"): float(s[m]) for m in metric_names
                  if isinstance(s.get(m), (int, float, bool))}
        lls = pred = None
        resps = s.get("filtered_resps") or []
        if resps and isinstance(resps[0], (list, tuple)) and len(resps[0]) == 2:
            try:
                lls = [float(r[0]) for r in resps]
                pred = int(np.argmax(lls))
            except (TypeError, ValueError):
                lls = None
        elif resps and isinstance(resps[0], str):
            pred = resps[0]
        if doc_id in docs:  # another filter of the same doc
            docs[doc_id].metrics.update(values)
            continue
        args = s.get("arguments")
        ctx = None
        if isinstance(args, dict) and args:
            ctx = next(iter(args.values())).get("arg_0")
        target = s.get("target")
        docs[doc_id] = DocOutcome(doc_id=doc_id, doc_hash=s.get("doc_hash"),
                                  prompt_hash=s.get("prompt_hash")
                                  or (sha256_text(ctx) if isinstance(ctx, str) else None),
                                  target=None if target is None else str(target),
                                  cluster=None, metrics=values, prediction=pred, loglikelihoods=lls)
    return docs


def find_samples(results_path: Path, task: str) -> Path | None:
    """The ``samples_<task>_<timestamp>.jsonl`` beside ``results_<timestamp>.json``, if any."""
    m = _TS.search(results_path.name)
    pattern = f"samples_{task}_{m.group(1)}.jsonl" if m else f"samples_{task}_*.jsonl"
    found = sorted(results_path.parent.glob(pattern))
    return found[0] if len(found) == 1 else None


def load_lmeval(results_path: Path, samples: list[Path] | None = None, raw: Any = None) -> ComparableRun:
    """Import an lm-eval results file and its samples (given, or found beside it); ``raw`` is the
    file's already-parsed JSON, if the caller has it.

    Raises:
        RepauditError: not an lm-eval results file; a samples file whose task is not in the
            results, whose timestamp differs, or whose per-doc mean contradicts the reported score.
    """
    from repaudit.run.records import read_json

    res = read_json(results_path) if raw is None else raw
    if not is_lmeval_results(res):
        raise RepauditError(f"'{results_path}' is neither a repaudit run nor an lm-eval results file")
    version = res.get("lm_eval_version") or ("0.4.x" if "configs" in res else "0.3")
    run = ComparableRun(path=str(results_path), source=f"lm-eval {version}", factors={})
    explicit: dict[str, Path] = {}
    for sp in samples or []:
        m = re.search(r"samples_(.+?)_(\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$", sp.name)
        task = m.group(1) if m else None
        if task is None or task not in res["results"]:
            raise RepauditError(f"samples file '{sp}' does not belong to '{results_path}': its task "
                                f"'{task}' is not among the results' tasks")
        ts = _TS.search(results_path.name)
        if ts and m and ts.group(1) != m.group(2):
            raise RepauditError(f"samples file '{sp}' does not belong to '{results_path}': timestamps "
                                f"{m.group(2)} and {ts.group(1)} differ")
        explicit[task] = sp
    for task, task_res in res["results"].items():
        if not isinstance(task_res, dict):
            continue
        reported = _reported(task_res)
        sp = explicit.get(task) or (find_samples(results_path, task) if samples is None else None)
        docs = read_samples(sp, task) if sp else None
        if docs:
            _check_samples_match(sp, results_path, task, reported, docs)
        n = len(docs) if docs else ((res.get("n-samples") or {}).get(task) or {}).get("effective")
        run.tasks[task] = TaskOutcome(task=task, reported=reported, docs=docs, n_docs=n)
        run.factors[task] = task_factors(res, task)
    return run


def _check_samples_match(sp: Path, rp: Path, task: str, reported: dict, docs: dict[int, DocOutcome]) -> None:
    for key, (value, _) in reported.items():
        vals = [d.metrics[key] for d in docs.values() if key in d.metrics]
        if len(vals) == len(docs) and vals and abs(float(np.mean(vals)) - value) > 1e-6:
            raise RepauditError(f"samples file '{sp}' does not belong to '{rp}': its mean {key} "
                                f"{np.mean(vals):.6f} differs from the reported {value:.6f}")
