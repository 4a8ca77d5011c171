"""lm-eval task YAML files: PyYAML's safe loader plus lm-eval's two extensions.

``!function module.name`` is kept as the string ``<function module.name>`` (repaudit never imports code named by
a file) and ``include: other.yaml`` is followed relative to the including file (the including file's keys win).
Read here, in the tasks stage, because both the installed lm-eval's own task folder
(:mod:`repaudit.tasks.lmeval_installed`) and the importers (:mod:`repaudit.importers.lmeval.tasks`) read them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from repaudit.boundary import LIMITS, InputError, check_values, decode, read_bytes

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
