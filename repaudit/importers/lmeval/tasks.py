"""Task configurations from lm-eval files: a task YAML, or ``configs.<task>`` of a results file.

YAML is read by :func:`repaudit.tasks.lmeval_yaml.read_task_yaml` (safe loader, ``!function`` kept as a
string, ``include:`` followed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.boundary import InputError, read_json
from repaudit.errors import RepauditError
from repaudit.importers.lmeval.fields import clean
from repaudit.tasks.lmeval_yaml import read_task_yaml

__all__ = ["load_task_config", "read_task_yaml"]


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
    from repaudit.importers.lmeval.adapter import LmevalAdapter
    from repaudit.importers.lmeval.schema import LmevalResults

    obj = read_json(path, what="results file")
    if not LmevalAdapter().recognise(obj).ok:
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
