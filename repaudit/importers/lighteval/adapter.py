"""The lighteval adapter (:mod:`repaudit.importers.adapter`): results files with their details, for ``compare`` and
for the replay of log-likelihood tasks whose prompt function repaudit reimplements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register


@register
class LightevalAdapter(Adapter):
    """lighteval results files (``config_general`` with ``config_tasks``/``summary_tasks``/``results``) and their
    ``details_*.parquet``."""

    name = "lighteval"
    harness = "lighteval"
    fields = {
        "backend": "config_general.model_config (its class)", "device": "model_config.device",
        "dtype": "model_config.dtype, else config_general.model_dtype", "batch_size": "model_config.batch_size",
        "add_bos_token": "model_config.add_special_tokens (false: no BOS)",
        "chat_template": "model_config.override_chat_template / use_chat_template",
        "system_prompt": "model_config.system_prompt", "num_fewshot": "the task key's |k, else num_fewshots",
        "fewshot_split": "config_tasks.<task>.few_shots_split", "fewshot_selection": "few_shots_select",
        "prompt_format": "config_tasks.<task>.prompt_function", "until": "config_tasks.<task>.stop_sequence",
        "max_gen_toks": "config_tasks.<task>.generation_size", "max_length": "model_config.max_length",
        "do_sample": "generation_parameters.temperature > 0", "temperature": "generation_parameters.temperature",
        "top_p": "generation_parameters.top_p", "top_k": "generation_parameters.top_k",
        "sampling_seed": "generation_parameters.seed", "split": "config_tasks.<task>.evaluation_splits",
        "limit": "config_general.max_samples", "metric": "config_tasks.<task>.metrics"}
    not_replayed = {"chat_template": "lighteval does not record the templated prompt",
                    "device": "a replay runs on this machine's device"}

    def recognise(self, obj: Any) -> Recognition:
        return Recognition(isinstance(obj, dict) and "config_general" in obj
                           and ("config_tasks" in obj or "summary_tasks" in obj or "results" in obj))

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        from repaudit.importers.lighteval.results import load_lighteval

        run, res = load_lighteval(path, samples, obj)
        return Loaded(run=run, parsed=res, adapter=self, path=Path(path))

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        from repaudit.importers.lighteval.replay import config_from_lighteval

        outcome = loaded.run.tasks[task]
        cfg = config_from_lighteval(task, loaded.run.factors[task], loaded.path, outcome.docs, data_dir, model,
                                    cache_dir)
        return Replay(path=loaded.path, source=loaded.run.source, task=task, config=cfg,
                      factors=loaded.run.factors[task], docs=outcome.docs or {})
