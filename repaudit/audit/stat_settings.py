"""How intervals and tests are made, declared once: :class:`StatSettings`.

One typed record holds every statistics setting a command takes — the level α, the multiplicity adjustment, the
bootstrap's resamples and seed, the near-tie epsilon — with its range and its meaning (the docstring under each
field, through ``use_attribute_docstrings``), as :mod:`repaudit.settings` declares a run's settings. From it come:

* every command's statistics options (``repaudit.cli.groups``: one option per field, named ``--alpha``,
  ``--adjust``, ``--n-boot``, ``--boot-seed``, ``--tie-eps`` on every command that takes it, its help the field's
  docstring), and the one message a value out of range gets on every command (:func:`checked`);
* the library's defaults (:data:`COMMANDS`: each command's record, a field the command has no use for None);
* the record every JSON report carries as ``stat_settings``, so a report says how its intervals were made.

A field is None in a command's record where the command makes no such thing (no bootstrap: ``n_boot`` and
``boot_seed``; no test: ``adjust``; no flips: ``tie_eps``); ``adjust`` is ``none`` where it tests several things
without adjusting (a sweep's values). Which docs are resampled together is not a setting: every doc that carries a
cluster (an MMLU subject) is resampled with its cluster, and each row says so (its ``method``, ``n_clusters``).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: the largest α taken (excluded): see :attr:`StatSettings.alpha`
ALPHA_MAX = 0.5

Adjust = Literal["holm", "bh", "none"]
#: names of the multiplicity adjustments (``--adjust``) as reports and notes print them
ADJUST = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no adjustment"}
#: α in (0, 0.5): the one range of every command and of a gate policy's ``alpha``
Alpha = Annotated[float, Field(gt=0, lt=ALPHA_MAX, allow_inf_nan=False)]
NBoot = Annotated[int, Field(ge=100, le=1_000_000)]
BootSeed = Annotated[int, Field(ge=0, le=2**32 - 1)]
TieEps = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class StatSettings(BaseModel):
    """How a result's intervals and tests were made (α, the multiplicity adjustment, the bootstrap, near ties). A
    field is None where the result makes no such thing (each field says what its None means)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    alpha: Alpha = 0.05
    """Significance level: every interval is (1 − alpha), two-sided, and labelled so (0.05: 95 %); a test is
    significant when its (adjusted) p is below alpha (gate: each one-sided claim, with a (1 − 2 alpha) interval).
    In (0, 0.5): at 0.5 a two-sided interval misses as often as it covers and gate's interval shrinks to the point
    estimate, a decision without evidence."""
    adjust: Adjust | None = "holm"
    """Multiplicity adjustment over a family of tests: holm (family-wise error; Holm 1979), bh (false discovery
    rate; Benjamini & Hochberg 1995) or none. compare: every task × metric row (group rows a family of their own);
    gate: the PASS claims one family, the FAIL claims another. None: the result makes no test."""
    n_boot: NBoot | None = 2000
    """Bootstrap resamples per interval, 100 to 1,000,000 (with fewer, a percentile end rests on a handful of
    resamples and moves with the seed). None: no bootstrap interval."""
    boot_seed: BootSeed | None = 0
    """Seed of the bootstrap's resamples (numpy's default_rng): the same seed and docs give the same interval, bit
    for bit. None: no bootstrap."""
    tie_eps: TieEps | None = 0.01
    """Near tie, in nats: a flipped doc where a run's margin by the flipped metric (acc: the gap between its top two
    choices' log-likelihoods) is at most this counts as churn, not as a harmful or beneficial flip. None: the
    result lists no flips."""

    def bootstrap(self) -> tuple[int, int]:
        """``(n_boot, boot_seed)`` for a result that bootstraps.

        Raises:
            ValueError: these settings make no bootstrap (``n_boot`` or ``boot_seed`` is None, as reproduce's and
                export's are).
        """
        if self.n_boot is None or self.boot_seed is None:
            raise ValueError("these statistics settings make no bootstrap (n_boot or boot_seed is None)")
        return self.n_boot, self.boot_seed


@dataclass(frozen=True)
class CommandStats:
    """What one command's intervals and tests use: ``defaults``, its record before any option (a field it has no use
    for is None), and ``options``, the fields it takes from the command line (the others stay at their default)."""

    defaults: StatSettings
    options: tuple[str, ...]


_ALL = ("alpha", "adjust", "n_boot", "boot_seed", "tie_eps")
_BOOT = ("alpha", "n_boot", "boot_seed")
_NO_FLIPS = {"tie_eps": None}
_NO_TEST = {"adjust": None, "tie_eps": None}
_NORMAL = {"adjust": None, "n_boot": None, "boot_seed": None, "tie_eps": None}

#: each command's statistics: compare's rows are the answer (10,000 resamples); grid commands bootstrap many
#: quantities (2000); sweep's values and series' rows are tested unadjusted (``none``); reproduce's and export's
#: intervals are normal ones (no bootstrap); ``series`` is ``variance FILE… --across``, which takes variance's options
COMMANDS: dict[str, CommandStats] = {
    "compare": CommandStats(StatSettings(n_boot=10_000), _ALL),
    "gate": CommandStats(StatSettings(), _ALL),
    "sweep": CommandStats(StatSettings(adjust="none", n_boot=10_000, **_NO_FLIPS), _BOOT),
    "attribute": CommandStats(StatSettings(**_NO_TEST), _BOOT),
    "variance": CommandStats(StatSettings(**_NO_TEST), _BOOT),
    "series": CommandStats(StatSettings(adjust="none", **_NO_FLIPS), _BOOT),
    "appendix": CommandStats(StatSettings(**_NO_TEST), _BOOT),
    "reproduce": CommandStats(StatSettings(**{**_NORMAL, "adjust": "none"}), ("alpha",)),
    "export": CommandStats(StatSettings(**_NORMAL), ("alpha",)),
}


def option_name(field: str) -> str:
    """The command-line option of a field: ``n_boot`` → ``--n-boot``."""
    return "--" + field.replace("_", "-")


def _members(field: str) -> list[Any]:
    """The types a field takes besides None (an optional field's ``Annotated`` member keeps its bounds there)."""
    ann = StatSettings.model_fields[field].annotation
    union = typing.get_origin(ann) in (typing.Union, types.UnionType)
    return [a for a in typing.get_args(ann) if a is not type(None)] if union else [ann]


def _bounds(field: str) -> dict[str, float]:
    """The ``gt``/``ge``/``lt``/``le`` bounds a field declares (on the field, or inside its ``Annotated`` type)."""
    metas = [*StatSettings.model_fields[field].metadata,
             *(m for a in _members(field) for m in getattr(a, "__metadata__", ()))]
    out: dict[str, float] = {}
    for meta in metas:
        for m in getattr(meta, "metadata", [meta]):
            out.update({k: getattr(m, k) for k in ("gt", "ge", "lt", "le") if getattr(m, k, None) is not None})
    return out


def base_type(field: str) -> type:
    """The type a field takes besides None: ``float``, ``int`` or ``str`` (a closed set)."""
    arg = _members(field)[0]
    if typing.get_origin(arg) is Literal:
        return str
    return typing.get_args(arg)[0] if typing.get_origin(arg) is Annotated else arg


def choices(field: str) -> tuple[str, ...]:
    """The values of a closed set (``adjust``: holm, bh, none); empty for a number."""
    return next((typing.get_args(a) for a in _members(field) if typing.get_origin(a) is Literal), ())


def accepted(field: str) -> str:
    """What a field accepts, in words: ``in (0, 0.5)``, ``an integer between 100 and 1000000``, ``one of holm, bh,
    none``."""
    if choices(field):
        return "one of " + ", ".join(choices(field))
    b = _bounds(field)
    kind = "an integer" if base_type(field) is int else "a number"
    lo, hi = b.get("gt", b.get("ge")), b.get("lt", b.get("le"))
    if "ge" in b and "le" in b:
        return f"{kind} between {_num(b['ge'])} and {_num(b['le'])}"
    if lo is not None and hi is not None:
        return f"{kind} in {'[' if 'ge' in b else '('}{_num(lo)}, {_num(hi)}{']' if 'le' in b else ')'}"
    return f"{kind} {'≥' if 'ge' in b else '>'} {_num(lo)}"


def _num(x: Any) -> str:
    """A bound or a value as typed: ``1000000``, ``0.5``, ``nan`` (never ``1e+06``)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return str(int(x)) if math.isfinite(x) and float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def refusal(field: str, value: Any) -> str:
    """The one message a value out of range gets, on every command and in the library:
    ``--alpha must be a number in (0, 0.5), got 0.7``."""
    shown = f"'{value}'" if isinstance(value, str) else _num(value)
    return f"{option_name(field)} must be {accepted(field)}, got {shown}"


def checked(base: StatSettings, changes: dict[str, Any]) -> StatSettings:
    """``base`` with ``changes``, validated as a new record.

    Raises:
        UsageError: a value out of its field's range (:func:`refusal`), or an unknown field.
    """
    from repaudit.errors import UsageError

    unknown = sorted(set(changes) - set(StatSettings.model_fields))
    if unknown:
        raise UsageError(f"no statistics setting {', '.join(unknown)} (settings: {', '.join(_ALL)})")
    try:
        return StatSettings.model_validate({**base.model_dump(), **changes})
    except ValidationError as exc:
        field = str(exc.errors(include_url=False)[0]["loc"][0])
        raise UsageError(refusal(field, changes[field])) from None


def for_command(command: str, stat: StatSettings | None = None, **changes: Any) -> StatSettings:
    """``command``'s record: its defaults (:data:`COMMANDS`), then the fields it takes from ``stat`` (where ``stat``
    sets them: a record of another command, or one built by hand), then ``changes`` (``n_boot=200``).

    Raises:
        UsageError: a change to a field ``command`` does not take, or a value out of range.
    """
    from repaudit.errors import UsageError

    spec = COMMANDS[command]
    foreign = sorted(set(changes) - set(spec.options))
    if foreign:
        raise UsageError(f"{command} takes no {', '.join(foreign)} (it takes {', '.join(spec.options)})")
    taken = {k: v for k in spec.options if stat is not None and (v := getattr(stat, k)) is not None}
    out = checked(spec.defaults, {**taken, **changes})
    unset = next((k for k in spec.options if getattr(out, k) is None), None)
    if unset is not None:  # a setting the command uses is never "none made"
        raise UsageError(refusal(unset, None))
    return out
