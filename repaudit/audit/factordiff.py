"""How the settings and facts of two runs relate, path by path: same, differs (two spellings of one setting judged
the same, with a note), unknown (not recorded by one or both runs, or a default of an unrecorded harness version)
or n/a (a setting that applies to one run only) — the factor rows of a comparison."""

from __future__ import annotations

import functools
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.vocabulary import NOT_RECORDED, Recorded, Value, order

Status = Literal["same", "differs", "unknown", "n/a"]


class FactorRow(BaseModel):
    """One setting or fact of one task: A's and B's value, each with its provenance, and how they relate."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    path: str
    """The field's path in the vocabulary (:mod:`repaudit.vocabulary`): a settings field (``generation.temperature``)
    or a fact (``model.name``, ``software.lm_eval``)."""
    a: Value
    """A's value with its provenance: recorded (with the file's key), a harness default (with the harness and
    version), derived, not recorded, or not applicable (with why)."""
    b: Value
    """B's value, as ``a``."""
    status: Status
    """same, differs, unknown (not recorded by one or both runs, or a default whose harness version is not
    recorded), or n/a (the setting does not apply to one or both runs: few-shot settings of a 0-shot run,
    sampling settings under greedy decoding) — n/a is never a difference."""
    note: str = ""
    """Why two spellings were judged the same (a function's name and its source; lm-eval's backend aliases);
    empty otherwise."""
    factor: str | None = None
    """The registry's name of the factor at this path (:mod:`repaudit.run.factors`); None: not one."""

    @property
    def group(self) -> str:
        """The path's group (its first part: ``generation``, ``model``, ``software``)."""
        return self.path.partition(".")[0]

    @property
    def field(self) -> str:
        """The path's field (everything after the group)."""
        return self.path.partition(".")[2]


@functools.cache
def _deepdiff():
    """deepdiff's ``DeepDiff``, imported when first needed and without pandas and polars: deepdiff imports them,
    where they are installed, only to hash their data frames (pandas alone costs ~0.2 s of CPU, a fifth of a
    compare's start; issue 62), and the values compared here are JSON values. A frame library some other module has
    imported already is left as it is."""
    absent = [m for m in ("pandas", "polars") if m not in sys.modules]
    sys.modules.update(dict.fromkeys(absent))  # type: ignore[arg-type]  # a module set to None: importing it raises ImportError
    try:
        from deepdiff import DeepDiff
    finally:
        for m in absent:
            sys.modules.pop(m, None)
    return DeepDiff


def _same(va: Any, vb: Any) -> bool:
    """Structural equality (deepdiff's ``DeepDiff``); numbers compare as numbers (1 == 1.0) to 12 significant
    digits."""
    try:
        return not _deepdiff()(va, vb, ignore_numeric_type_changes=True, significant_digits=12)
    except (OverflowError, ValueError, TypeError, RecursionError):
        return va == vb


#: lm-eval ``--model`` names across versions that are one backend
BACKEND_ALIASES = {"hf-causal": "hf", "hf-causal-experimental": "hf", "huggingface": "hf", "hf-auto": "hf",
                   "gpt2": "hf"}
#: lm-eval's few-shot sampler names that are repaudit's
SAMPLER_ALIASES = {"default": "random"}
_FUNC_REPR = re.compile(r"<function (\w+)>")


def _equivalent(path: str, va: Any, vb: Any) -> str | None:
    """A note when two differently written values are the same setting, else ``None``."""
    if not (isinstance(va, str) and isinstance(vb, str)):
        return None
    if path == "serving.backend" and BACKEND_ALIASES.get(va, va) == BACKEND_ALIASES.get(vb, vb):
        return f"'{va}' and '{vb}' are one backend (lm-eval renamed it between versions)"
    if path == "serving.device" and va.split(":")[0] == vb.split(":")[0]:
        return f"'{va}' and '{vb}' are one device type (the index is not a factor; the hardware is)"
    if path == "fewshot.sampler" and SAMPLER_ALIASES.get(va, va) == SAMPLER_ALIASES.get(vb, vb):
        return f"'{va}' and '{vb}' are one sampler (lm-eval's 'default' draws at random)"
    for x, y in ((va, vb), (vb, va)):
        m = _FUNC_REPR.fullmatch(x.strip())
        if m and re.search(rf"^\s*def {re.escape(m.group(1))}\(", y, flags=re.M):
            return f"one run records the function {m.group(1)} by name, the other its source: compared by name"
    return None


def _status(path: str, va: Value, vb: Value) -> tuple[Status, str]:
    """How two values of one path relate, and a note where two spellings are one setting."""
    if "not_applicable" in (va.source, vb.source):
        return "n/a", ""
    if not (va.known and vb.known):
        return "unknown", ""
    if _same(va.value, vb.value):
        return "same", ""
    note = _equivalent(path, va.value, vb.value)
    return ("same", note) if note else ("differs", "")


def diff_factors(task: str, ra: Recorded, rb: Recorded) -> list[FactorRow]:
    """Factor rows for one task: every path either record holds (a path one record lacks is not recorded there),
    in the vocabulary's report order (:func:`repaudit.vocabulary.order`).

    Each value is compared structurally (nested values such as ``engine.batch_sizes_used`` or stop lists; 1 and 1.0
    are equal); a value one run does not know is *unknown*; a setting that does not apply to one run is *n/a*, never
    a difference; two spellings of one setting are *same* with a note (:func:`_equivalent`).
    """
    from repaudit.run.factors import by_path

    names = by_path()
    rows = []
    for path in sorted(set(ra) | set(rb), key=order):
        va, vb = ra.get(path, NOT_RECORDED), rb.get(path, NOT_RECORDED)
        status, note = _status(path, va, vb)
        rows.append(FactorRow(task=task, path=path, a=va, b=vb, status=status, note=note, factor=names.get(path)))
    return rows
