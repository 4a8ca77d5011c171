"""Replay of an lm-eval run: the RunConfig that re-runs one of its tasks with repaudit's lm-eval-compatible path,
read from the task's record (:mod:`repaudit.importers.lmeval.record`): what the file records, and lm-eval's own
defaults where the file records the version they hold for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.run.config import RunConfig
from repaudit.settings import field_info, harness_map
from repaudit.vocabulary import Recorded

#: lm-eval ``--model`` names (0.3's included) -> repaudit backend
LMEVAL_BACKENDS = {"hf": "hf", "hf-auto": "hf", "huggingface": "hf", "hf-causal": "hf",
                   "hf-causal-experimental": "hf", "vllm": "vllm", "local-completions": "openai",
                   "openai-completions": "openai", "local-chat-completions": "openai",
                   "openai-chat-completions": "openai"}
#: lm-eval's API models that send conversations (``/v1/chat/completions``): replayed with the chat template
CHAT_BACKENDS = ("local-chat-completions", "openai-chat-completions")
#: lm-eval's ``TemplateAPI`` defaults (lm_eval/models/api_models.py, 0.4.13): requests per batch and in flight
API_DEFAULTS = {"batch_size": 1, "num_concurrent": 1}


def _setting(rec: Recorded, path: str, fallback: Any = None) -> Any:
    """A setting the replay can take at its field's default where the run did not state it (it ran at lm-eval's
    default, which is repaudit's: the lm-eval-compatible path) or where it does not apply."""
    v = rec.get(path)
    if v is None or not v.known or v.value is None:
        return field_info(path).get_default() if fallback is None else fallback
    return v.value


def _generation(rec: Recorded) -> dict[str, Any]:
    """A generate_until task's RunConfig settings: every generation field lm-eval's files can hold (the fields'
    lmeval keys), each at its default where the run did not state it."""
    out: dict[str, Any] = {"until": [u for u in _setting(rec, "generation.until", []) or []],
                           "stop_at_eos": bool(_setting(rec, "generation.stop_at_eos", True)),
                           "max_gen_toks": rec.value("generation.max_gen_toks")}
    for path in harness_map("lmeval"):
        name = path.partition(".")[2]
        if path.startswith("generation.") and name not in out:
            default = field_info(path).get_default()
            value = _setting(rec, path)
            out[name] = type(default)(value) if default is not None and value is not None else value
    return out


def config_from_lmeval(task: str, rec: Recorded, path: Path, data_dir: Path | None,
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
    lm_backend = str(rec.need("serving.backend", path))
    if lm_backend not in LMEVAL_BACKENDS:
        raise RepauditError(f"'{path}' ran with lm-eval's '{lm_backend}' model type, which repaudit cannot replay "
                            f"(replayable: {', '.join(sorted(LMEVAL_BACKENDS))})")
    if LMEVAL_BACKENDS[lm_backend] == "openai":
        return RunConfig(**_served(task, rec, path, lm_backend, recorded, data_dir, model, cache_dir))
    dtype = str(rec.need("serving.dtype", path)).removeprefix("torch.")
    batch_size = rec.need("serving.batch_size", path)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool):
        raise RepauditError(f"'{path}' ran with batch size {batch_size!r}: replay needs a number")
    cfg = dict(_common(task, rec, path, recorded, data_dir, model, cache_dir), dtype=dtype, batch_size=batch_size,
               device="cpu", backend=LMEVAL_BACKENDS[lm_backend])
    return RunConfig(**cfg)


def _common(task: str, rec: Recorded, path: Path, recorded: dict[str, Any] | None, data_dir: Path | None,
            model: str | None, cache_dir: Path | None) -> dict[str, Any]:
    """The RunConfig fields every lm-eval replay reads the same way: the task, docs, n-shot, seeds, prompt settings,
    BOS and a generation task's settings."""
    cfg = dict(task=task, task_config=recorded, model=model or str(rec.need("model.name", path)), data_dir=data_dir,
               cache_dir=cache_dir, split=rec.value("data.split"), limit=rec.value("data.limit"),
               num_fewshot=int(rec.need("fewshot.num_fewshot", path)), prompt_format="lmeval",
               seed=_setting(rec, "seeds.seed"), numpy_seed=_setting(rec, "seeds.numpy_seed"),
               torch_seed=_setting(rec, "seeds.torch_seed"), fewshot_seed=_setting(rec, "seeds.fewshot_seed"),
               chat_template=bool(rec.value("prompt.chat_template", False)),
               fewshot_as_multiturn=bool(rec.value("prompt.fewshot_as_multiturn", False)),
               system_prompt=rec.value("prompt.system_prompt"),
               add_bos_token=bos if isinstance(bos := rec.value("serving.add_bos_token"), bool) else None)
    if rec.value("data.output_type") in ("generate_until", "greedy_until"):
        cfg.update(_generation(rec))
    return cfg


def _served(task: str, rec: Recorded, path: Path, lm_backend: str, recorded: dict[str, Any] | None,
            data_dir: Path | None, model: str | None, cache_dir: Path | None) -> dict[str, Any]:
    """The RunConfig fields of an lm-eval API run (``local-completions`` and its kin): the served model id and endpoint
    its ``model_args`` record (``base_url`` is lm-eval's full route, ``…/v1/completions``: its ``/v1`` base is
    kept), ``batch_size`` (requests per batch) and ``num_concurrent`` at lm-eval's API defaults where unrecorded; no
    dtype or device (the server's). A chat model (``local-chat-completions``) replays with the chat template.

    Raises:
        RepauditError: no ``base_url`` recorded and none given, or a batch size that is not a number.
    """
    from repaudit.backends.endpoint import EndpointSettings

    margs = rec.value("model.args") or {}
    url = rec.value("model.base_url") or (margs.get("base_url") if isinstance(margs, dict) else None)
    if not isinstance(url, str) or not url:
        raise RepauditError(f"'{path}' records no base_url for its '{lm_backend}' model: replay it with --base-url")
    for route in ("/chat/completions", "/completions"):
        url = url.rstrip("/").removesuffix(route)
    batch_size = rec.value("serving.batch_size", API_DEFAULTS["batch_size"])
    if not isinstance(batch_size, int) or isinstance(batch_size, bool):
        raise RepauditError(f"'{path}' ran with batch size {batch_size!r}: replay needs a number")
    concurrent = rec.value("serving.max_concurrency", API_DEFAULTS["num_concurrent"])
    cfg = _common(task, rec, path, recorded, data_dir, model, cache_dir)
    if lm_backend in CHAT_BACKENDS:
        cfg["chat_template"] = True
    return dict(cfg, backend="openai", dtype=None, device=None, batch_size=batch_size,
                max_concurrency=int(concurrent), endpoint=EndpointSettings(base_url=url))
