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
    files = "lighteval results files or output directories"
    replays = "lighteval results files (ARC, log-likelihood)"
    map_name = "lighteval"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.lighteval.record import SOURCES

        return SOURCES

    def recognise_path(self, path: Path) -> Recognition:
        try:
            with open(path, "rb") as fh:
                head = fh.read(4)
        except OSError:
            return Recognition(False)
        if head == b"PAR1":  # Parquet's magic bytes
            return Recognition(False, "a Parquet file (lighteval writes each task's per-doc details as "
                                      "details_<task>_<timestamp>.parquet), not a results file: pass the "
                                      "results_<timestamp>.json or the output directory (its details are found there)")
        return Recognition(False)

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
