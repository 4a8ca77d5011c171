"""Task configurations from lm-eval files: a task YAML, or ``configs.<task>`` of a results file.

YAML is read with PyYAML's safe loader plus lm-eval's two extensions: ``!function module.name``
(kept as the string ``<function module.name>``; repaudit never imports code named by a file) and
``include: other.yaml`` (relative to the including file; the including file's keys win).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from repaudit.boundary import LIMITS, InputError, check_values, decode, read_bytes, read_json
from repaudit.errors import RepauditError
from repaudit.importers.lmeval_factors import clean

#: includes followed at most this deep (a cycle is an error, not a hang)
MAX_INCLUDES = 8


class _Loader(yaml.SafeLoader):
    """Safe YAML plus lm-eval's ``!function`` tag."""


def _function(loader: _Loader, node: yaml.Node) -> str:
    return f"<function {loader.construct_scalar(node)}>"


_Loader.add_constructor("!function", _function)


def read_task_yaml(path: Path, depth: int = 0) -> dict[str, Any]:
    """One lm-eval task YAML with its includes merged.

    Raises:
        InputError: unreadable, not YAML, not a mapping, over a limit, or an include cycle.
    """
    path = Path(path)
    if depth > MAX_INCLUDES:
        raise InputError(path, None, f"includes are nested more than {MAX_INCLUDES} deep (a cycle?)")
    text = decode(read_bytes(path, LIMITS, "task YAML"), path)
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise InputError(path, None, f"is not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise InputError(path, None, "is not an lm-eval task YAML (expected a mapping of keys)")
    check_values(data, path)
    include = data.pop("include", None)
    if include is None:
        return data
    merged: dict[str, Any] = {}
    for inc in [include] if isinstance(include, str) else list(include):
        merged.update(read_task_yaml(path.parent / str(inc), depth + 1))
    merged.update(data)
    return merged


def load_task_config(path: Path, task: str | None) -> tuple[str, dict[str, Any]]:
    """``(task name, configuration)`` from a task YAML or from a results file's ``configs.<task>``.

    Raises:
        InputError / RepauditError: an unreadable file, a results file without that task's
            configuration, or a results file with several tasks and no ``task`` named.
    """
    path = Path(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        cfg = read_task_yaml(path)
        name = str(cfg.get("task") or task or path.stem)
        if task and cfg.get("task") and task != cfg["task"]:
            raise RepauditError(f"'{path}' defines task '{cfg['task']}', not '{task}'")
        return name, cfg
    from repaudit.boundary import validate
    from repaudit.importers.detect import sniff
    from repaudit.importers.lmeval_schema import LmevalResults

    obj = read_json(path, what="results file")
    if sniff(obj) != "lmeval.results":
        raise InputError(path, None, "is neither an lm-eval task YAML nor an lm-eval results file")
    validate(LmevalResults, obj, path)
    configs = obj.get("configs") or {}
    if not isinstance(configs, dict) or not configs:
        raise InputError(path, "$.configs", "records no task configurations (lm-eval 0.3 files do not): "
                                            "pass the task's YAML instead")
    if task is None:
        if len(configs) != 1:
            raise RepauditError(f"'{path}' records {len(configs)} task configurations "
                                f"({', '.join(sorted(configs)[:6])}): pick one with --task")
        task = next(iter(configs))
    if task not in configs or not isinstance(configs[task], dict):
        raise InputError(path, f"$.configs.{task}", f"is not recorded (tasks: {', '.join(sorted(configs)[:6])})")
    return task, clean(configs[task])


def configs_recorded(path: Path) -> bool:
    """Whether an lm-eval results file records task configurations (0.4 does, 0.3 does not)."""
    obj = read_json(Path(path), what="results file")
    return isinstance(obj, dict) and isinstance(obj.get("configs"), dict) and bool(obj["configs"])
