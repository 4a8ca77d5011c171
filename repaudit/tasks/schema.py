"""Small checks of raw data rows, so a bad row is named when it is read, not when it is scored.

Each helper returns ``None`` when the field is valid and a short phrase saying what is wrong
otherwise; :meth:`repaudit.tasks.base.Task.check_schema` chains them.
"""

from __future__ import annotations

from typing import Any


def text(row: dict[str, Any], key: str, empty_ok: bool = False) -> str | None:
    """``row[key]`` is a string (non-empty unless ``empty_ok``)."""
    v = row.get(key)
    if not isinstance(v, str):
        return f"field '{key}' is {_kind(v)}, expected a string"
    if not empty_ok and not v.strip():
        return f"field '{key}' is an empty string"
    return None


def text_list(row: dict[str, Any], key: str, min_len: int = 2, exact: int | None = None) -> str | None:
    """``row[key]`` is a list of at least ``min_len`` (or exactly ``exact``) strings."""
    return text_list_value(row.get(key), key, min_len, exact)


def text_list_value(v: Any, key: str, min_len: int = 2, exact: int | None = None) -> str | None:
    """As :func:`text_list`, for a value already taken out of the row."""
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        return f"field '{key}' is {_kind(v)}, expected a list of strings"
    if exact is not None and len(v) != exact:
        return f"field '{key}' has {len(v)} entries, expected {exact}"
    if len(v) < min_len:
        return f"field '{key}' has {len(v)} entries, expected at least {min_len}"
    return None


def index(row: dict[str, Any], key: str, n: int, as_text: bool = False) -> str | None:
    """``row[key]`` is an index in ``range(n)`` — an int, or with ``as_text`` also a string of digits."""
    v = row.get(key)
    if isinstance(v, bool) or not (isinstance(v, int) or (as_text and isinstance(v, str) and v.strip().isdigit())):
        return f"field '{key}' is {_kind(v)}, expected an index below {n}"
    if not 0 <= int(v) < n:
        return f"field '{key}' is {int(v)}, outside 0..{n - 1}"
    return None


def one_of(row: dict[str, Any], key: str, allowed: list[Any]) -> str | None:
    """``row[key]`` is one of ``allowed``."""
    v = row.get(key)
    if v not in allowed or isinstance(v, bool) != any(isinstance(a, bool) for a in allowed):
        shown = ", ".join(repr(a) for a in allowed[:8])
        return f"field '{key}' is {_short(v)}, expected one of {shown}"
    return None


def first(*problems: str | None) -> str | None:
    """The first problem found, or ``None``."""
    return next((p for p in problems if p), None)


def _kind(v: Any) -> str:
    return "missing (null)" if v is None else f"a {type(v).__name__} ({_short(v)})"


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:39] + "…"
