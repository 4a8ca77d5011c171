"""The HELM adapter (:mod:`repaudit.importers.adapter`): a HELM run folder (``benchmark_output/runs/<suite>/<run>``
with ``run_spec.json``, ``stats.json``, ``per_instance_stats.json``, ``scenario_state.json``), for ``compare``,
``gate``, ``variance --across`` and ``export``.

A run folder is recognised by its ``run_spec.json`` (a ``name`` with an ``adapter_spec``); the folder, or the
``run_spec.json`` in it, is the run. HELM's other files given alone are named as what they are (:func:`helm_file`)
and the one to pass is said. A HELM run cannot be replayed: repaudit does not rebuild HELM's adapters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register

#: most run folders a folder given to compare is searched for (a suite's ``runs/v1`` holds hundreds)
MAX_RUNS = 2000
_PASS = "not a run: pass its run folder (the folder holding run_spec.json)"


def is_run_spec(obj: Any) -> bool:
    """Whether a parsed JSON document is a HELM ``run_spec.json``."""
    return (isinstance(obj, dict) and isinstance(obj.get("name"), str) and isinstance(obj.get("adapter_spec"), dict)
            and ("scenario_spec" in obj or "metric_specs" in obj))


def _first(obj: Any) -> dict:
    return obj[0] if isinstance(obj, list) and obj and isinstance(obj[0], dict) else {}


def helm_file(obj: Any) -> str:
    """What HELM file a parsed JSON document is, other than a run spec (``""``: none of HELM's): stats,
    per-instance stats, a scenario state, a scenario, instances, or the display files of HELM's front end."""
    first = _first(obj)
    if isinstance(first.get("name"), dict) and "name" in first["name"] and ("count" in first or "mean" in first):
        return f"a HELM stats.json (a run's aggregate statistics), {_PASS}"
    if "instance_id" in first and "stats" in first:
        return f"a HELM per_instance_stats.json (a run's statistics per instance), {_PASS}"
    if "instance_id" in first and ("predicted_text" in first or "request" in first):
        return f"a HELM display file (HELM's front end shows a run's predictions and requests with it), {_PASS}"
    if "id" in first and "references" in first and "input" in first:
        return f"a HELM instances.json (a scenario's instances), {_PASS}"
    if isinstance(obj, dict) and isinstance(obj.get("request_states"), list):
        return f"a HELM scenario_state.json (a run's requests and completions), {_PASS}"
    if isinstance(obj, dict) and {"name", "description", "definition_path"} <= obj.keys():
        return f"a HELM scenario.json (a scenario's description), {_PASS}"
    return ""


@register
class HelmAdapter(Adapter):
    """HELM run folders: ``run_spec.json`` (settings), ``stats.json`` (scores), ``per_instance_stats.json`` and
    ``scenario_state.json`` (per-instance outcomes)."""

    name = "helm"
    harness = "HELM"
    files = "HELM run folders"
    map_name = "helm"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.helm.record import SOURCES

        return SOURCES
    folder_runs = True

    def recognise_path(self, path: Path) -> Recognition:
        """A run folder, told by its ``run_spec.json`` (read whole: a few kilobytes), so that its large files are
        not read to find the run."""
        from repaudit.boundary import InputError, read_json

        spec = Path(path) / "run_spec.json"
        if not (Path(path).is_dir() and spec.is_file()) or spec.stat().st_size > (16 << 20):
            return Recognition(False)
        try:
            return Recognition(is_run_spec(read_json(spec)))
        except InputError:
            return Recognition(False)  # a damaged run_spec.json: the scan names it

    def recognise(self, obj: Any) -> Recognition:
        """A ``run_spec.json``; HELM's other files are declined with what they are (:func:`helm_file`)."""
        if is_run_spec(obj):
            return Recognition(True)
        return Recognition(False, helm_file(obj))

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        """The run folder of ``path`` (the folder, one below it, or the folder of a ``run_spec.json``) read once.

        Raises:
            InputError: ``--samples`` given, no run folder or several, a file that fails its checks.
        """
        from repaudit.boundary import InputError
        from repaudit.importers.helm.results import load_helm

        path = Path(path)
        if samples:
            raise InputError(path, None, "is a HELM run, whose folder holds its per-instance files: drop --samples")
        folder = run_folder(path) if path.is_dir() else path.parent
        run, parsed = load_helm(folder, obj if not path.is_dir() else None)
        return Loaded(run=run, parsed=parsed, adapter=self, path=folder)

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        """Never: a HELM run is not replayed.

        Raises:
            RepauditError: always, saying why.
        """
        raise RepauditError(f"'{loaded.path}' cannot be replayed: it is a HELM run, and repaudit does not rebuild "
                            "HELM's adapters (prompts, in-context examples, its model clients)")


def run_folder(folder: Path) -> Path:
    """The one HELM run folder under ``folder`` (itself, or the one folder below it holding a ``run_spec.json``).

    Raises:
        InputError: no run folder, or several (a suite's folder: the first few are named).
    """
    from repaudit.boundary import InputError

    if (folder / "run_spec.json").is_file():
        return folder
    found = []
    for n, p in enumerate(sorted(folder.rglob("run_spec.json"))):
        if n >= MAX_RUNS:
            break
        found.append(p.parent)
    if len(found) != 1:
        listed = ", ".join(str(p.relative_to(folder)) for p in found[:3])
        raise InputError(folder, None, f"holds {len(found)}{'+' if len(found) >= MAX_RUNS else ''} HELM run folders"
                                       f"{': ' + listed if listed else ''}{', …' if len(found) > 3 else ''}: pass one "
                                       "of them")
    return found[0]
