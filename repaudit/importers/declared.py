"""The per-harness maps, executed: every settings field a harness's files record, read from the dicts its reader
builds (the *sources*), with its provenance; and the harness's own defaults where a file is silent.

A field declares where each harness records it (``lmeval="gen_kwargs.temperature"``: :func:`repaudit.settings.
harness_map`); a reader builds its sources — ``{name: {key: (value, the file's JSON path)}}`` — and calls
:func:`read_declared`, which tries each declared place in order and records the first value present, coerced to the
field's type where it parses (``"8"`` → 8, ``"True"`` → True, ``torch.float16`` → ``float16``) and kept as written
otherwise. A new settings field with harness keys is read from every file that records it, by every reader, with no
reader changed. :func:`apply_defaults` then fills what a file leaves unsaid from a harness's table of its own
defaults (:class:`HarnessDefault`: the value, the harness versions it holds for, where in the harness's code it
lives) — shown as that harness's default, never as recorded.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from repaudit.settings import field_info, harness_map
from repaudit.vocabulary import Recorded, Value, default, derived, missing, recorded

#: a reader's source: key -> (value, the file's JSON path of that value)
Source = dict[str, tuple[Any, str]]


def source(obj: Mapping[str, Any] | None, prefix: str) -> Source:
    """A source from a dict of the file at JSON path ``prefix`` (``config.`` → ``config.batch_size``)."""
    if not isinstance(obj, Mapping):
        return {}
    return {str(k): (v, f"{prefix}{k}") for k, v in obj.items()}


def _members(path: str) -> set:
    ann = field_info(path).annotation
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return set(typing.get_args(ann))
    return {ann}


def coerce(path: str, raw: Any) -> tuple[Any, str]:
    """``raw`` as the settings field at ``path`` takes it, and a note (``as written`` when it does not parse as the
    field's type: ``auto`` as a batch size, a dtype a harness spells its own way)."""
    members = _members(path)
    value = raw
    if isinstance(value, str):
        stripped = value.strip()
        if bool in members and stripped.lower() in ("true", "false", "1", "0", "yes", "no"):
            value = stripped.lower() in ("true", "1", "yes")
        elif path.endswith("dtype"):
            value = stripped.removeprefix("torch.")
        elif str not in members and not any(typing.get_origin(m) is tuple for m in members):
            value = stripped  # a number or a name written with spaces; a text (a prompt, a stop sequence) keeps its own
    if isinstance(value, str) and any(typing.get_origin(m) is tuple for m in members):
        value = [value]  # one stop sequence written as a string
    if isinstance(value, tuple):
        value = list(value)
    try:
        checked = TypeAdapter(field_info(path).annotation).validate_python(value)
    except ValidationError:
        return value, "as written"
    if isinstance(checked, tuple):
        checked = list(checked)
    if isinstance(checked, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value), ""
    return checked, ""


def read_declared(harness: str, sources: dict[str, Source], rec: Recorded, overwrite: bool = False) -> Recorded:
    """Every settings field ``harness`` declares, read from ``sources`` into ``rec`` (in place; returned).

    A null is the value where the field takes None (``limit: null`` is no limit); elsewhere it counts as absent (the
    next place is tried), and a field whose every place is absent or null is not recorded (a null noted as such: the
    setting was left unset, which :func:`apply_defaults` may say more of). Fields ``rec`` already holds a known
    value for are left alone unless ``overwrite``.

    Raises:
        ValueError: a declaration names a source the reader does not build (a map that would never be read).
    """
    for path, places in harness_map(harness).items():
        if not overwrite and path in rec and rec[path].known:
            continue
        nulls = []
        for src, key in places:
            if src not in sources:
                raise ValueError(f"{path}: {harness} declares source '{src}', which its reader does not build "
                                 f"(it builds {', '.join(sorted(sources))})")
            if key not in sources[src]:
                continue
            value, where = sources[src][key]
            if value is None and type(None) in _members(path) and not _null_unknown(path):
                rec[path] = recorded(None, where)  # null is the setting's own "none" (no limit, no system prompt)
                break
            if value is None:
                nulls.append(where)
                continue
            got, note = coerce(path, value)
            rec[path] = recorded(got, where, note)
            break
        else:
            if path not in rec or not rec[path].known:
                rec[path] = Value(key=nulls[0], note="null in the file") if nulls else missing()
    return rec


@dataclass(frozen=True)
class HarnessDefault:
    """A harness's own default for a setting its files may leave unsaid.

    Attributes:
        value: the default (``None`` with a ``note``: the setting left unset, and what the harness then does).
        where: where in the harness's code it lives (module and function or line).
        versions: the version prefixes it holds for (``("0.4",)``); empty: every version the reader reads.
        note: what the harness does when the setting is unset (for ``value`` None).
        applies: whether the default applies to this task's record (a generation default to generation tasks).
    """

    value: Any
    where: str
    versions: tuple[str, ...] = ()
    note: str = ""
    applies: Callable[[Recorded], bool] | None = None

    def holds_for(self, version: str | None) -> bool:
        """Whether the default holds for ``version`` (unknown: it may; the value is then not shown)."""
        return version is None or not self.versions or any(version.startswith(v) for v in self.versions)


def apply_defaults(rec: Recorded, harness: str, version: str | None, table: Mapping[str, HarnessDefault]
                   ) -> Recorded:
    """The defaults of ``table`` for every path ``rec`` does not know (in place; returned), as ``harness``'s default
    at ``version`` (``None``: the file does not record its version — the default is then not shown as a value)."""
    for path, d in table.items():
        if rec.known(path) or not d.holds_for(version):
            continue
        if d.applies is not None and not d.applies(rec):
            continue
        rec[path] = default(d.value, harness, version, d.where, d.note)
    return rec


def generative(rec: Recorded) -> bool:
    """Whether the task's recorded output type is a generation (for :attr:`HarnessDefault.applies`)."""
    return rec.value("data.output_type") in ("generate_until", "greedy_until", "generation")


def greedy_at_zero(rec: Recorded, how: str) -> Recorded:
    """A recorded temperature of 0 where the file records no ``do_sample``: greedy decoding, derived (``how``: why
    that harness decodes greedily at 0), so that sampling settings do not apply
    (:func:`repaudit.vocabulary.apply_conditions`). In place; returned."""
    t = rec.value("generation.temperature")
    if not rec.known("generation.do_sample") and isinstance(t, (int, float)) and not isinstance(t, bool) and t == 0:
        rec["generation.do_sample"] = derived(False, how)
    return rec


def _null_unknown(path: str) -> bool:
    """Whether the field's None means "not told" (a served model's dtype), which no file states as a setting."""
    extra = field_info(path).json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("null_unknown"))
