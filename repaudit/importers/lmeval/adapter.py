"""The lm-evaluation-harness adapter (:mod:`repaudit.importers.adapter`): results files of 0.3 to 0.4.x with their
samples (GPT-NeoX ``evaluate.py`` outputs included), for ``compare`` and for the replay; the promptsource fork's
``table_results`` files (:mod:`.table`), for ``compare`` and series."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register

if TYPE_CHECKING:  # the reader's modules are imported when a file is read (start-up: issue 62)
    from repaudit.importers.lmeval.schema import LmevalResults


@dataclass
class LmevalParsed:
    """What the replay needs of a results file: the typed file and every task's recorded configuration
    (``configs.<task>``, cleaned of function addresses; empty in 0.3 files)."""

    results: LmevalResults
    configs: dict[str, dict[str, Any]]


@register
class LmevalAdapter(Adapter):
    """lm-eval results files (``results`` with ``config``/``versions``/``configs``) and their samples; the
    promptsource fork's ``table_results`` files (GPT-NeoX ``evaluate.py``)."""

    name = "lmeval"
    harness = "lm-evaluation-harness"
    files = "lm-eval 0.3–0.4 results files or output directories"
    replays = files
    map_name = "lmeval"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.lmeval.record import SOURCES

        return SOURCES

    def recognise(self, obj: Any) -> Recognition:
        from repaudit.importers.lmeval.table import is_table

        if isinstance(obj, dict) and isinstance(obj.get("results"), dict) and "config_general" not in obj and (
                "config" in obj or "versions" in obj or "configs" in obj):  # config_general: lighteval's
            return Recognition(True)
        if is_table(obj):  # the promptsource fork's table_results (GPT-NeoX evaluate.py)
            return Recognition(True)
        if isinstance(obj, list) and obj and isinstance(obj[0], dict) and "doc_id" in obj[0]:
            return Recognition(False, "a JSON array of lm-eval samples (lm-eval 0.4.0/0.4.1 wrote samples as an "
                                      "array), not a results file: pass the results file instead")
        if isinstance(obj, dict) and "doc_id" in obj and any(
                k in obj for k in ("resps", "arguments", "filtered_resps", "doc")):
            return Recognition(False, "one lm-eval samples record, not a results file: pass the results_*.json "
                                      "beside it (its samples are found by timestamp) or use --samples-a/--samples-b")
        return Recognition(False)

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        from repaudit.importers.lmeval.fields import clean
        from repaudit.importers.lmeval.results import load_lmeval
        from repaudit.importers.lmeval.table import is_table, load_table

        if obj is not None and is_table(obj):
            return Loaded(run=load_table(Path(path), obj), parsed=None, adapter=self, path=Path(path))
        run, res = load_lmeval(path, samples, obj, tokenizer)
        raw = obj.get("configs") if isinstance(obj, dict) else None
        configs = {t: clean(c) for t, c in raw.items() if isinstance(c, dict)} if isinstance(raw, dict) else {}
        return Loaded(run=run, parsed=LmevalParsed(res, configs), adapter=self, path=Path(path))

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        from repaudit.errors import RepauditError
        from repaudit.importers.lmeval.replay import config_from_lmeval

        if loaded.parsed is None:
            raise RepauditError(f"'{loaded.path}' cannot be replayed: a table_results file records no task "
                                "configuration, model or few-shot count")
        outcome = loaded.run.tasks[task]
        cfg = config_from_lmeval(task, loaded.run.factors[task], loaded.path, data_dir, model, cache_dir, task_config,
                                 configs=loaded.parsed.configs)
        return Replay(path=loaded.path, source=loaded.run.source, task=task, config=cfg,
                      factors=loaded.run.factors[task], docs=outcome.docs or {})
