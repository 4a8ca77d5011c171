"""The input boundary: every file repaudit reads is parsed here — limits first — into typed models.

Order of checks for a JSON document:

1. the path: a readable regular file (not a directory, a FIFO or a symlink loop), a name the OS accepts, at
   most :data:`Limits.max_bytes`;
2. the bytes: UTF-8 (a leading byte-order mark is allowed);
3. the syntax: JSON (``NaN``/``Infinity`` accepted, as lm-eval writes them), nesting at most
   :data:`Limits.max_depth` deep;
4. the values: strings at most :data:`Limits.max_string` characters, integers within ±2^63, at most
   :data:`Limits.max_items` entries in one object or array;
5. the schema: a pydantic model. A wrong type or range is an :class:`InputError` naming the file, the
   JSON path (``$.configs.arc_easy.num_fewshot``) and what was expected — unless the field is marked
   :data:`Lenient` (optional information such as an lm-eval file's environment text), in which case
   it is dropped to ``None`` (*not recorded*) and a note says so.

Everything downstream works on the validated models, so a malformed file fails here with one line,
never later with a traceback.
"""

from __future__ import annotations

import errno
import json
import math
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, Union

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from repaudit.errors import RepauditError

#: the model a validation returns an instance of
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Limits:
    """What a file may hold before repaudit refuses to read it."""

    max_bytes: int = 1 << 30
    max_depth: int = 64
    max_string: int = 1 << 24
    max_items: int = 5_000_000
    max_int: int = (1 << 63) - 1
    #: a ZIP archive (an inspect_ai ``.eval`` log): entries in its central directory, and the declared
    #: uncompressed bytes of all the members read from it (each member is also held to ``max_bytes``)
    max_zip_entries: int = 200_000
    max_zip_read: int = 8 << 30


LIMITS = Limits()


class InputError(RepauditError):
    """A file that cannot be read as what it claims to be: one line with the file, the JSON path and
    the problem."""

    def __init__(self, file: Path | str, path: str | None, problem: str, where: str = ""):
        self.file, self.path, self.problem = str(file), path, problem
        loc = where + (f"{path}: " if path else "")
        super().__init__(f"'{file}': {loc}{problem}")


class _LenientMarker:
    """Annotation marker: a wrong value here means *not recorded*, not a bad file."""

    def __repr__(self) -> str:
        return "Lenient"


#: ``Annotated[T, Lenient]`` marks an optional field; see the module docstring.
Lenient = _LenientMarker()


def json_path(loc: tuple | list) -> str:
    """``("configs", "arc_easy", "metric_list", 0)`` → ``$.configs.arc_easy.metric_list[0]``;
    keys that are not identifiers are quoted: ``$.results["acc,none"]``."""
    if len(loc) > 12:  # a path 1,000 levels deep is not worth printing in full
        return f"{json_path(loc[:6])}…({len(loc) - 10} more)…{json_path(loc[-4:])[1:]}"
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + json.dumps(str(part), ensure_ascii=False)[:80] + "]"
    return out


def path_problem(path: Path, directory: bool = True) -> str | None:
    """What is wrong with ``path`` as an input, before anything opens it (a FIFO would block the open), or ``None``:
    it does not exist (a dangling symlink included), it is a symlink loop, it is not a regular file (a FIFO, a
    socket, a device; a directory too unless ``directory``), or it cannot be read."""
    import os
    import stat

    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        return ("does not exist (a symlink to a missing file)" if path.is_symlink() else "does not exist")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop (its links lead back to themselves): it names no file"
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    except ValueError:  # a NUL in the name
        return "is not a name the operating system accepts"
    if stat.S_ISDIR(st.st_mode):
        if not directory:
            return "is a directory, not a file"
        return None if os.access(path, os.R_OK | os.X_OK) else "cannot be read (permission denied)"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        return f"is {kind}, not a file"
    return None if os.access(path, os.R_OK) else "cannot be read (permission denied)"


def check_path(path: Path, directory: bool = True) -> Path:
    """``path`` if it can be read as an input (:func:`path_problem`).

    Raises:
        InputError: it cannot, with the reason: one line, like a missing file.
    """
    problem = path_problem(path, directory)
    if problem is not None:
        raise InputError(path, None, problem)
    return Path(path)


def read_bytes(path: Path, limits: Limits = LIMITS, what: str = "file") -> bytes:
    """The bytes of ``path``, after checking it is a readable regular file within the size limit.

    Raises:
        InputError: missing, a directory, a symlink loop, a FIFO or other special file, unreadable, a name the OS
            rejects, or too large.
    """
    path = Path(path)
    problem = path_problem(path)
    if problem is not None:
        raise InputError(path, None, problem)
    try:
        st = path.stat()
        if path.is_dir():
            raise InputError(path, None, f"is a directory, not a {what}")
        if st.st_size > limits.max_bytes:
            raise InputError(path, None, f"is {st.st_size:,} bytes, over the limit of {limits.max_bytes:,} "
                                         f"for a {what}")
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, None, "does not exist") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot be read ({exc.strerror or type(exc).__name__})") from None


def decode(data: bytes, path: Path) -> str:
    """UTF-8 text (a leading byte-order mark dropped). Raises InputError naming the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"is not UTF-8 text (invalid byte at offset {exc.start})") from None


def parse_json(text: str, path: Path, limits: Limits = LIMITS, where: str = "") -> Any:
    """Parse JSON and check :func:`check_values`. ``where`` prefixes messages (``line 12: ``).

    Raises:
        InputError: not JSON, nested too deep, or a value over a limit.
    """
    try:
        obj = json.loads(text)
    except RecursionError:
        raise InputError(path, None, f"nesting is deeper than {limits.max_depth} levels", where) from None
    except ValueError as exc:
        raise InputError(path, None, f"is not valid JSON ({str(exc).splitlines()[0]})", where) from None
    check_values(obj, path, limits, where)
    return obj


def read_json(path: Path, limits: Limits = LIMITS, what: str = "JSON file") -> Any:
    """:func:`read_bytes`, :func:`decode`, :func:`parse_json`."""
    return parse_json(decode(read_bytes(path, limits, what), Path(path)), Path(path), limits)


def check_values(obj: Any, path: Path, limits: Limits = LIMITS, where: str = "") -> None:
    """Depth, string length, integer range and container sizes of a parsed JSON value (iteratively).

    Raises:
        InputError: the first value over a limit, with its JSON path.
    """
    stack: list[tuple[Any, tuple, int]] = [(obj, (), 1)]
    while stack:
        value, loc, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > limits.max_depth:
                raise InputError(path, json_path(loc), f"nesting is deeper than {limits.max_depth} levels", where)
            if len(value) > limits.max_items:
                raise InputError(path, json_path(loc), f"holds {len(value):,} entries, over the limit of "
                                                       f"{limits.max_items:,}", where)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                if isinstance(k, str) and len(k) > limits.max_string:
                    raise InputError(path, json_path(loc), f"has a key of {len(k):,} characters", where)
                stack.append((v, (*loc, k), depth + 1))
        elif isinstance(value, str):
            if len(value) > limits.max_string:
                raise InputError(path, json_path(loc), f"a string of {len(value):,} characters is over "
                                                       f"the limit of {limits.max_string:,}", where)
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > limits.max_int:
            raise InputError(path, json_path(loc), f"the integer {_digits(value)} is outside ±2^63", where)


def _digits(value: int) -> str:
    s = str(value) if abs(value) < 10 ** 40 else f"with {len(str(abs(value)))} digits"
    return s


def finite(x: float | None) -> bool:
    """``x`` is a real number (not None, NaN or ±infinity)."""
    return x is not None and not isinstance(x, bool) and math.isfinite(x)


# ----------------------------------------------------------------------------- schema validation
def describe(err: ErrorDetails) -> str:
    """One phrase from a pydantic error: what was expected and what was found."""
    msg = err.get("msg", "invalid value")
    value = err.get("input")
    shown = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, (dict, list)) else (
        "an object" if isinstance(value, dict) else "an array")
    if len(shown) > 60:
        shown = shown[:59] + "…"
    if err.get("type") == "missing":
        return "is missing (required)"
    return f"{msg[0].lower()}{msg[1:]} (found {shown})"


def _unwrap(tp: Any) -> list[Any]:
    """The alternatives of an annotation (Optional/Union unwrapped, Annotated kept)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return [a for a in typing.get_args(tp) if a is not type(None)]
    return [tp]


def _is_lenient(tp: Any, metadata: list | None = None) -> bool:
    if any(m is Lenient for m in metadata or []):
        return True
    return typing.get_origin(tp) is typing.Annotated and any(m is Lenient for m in typing.get_args(tp)[1:])


def _lenient_prefix(model: type[BaseModel], loc: tuple) -> int | None:
    """Length of the longest prefix of ``loc`` that ends on a Lenient field (the smallest part of the
    data to drop), or ``None`` when no field along ``loc`` is Lenient."""
    tp: Any = model
    found: int | None = None
    for i, part in enumerate(loc):
        candidates = []
        for alt in _unwrap(tp):
            base = typing.get_args(alt)[0] if typing.get_origin(alt) is typing.Annotated else alt
            if isinstance(base, type) and issubclass(base, BaseModel):
                fields = base.model_fields
                name = next((n for n, f in fields.items() if (f.alias or n) == part), None)
                if name is None:
                    continue
                f = fields[name]
                if _is_lenient(f.annotation, f.metadata):
                    found = i + 1
                candidates.append(f.annotation)
            elif typing.get_origin(base) in (dict, list, tuple):
                args = typing.get_args(base)
                inner = args[-1] if args else Any
                if _is_lenient(inner):
                    found = i + 1
                candidates.append(inner)
        if not candidates:
            return found
        tp = Union[tuple(candidates)] if len(candidates) > 1 else candidates[0]  # noqa: UP007
    return found


def _drop(obj: Any, loc: tuple) -> Any:
    """A copy of ``obj`` without the value at ``loc`` (a dict key deleted, a list item removed;
    containers along the path copied). A dropped model field takes its default, ``None``."""
    if not loc:
        return None
    head, rest = loc[0], loc[1:]
    if isinstance(obj, dict) and head in obj:
        if not rest:
            return {k: v for k, v in obj.items() if k != head}
        return {**obj, head: _drop(obj[head], rest)}
    if isinstance(obj, list) and isinstance(head, int) and 0 <= head < len(obj):
        if not rest:
            return obj[:head] + obj[head + 1:]
        return [*obj[:head], _drop(obj[head], rest), *obj[head + 1:]]
    return obj


def _data_loc(obj: Any, loc: tuple) -> tuple:
    """The parts of a pydantic error location that index into the data (union member tags dropped)."""
    out = []
    for part in loc:
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
            out.append(part)
        elif isinstance(obj, list) and isinstance(part, int) and 0 <= part < len(obj):
            obj = obj[part]
            out.append(part)
        elif isinstance(obj, (dict, list)) and part == "[key]":
            continue
        elif not isinstance(obj, (dict, list)):
            break  # a tag after a scalar: the scalar itself is the bad value
    return tuple(out)


def validate(model: type[M], obj: Any, path: Path, prefix: tuple = (), where: str = "",
             schema: str = "") -> tuple[M, list[str]]:
    """Validate ``obj`` against ``model``; values under Lenient fields that fail become ``None`` with a note.

    ``prefix`` is the JSON location of ``obj`` inside its file, ``where`` a location before it
    (``line 12: ``), ``schema`` a name appended to messages (``run schema v2``). Returns
    ``(instance, notes)``.

    Raises:
        InputError: a value outside every Lenient field fails (the first one is named).
    """
    notes: list[str] = []
    for _ in range(10_000):
        try:
            return model.model_validate(obj), notes
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            err = errors[0]
            loc = _data_loc(obj, err["loc"])
            if err.get("type") == "missing" and err["loc"]:
                loc = (*loc, err["loc"][-1])
            n = _lenient_prefix(model, loc)
            if n is None:
                raise InputError(path, json_path((*prefix, *loc)), describe(err) + (f" ({schema})" if schema else ""),
                                 where) from None
            obj = _drop(obj, loc[:n])
            dropped = "" if n == len(loc) else " " + json_path((*prefix, *loc[:n]))
            notes.append(f"{where}{json_path((*prefix, *loc))}: {describe(err)};{dropped} treated as not recorded")
    raise InputError(path, json_path(prefix), "too many invalid values", where)


def read_yaml(path: Path, what: str, limits: Limits = LIMITS) -> Any:
    """A YAML document (safe types only) after the same checks as JSON: size, UTF-8, no aliases (an alias
    bomb expands exponentially), :func:`check_values`.

    Raises:
        InputError: unreadable, over a limit, not YAML, or using aliases.
    """
    import yaml

    path = Path(path)
    text = decode(read_bytes(path, limits, what), path)
    try:
        if any(isinstance(ev, yaml.AliasEvent) for ev in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise InputError(path, None, f"uses YAML aliases (*name), which a {what} may not")
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, None, f"is not valid YAML{f' (line {mark.line + 1})' if mark else ''}") from None
    except RecursionError:
        raise InputError(path, None, f"nesting is deeper than {limits.max_depth} levels") from None
    check_values(data, path, limits)
    return data
