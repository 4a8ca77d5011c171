"""The inspect_ai adapter (:mod:`repaudit.importers.adapter`): ``.eval`` logs (ZIP) and ``.json`` logs, for
``compare`` and for the replay of multiple-choice runs on the ``hf/`` provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register
from repaudit.ziparchive import is_zip


def looks_like_log(obj: Any) -> bool:
    """Whether a parsed JSON document is an inspect ``EvalLog`` (``.json`` format)."""
    return (isinstance(obj, dict) and isinstance(obj.get("eval"), dict) and "task" in obj["eval"]
            and "version" in obj and ("plan" in obj or "samples" in obj or "results" in obj))


@register
class InspectAdapter(Adapter):
    """inspect_ai logs: an ``.eval`` ZIP (recognised by its bytes) or a ``.json`` log (by its keys)."""

    name = "inspect"
    harness = "inspect_ai"
    files = "inspect_ai logs (.eval or .json)"
    replays = "inspect_ai logs (multiple_choice on hf/)"
    map_name = "inspect"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.inspectai.factors import SOURCES

        return SOURCES

    def recognise_path(self, path: Path) -> Recognition:
        # an .eval log, or a ZIP that is not one (its reader says which)
        return Recognition(is_zip(path))

    def recognise(self, obj: Any) -> Recognition:
        return Recognition(looks_like_log(obj))

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        from repaudit.boundary import InputError
        from repaudit.importers.inspectai.log import load_inspect

        if samples:
            raise InputError(path, None, "is an inspect_ai log, which carries its own samples: drop --samples")
        run, log = load_inspect(path, obj)
        return Loaded(run=run, parsed=log, adapter=self, path=Path(path))

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        from repaudit.importers.inspectai.replay import config_from_inspect

        outcome = loaded.run.tasks[task]
        cfg, docs = config_from_inspect(loaded.path, loaded.run.factors[task], outcome.docs or {}, model, cache_dir,
                                        loaded.parsed)
        return Replay(path=loaded.path, source=loaded.run.source, task=cfg.task, config=cfg,
                      factors=loaded.run.factors[task], docs=docs)
