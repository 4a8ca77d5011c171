"""The NeMo Evaluator adapter (:mod:`repaudit.importers.adapter`): a task's ``results.yml``, an invocation's output
folder of them, or the launcher's ``processed_results.json`` export — for ``compare``, ``gate``, ``variance --across``
and ``export`` (:mod:`.results`). A NeMo Evaluator run is not replayed: its harness runs inside NeMo's containers
against an endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register

#: the largest YAML file looked at to tell whether it is a results file (bytes)
MAX_SNIFF = 16 << 20


def is_results_yaml(obj: Any) -> bool:
    """Whether a parsed YAML document is a NeMo Evaluator ``results.yml``: ``results`` with ``tasks`` or ``groups``,
    beside ``config``, ``target`` or ``command``."""
    return (isinstance(obj, dict) and isinstance(obj.get("results"), dict)
            and any(k in obj["results"] for k in ("tasks", "groups"))
            and any(k in obj for k in ("config", "target", "command")))


def is_processed(obj: Any) -> bool:
    """Whether a parsed JSON document is a launcher export (``benchmarks.<b>.models``)."""
    bench = obj.get("benchmarks") if isinstance(obj, dict) else None
    return (isinstance(bench, dict) and bool(bench)
            and all(isinstance(b, dict) and isinstance(b.get("models"), dict) for b in bench.values()))


def _yaml(path: Path) -> Any:
    from repaudit.boundary import InputError, read_yaml

    try:
        return read_yaml(path, "YAML file")
    except InputError:
        return None


@register
class NemoAdapter(Adapter):
    """NeMo Evaluator: ``results.yml`` (one task), a folder of them (one invocation), ``processed_results.json``."""

    name = "nemo"
    harness = "NeMo Evaluator"
    files = "NeMo Evaluator results (results.yml, a folder of them, processed_results.json)"
    map_name = "nemo"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.nemo.results import SOURCES

        return SOURCES
    folder_runs = True

    def recognise_path(self, path: Path) -> Recognition:
        """A ``.yml``/``.yaml`` results file (read whole: a few kilobytes), or a folder holding results files."""
        path = Path(path)
        if path.is_dir():
            return Recognition(any(path.rglob("results.yml")) or any(path.rglob("results.yaml")))
        if path.suffix.lower() not in (".yml", ".yaml") or not path.is_file() or path.stat().st_size > MAX_SNIFF:
            return Recognition(False)
        return Recognition(is_results_yaml(_yaml(path)))

    def recognise(self, obj: Any) -> Recognition:
        return Recognition(is_processed(obj))

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        """The run of a results file, an output folder or an export.

        Raises:
            InputError: ``--samples`` given, or a file that fails its checks (:mod:`.results`).
        """
        from repaudit.boundary import InputError
        from repaudit.importers.nemo.results import RESULTS_NAMES, load_processed, load_results

        path = Path(path)
        if samples:
            raise InputError(path, None, "is a NeMo Evaluator run, which keeps no per-doc file repaudit reads: drop "
                                         "--samples")
        if path.is_dir() or path.suffix.lower() in (".yml", ".yaml") or path.name in RESULTS_NAMES:
            run = load_results(path)
        else:
            run = load_processed(path, obj)
        return Loaded(run=run, parsed=None, adapter=self, path=path)

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        """Never: a NeMo Evaluator run is not replayed.

        Raises:
            RepauditError: always, saying why.
        """
        raise RepauditError(f"'{loaded.path}' cannot be replayed: it is a NeMo Evaluator run, whose harness ran "
                            "inside NeMo's container against an endpoint; repaudit does not rebuild it")
