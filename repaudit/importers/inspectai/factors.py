"""An inspect_ai log's settings mapped onto repaudit's factor groups (:mod:`repaudit.importers.factors`).

``max_connections`` is the ``hf/`` provider's batch size; solved turns inside a sample's input count as
few-shot examples; the plan's solvers, the system message, sampling and epochs each land in their group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.hashing import sha256_text
from repaudit.importers.comparable import DocOutcome
from repaudit.importers.factors import UNKNOWN, Factors, empty_factors
from repaudit.importers.inspectai.schema import EvalLog, EvalSample, EvalSpec, GenerateConfig

#: metrics that describe another metric's spread, not a score
SPREAD_METRICS = ("stderr", "std", "var")


def _provider(model: str | None) -> str:
    return (model or "").split("/", 1)[0] or UNKNOWN


def _short(v: Any) -> Any:
    """A parameter value for the factor table: long texts by their sha256."""
    if isinstance(v, str) and len(v) > 120:
        return f"sha256 {sha256_text(v)[:12]} ({len(v)} chars)"
    return v


def _pathlike(v: Any) -> bool:
    return isinstance(v, str) and ("/" in v or "\\" in v) and len(v) < 4096


def task_factors(header: EvalLog, docs: dict[int, DocOutcome], by_id: dict[str, dict[int, EvalSample]]) -> Factors:
    """The factors of an inspect run, in repaudit's groups (see :mod:`repaudit.importers.factors`).

    ``max_connections`` is the batch size in inspect's ``hf/`` provider (requests in flight at once);
    paths in task arguments are volatile and kept by their file name only."""
    spec = header.eval
    gen = spec.model_generate_config or (header.plan.config if header.plan else None)
    margs = dict(spec.model_args or {})
    provider = _provider(spec.model)
    steps = (header.plan.steps or []) if header.plan else []
    system = next((s.params.get("template") for s in steps if s.solver.endswith("system_message") and s.params), None)
    if system is None and gen is not None:
        system = gen.system_message
    f = empty_factors()
    seed = gen.seed if gen else None
    f["seed"] = {"generation": UNKNOWN if seed is None else seed, "python": UNKNOWN, "torch": UNKNOWN}
    f["hardware"] = {"cpu_model": UNKNOWN, "gpus": UNKNOWN}
    f["backend"] = {"name": provider, "device": margs.pop("device", UNKNOWN), "scoring_strategy": UNKNOWN}
    f["dtype"] = {"dtype": str(margs.pop("dtype", margs.pop("torch_dtype", UNKNOWN)))}
    conn = gen.max_connections if gen else None
    f["batch_size"] = {"batch_size": conn if provider == "hf" and conn is not None else UNKNOWN,
                       "max_connections": UNKNOWN if conn is None else conn}
    f["padding"] = {"padding_side": UNKNOWN}
    f["bos"] = {"bos_first": UNKNOWN}
    f["prompt_format"] = {"plan": [f"{s.solver}(" + ", ".join(f"{k}={_short(v)!r}" for k, v in (s.params or {}).items()
                                                              if not s.solver.endswith("system_message")) + ")"
                                   for s in steps] or UNKNOWN}
    f["fewshot"] = _fewshot(by_id)
    f["chat_template"] = {"applied": True if provider == "hf" else UNKNOWN, "system_prompt": system}
    f["stop"] = {"until": list(gen.stop_seqs) if gen and gen.stop_seqs else None, "eos_token": UNKNOWN}
    f["max_tokens"] = {"max_gen_toks": gen.max_tokens if gen and gen.max_tokens is not None else UNKNOWN,
                       "max_length": UNKNOWN}
    f["sampling"] = _sampling(gen, margs.pop("do_sample", None))
    scorers = [s.scorer or s.name for s in (header.results.scores if header.results else [])]
    cfg = spec.config
    f["metric_variant"] = {"scorers": scorers or UNKNOWN,
                           "metrics": sorted({m for s in (header.results.scores if header.results else [])
                                              for m in s.metrics if m not in SPREAD_METRICS}) or UNKNOWN,
                           "epochs_reducer": (cfg.epochs_reducer if cfg and cfg.epochs_reducer else ["mean"])}
    path = margs.pop("model_path", None)
    f["model"] = {"name": path if provider == "hf" and path else (spec.model or UNKNOWN),
                  "provider": spec.model or UNKNOWN, "base_url": spec.model_base_url,
                  "args": {k: _short(v) for k, v in sorted(margs.items())}}
    f["data"] = _data(spec, docs)
    rev = spec.revision
    f["library_versions"] = dict(sorted((spec.packages or {}).items()))
    if rev is not None and rev.commit:
        f["library_versions"]["task_revision"] = rev.commit + ("+dirty" if rev.dirty else "")
    return f


def _fewshot(by_id: dict[str, dict[int, EvalSample]]) -> dict[str, Any]:
    """The ``fewshot`` group, read from the samples: inspect records no few-shot setting of its own."""
    # solved examples, where a task gives them, are earlier assistant turns of each sample's input
    inputs = [s.input for eps in by_id.values() for s in eps.values()]
    turns = {sum(1 for m in x if m.role == "assistant") if isinstance(x, list) else 0 for x in inputs}
    return {"num_fewshot": turns.pop() if len(turns) == 1 else UNKNOWN if not turns else "varies by sample",
            "as_multiturn": any(isinstance(x, list) for x in inputs) if inputs else UNKNOWN}


def _sampling(gen: GenerateConfig | None, do_sample: Any) -> dict[str, Any]:
    """The ``sampling`` group: the ``do_sample`` model argument where it is a bool, else told by the temperature."""
    temp = gen.temperature if gen else None
    return {"do_sample": do_sample if isinstance(do_sample, bool) else (
        UNKNOWN if temp is None else temp > 0), "temperature": UNKNOWN if temp is None else temp,
        "top_p": UNKNOWN if gen is None or gen.top_p is None else gen.top_p,
        "top_k": UNKNOWN if gen is None or gen.top_k is None else gen.top_k,
        "num_choices": 1 if gen is None or gen.num_choices is None else gen.num_choices}


def _data(spec: EvalSpec, docs: dict[int, DocOutcome]) -> dict[str, Any]:
    """The ``data`` group; task arguments that look like paths by their file name only (paths are volatile)."""
    ds, cfg = spec.dataset, spec.config
    task_args = {k: (Path(v).name if _pathlike(v) else _short(v)) for k, v in sorted((spec.task_args or {}).items())}
    return {"task": spec.task, "task_version": UNKNOWN if spec.task_version is None else spec.task_version,
            "dataset": (ds.name if ds and ds.name else UNKNOWN), "task_args": task_args,
            "limit": cfg.limit if cfg else UNKNOWN, "shuffled": ds.shuffled if ds else UNKNOWN,
            "sample_shuffle": cfg.sample_shuffle if cfg else UNKNOWN,
            "epochs": (cfg.epochs if cfg and cfg.epochs else 1), "n_docs": len(docs)}
