"""Python functions of lm-eval task configurations, taken from the installed lm-eval's own task folder.

A results file records a YAML ``!function utils.process_docs`` only by its name (``<function process_docs at
0x…>``) or by its source, depending on the lm-eval version (0.4.7 and 0.4.13 record the source: seen in
``../shared/lmeval_public`` and in runs made here). repaudit never runs code from a file;
with the ``lmeval`` extra installed (``pip install 'repaudit[lmeval]'``) it runs lm-eval's own function instead:

1. the installed lm-eval is located without importing it (``importlib.util.find_spec``);
2. the YAML under ``lm_eval/tasks`` that defines task T (a ``task: T`` line) is found, and the file of its
   include chain that sets the field (``process_docs: !function utils.process_docs``) names the module,
   ``utils.py`` beside that YAML;
3. the function name there must be the recorded one; a recorded source must equal the installed function's
   source (whitespace aside), else the task changed between the lm-eval that ran and the one installed, and
   the replay is refused;
4. the module is loaded from its file as lm-eval's own YAML loader does (``spec_from_file_location``).

Without lm-eval installed every step answers ``None`` and the caller's one-line error stands. ``process_docs``
maps a whole split (a ``datasets.Dataset``) in lm-eval, and is applied to the whole split here.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

#: include chains followed at most this deep
MAX_INCLUDES = 8
_TASK_LINE = re.compile(r"^task:\s*['\"]?([^'\"\s#]+)['\"]?\s*(?:#.*)?$", re.M)


@lru_cache(maxsize=1)
def installed_lmeval() -> tuple[Path, str] | None:
    """``(lm_eval/tasks folder, version)`` of the installed lm-eval, or ``None``."""
    try:
        spec = importlib.util.find_spec("lm_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("lm_eval")
    except PackageNotFoundError:
        v = "?"
    tasks = Path(next(iter(spec.submodule_search_locations))) / "tasks"
    return (tasks, v) if tasks.is_dir() else None


@lru_cache(maxsize=1)
def _task_index() -> dict[str, Path]:
    """task name -> the YAML that defines it (``task: name``), over the installed lm-eval's task folder."""
    found = installed_lmeval()
    if found is None:
        return {}
    index: dict[str, Path] = {}
    for path in sorted(found[0].rglob("*.yaml")) + sorted(found[0].rglob("*_yaml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for m in _TASK_LINE.finditer(text):
            index.setdefault(m.group(1), path)
    return index


class _Loader(yaml.SafeLoader):
    """Safe YAML with lm-eval's ``!function`` tag kept as ``("function", "module.name")``."""


_Loader.add_constructor("!function", lambda loader, node: ("function", loader.construct_scalar(node)))


def _raw(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _defining(path: Path, field: str, depth: int = 0) -> tuple[Path, Any] | None:
    """``(YAML file, value)`` of ``field`` (a dotted path such as ``fewshot_config.samples``) along ``path``'s
    include chain; the including file wins, as in lm-eval."""
    if depth > MAX_INCLUDES:
        return None
    data = _raw(path)
    value: Any = data
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is not None:
        return path, value
    include = data.get("include")
    for inc in ([include] if isinstance(include, str) else list(include or []))[::-1]:
        found = _defining((path.parent / str(inc)), field, depth + 1)
        if found is not None:
            return found
    return None


def _normalise(source: str) -> str:
    return "".join(source.split())


@lru_cache(maxsize=256)
def _module(path: Path) -> Any:
    name = "repaudit_lmeval_task_" + re.sub(r"\W", "_", str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))  # lm-eval's helpers import their neighbours by plain name
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    sys.modules[name] = module
    return module


class Mismatch(Exception):
    """The recorded function is not the installed one (another name, or another source), or the installed one
    cannot be loaded here."""


def installed_function(task: str, field: str, name: str, source: str | None = None) -> tuple[Callable, str] | None:
    """lm-eval's own function recorded as ``field`` of ``task``, and where it came from
    (``lm-eval 0.4.13 tasks/leaderboard/gpqa/utils.py:process_docs``); ``None`` where lm-eval is not installed
    or does not define the task or the field as a function.

    Raises:
        Mismatch: the installed task names another function, or a recorded source differs from the installed
            function's (the task changed between the lm-eval that ran and the one installed).
    """
    found = installed_lmeval()
    if found is None:
        return None
    tasks_dir, version = found
    yaml_path = _task_index().get(task)
    if yaml_path is None:
        return None
    hit = _defining(yaml_path, field)
    if hit is None or not (isinstance(hit[1], tuple) and hit[1][0] == "function"):
        return None
    where, (_, dotted) = hit
    module_name, _, attr = str(dotted).rpartition(".")
    if attr != name:
        raise Mismatch(f"the installed lm-eval {version} defines {task}.{field} as '{dotted}', not '{name}'")
    file = where.parent / (module_name.replace(".", "/") + ".py")
    if not file.is_file():
        return None
    try:
        module = _module(file)
    except Exception as exc:  # noqa: BLE001 - lm-eval's own module failing to import is a fact to report
        first = str(exc).splitlines()[0][:160] if str(exc) else ""
        raise Mismatch(f"the installed lm-eval {version}'s own tasks/{file.relative_to(tasks_dir)} cannot be imported "
                       f"here ({type(exc).__name__}: {first})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        return None
    if source is not None:
        import inspect

        try:
            installed = inspect.getsource(fn)
        except (OSError, TypeError):
            installed = None
        if installed is not None and _normalise(installed) != _normalise(source):
            raise Mismatch(f"{task}.{field} '{name}' recorded in the file differs from the installed lm-eval "
                           f"{version}'s: the task changed between the lm-eval that ran and the one installed")
    return fn, f"lm-eval {version} tasks/{file.relative_to(tasks_dir)}:{attr}"


def installed_task_config(task: str) -> dict[str, Any] | None:
    """The configuration of ``task`` as the installed lm-eval's own YAML defines it (includes merged, functions
    as ``<function module.name>``, read with the safe loader of :mod:`repaudit.tasks.lmeval_yaml`), or
    ``None`` where lm-eval is not installed or has no such task."""
    path = _task_index().get(task)
    if path is None:
        return None
    from repaudit.tasks.lmeval_yaml import read_task_yaml

    cfg = read_task_yaml(path)
    return cfg if cfg.get("task") == task else None
