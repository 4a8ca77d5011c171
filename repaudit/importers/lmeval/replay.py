"""Replay of an lm-eval run: the RunConfig that re-runs one of its tasks with repaudit's lm-eval-compatible path,
read from the factors :mod:`repaudit.importers.lmeval.factors` mapped out of the results file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.importers.factors import UNKNOWN
from repaudit.importers.factors import recorded as recorded_value
from repaudit.run.config import RunConfig
from repaudit.run.factors import FACTORS
from repaudit.settings import field_info, named_in

#: lm-eval ``--model`` names (0.3's included) -> repaudit backend
LMEVAL_BACKENDS = {"hf": "hf", "hf-auto": "hf", "huggingface": "hf", "hf-causal": "hf",
                   "hf-causal-experimental": "hf", "vllm": "vllm"}


def _told(group: dict, key: str, default: Any) -> Any:
    """``group[key]``, or ``default`` where the run's gen_kwargs did not state it (it ran at lm-eval's default)."""
    v = group.get(key)
    return default if v is None or v == UNKNOWN else v


def _generation(factors: dict[str, dict[str, Any]], until: list[str], eos: Any) -> dict[str, Any]:
    """A generate_until task's RunConfig settings; those its gen_kwargs did not state at lm-eval's default."""
    out = dict(until=[u for u in until if u != eos], stop_at_eos=eos in until,
               max_gen_toks=_told(factors.get("max_tokens", {}), "max_gen_toks", None),
               do_sample=str(_told(factors.get("sampling", {}), "do_sample", False)).lower() in ("true", "1"))
    # every other generation setting lm-eval takes, from its compare field; unstated: the setting's default
    for factor in FACTORS:
        name = factor.path.partition(".")[2] if factor.path and factor.path.startswith("generation.") else None
        if name in named_in("lmeval") and name not in ("max_gen_toks", "do_sample") and factor.compare:
            group, key = factor.compare
            default = field_info(factor.path).get_default()
            out[name] = type(default)(_told(factors.get(group, {}), key, default))
    return out


def config_from_lmeval(task: str, factors: dict[str, dict[str, Any]], path: Path, data_dir: Path | None,
                       model: str | None = None, cache_dir: Path | None = None,
                       task_config: dict[str, Any] | None = None,
                       configs: dict[str, dict[str, Any]] | None = None) -> RunConfig:
    """The RunConfig that replays one task of an lm-eval run with repaudit's lm-eval-compatible path.

    The task is built from the configuration the file records (``configs.<task>``: templates,
    delimiters, splits, data files, metrics, filters); files without one (lm-eval 0.3) use
    repaudit's own definition of the task in the ``lmeval`` format, or ``task_config`` (``--task-config``)
    when given. The replay's fidelity (per-doc agreement with the recorded samples) shows whether either held.
    ``configs``: the file's ``configs`` block, task → its configuration (cleaned), as the adapter read it.

    Raises:
        RepauditError: a setting the file does not record (e.g. ``batch_size`` "auto" without the
            sizes used), or a task repaudit does not define.
    """
    from repaudit.run.runner import get_task

    # lm-eval 0.4 records the task's whole configuration: replay that, not repaudit's own definition; its
    # errors (an unknown !function, a bad template) are the real reason a replay fails, so they are raised
    recorded = task_config if task_config is not None else (configs or {}).get(task)
    get_task(task, recorded)

    def need(group: str, name: str) -> Any:
        return recorded_value(factors, group, name, path)

    dtype = str(need("dtype", "dtype")).removeprefix("torch.")
    lm_backend = str(need("backend", "name"))
    if lm_backend not in LMEVAL_BACKENDS:
        raise RepauditError(f"'{path}' ran with lm-eval's '{lm_backend}' model type, which repaudit cannot replay "
                            f"(replayable: {', '.join(sorted(LMEVAL_BACKENDS))})")
    batch_size = need("batch_size", "batch_size")
    if not isinstance(batch_size, int):
        raise RepauditError(f"'{path}' ran with batch size {batch_size!r}: replay needs a number")
    seeds = factors.get("seed", {})
    stop = factors.get("stop", {})
    eos = stop.get("eos_token")
    until = stop.get("until")
    split = factors.get("data", {}).get("split")
    cfg = dict(task=task, task_config=recorded, model=model or str(need("model", "name")), data_dir=data_dir,
               cache_dir=cache_dir,
               split=None if split == UNKNOWN else split, limit=factors.get("data", {}).get("limit"),
               num_fewshot=int(need("fewshot", "num_fewshot")), prompt_format="lmeval", dtype=dtype,
               batch_size=batch_size, device="cpu", backend=LMEVAL_BACKENDS[lm_backend],
               seed=seeds.get("python", 0), numpy_seed=seeds.get("numpy", 1234), torch_seed=seeds.get("torch", 1234),
               fewshot_seed=seeds.get("fewshot", 1234),
               chat_template=bool(factors.get("chat_template", {}).get("applied", False)),
               fewshot_as_multiturn=bool(factors.get("chat_template", {}).get("fewshot_as_multiturn", False)),
               system_prompt=factors.get("chat_template", {}).get("system_prompt"),
               add_bos_token=bos if isinstance(bos := factors.get("bos", {}).get("bos_first"), bool) else None)
    if until is not None:
        cfg.update(_generation(factors, until, eos))
    if any(v == UNKNOWN for v in cfg.values()):
        bad = [k for k, v in cfg.items() if v == UNKNOWN]
        raise RepauditError(f"'{path}' does not record {', '.join(bad)}: it cannot be replayed")
    return RunConfig(**cfg)
