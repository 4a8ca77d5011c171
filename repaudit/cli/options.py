"""Command-line options of every factor, declared once: built from the registry (:mod:`repaudit.run.factors`)
and the fields of the settings records (:mod:`repaudit.settings`: type, default, doc), and added to a command's
signature — the way vLLM builds its engine options from one dataclass (``EngineArgs.add_cli_args``).

A command keeps its own options (``--task``, ``--model``, ``-o``, …) as parameters and gets one more
keyword parameter per factor field; :func:`factor_settings` turns what typer parsed into RunConfig fields.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from repaudit.run.config import option_name
from repaudit.run.factors import FACTORS, Factor
from repaudit.settings import STAGES, stage_of

#: fields that are not options (a recorded task configuration is given as a file with --task-config)
_NOT_OPTIONS = {"task_config"}


def _field_factor() -> dict[str, Factor]:
    return {fld: f for f in FACTORS if f.supports("option") for fld in f.fields if fld not in _NOT_OPTIONS}


def _info(field: str):
    """The settings record field behind an option (its type, default and doc).

    Raises:
        KeyError: ``field`` is no settings field.
    """
    stage = stage_of(field)
    if stage is None:
        raise KeyError(field)
    return STAGES[stage].model_fields[field]


def _help(field: str, f: Factor) -> str:
    desc = " ".join((_info(field).description or "").split())
    text = f.doc if field == f.fields[0] else desc
    if f.values and len(_members(field)) > 1:  # a number, or one of the words
        text += f" (a number, or {', '.join(map(str, f.values))})"
    elif f.values:
        text += f" (one of {', '.join(map(str, f.values))})"
    return text + (f" [factor: {f.name}]" if field != f.name else "")


def _members(field: str) -> set:
    """The types a field's union takes besides None (the field's own type where it is no union)."""
    ann = _info(field).annotation
    union = isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union
    return set(typing.get_args(ann)) - {type(None)} if union else {ann}


def _annotation(field: str, f: Factor) -> Any:
    ann = _info(field).annotation
    union = isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union
    args = set(typing.get_args(ann)) if union else set()
    base = next(iter(args - {type(None)}), ann) if args else ann
    # a closed set, or a number or a word (--batch-size 8 or auto): typer takes text, the record checks the value
    if typing.get_origin(base) is typing.Literal or len(_members(field)) > 1:
        base = str
    name = option_name(field)
    if base is bool:
        decl = (f"{name}/--no-{name[2:]}",)
    else:
        decl = (name,)
    optional = type(None) in args
    if typing.get_origin(base) in (list, tuple):
        return Annotated[Optional[list[str]], typer.Option(*decl, help=_help(field, f))]
    typ = Optional[base] if optional else base
    return Annotated[typ, typer.Option(*decl, help=_help(field, f))]


def factor_parameters(skip: set[str] | frozenset[str] = frozenset()) -> list[inspect.Parameter]:
    """One keyword parameter per factor field of RunConfig (minus ``skip``), with RunConfig's default."""
    out = []
    for field, f in _field_factor().items():
        if field in skip:
            continue
        default = _info(field).default
        if field == "choice_separator":
            default = "\\n"  # shown escaped; factor_settings unescapes it
        out.append(inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=_annotation(field, f)))
    return out


def with_factor_options(skip: set[str] | frozenset[str] = frozenset()) -> Callable:
    """Decorator: append the factor options to a command's signature (its ``**factors`` parameter receives them)."""
    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)  # real Annotated objects, not the strings of PEP 563
        own = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        extra = factor_parameters(skip | {p.name for p in own})
        # inspect.signature (and so typer) reads __signature__, an attribute Callable's type does not declare
        fn.__signature__ = sig.replace(parameters=[*own, *extra])  # type: ignore[attr-defined]
        fn.__annotations__ = {**{p.name: p.annotation for p in own}, **{p.name: p.annotation for p in extra}}
        return fn
    return decorate


def factor_settings(values: dict[str, Any]) -> dict[str, Any]:
    """RunConfig fields from the parsed factor options in ``values`` (others are ignored): text options that
    have their own syntax go through the factor's parser (``--description none``, escapes in
    ``--choice-separator``), ``none`` in a repeatable pattern list means none. Raises
    :class:`~repaudit.errors.UsageError` (exit 2) for a value the factor's parser refuses."""
    fields = _field_factor()
    out: dict[str, Any] = {}
    for field, value in values.items():
        f = fields.get(field)
        if f is None:
            continue
        # an option factor always has its parser (Factor.supports)
        if isinstance(value, str) and f.parse is not None and f.parse not in (str, int, float) and field == f.fields[0]:
            try:
                value = f.parse(value)
            except ValueError as exc:  # a value the option's own syntax refuses is a usage error, not a crash
                from repaudit.errors import UsageError

                raise UsageError(f"--{f.name.replace('_', '-')}: cannot read '{value}' ({exc})") from None
        elif isinstance(value, list) and field == "regexes_to_ignore":
            value = [r for r in value if r != "none"]
        out[field] = value
    return out


def option_fields() -> tuple[str, ...]:
    """RunConfig fields that have a factor option."""
    return tuple(_field_factor())
