"""Published evaluation protocols (``fingerprints/*.yaml``): partial fingerprints with their sources.

A protocol fixes some factors per task (n-shot, split, metric, prompt format, score
normalisation, …), cites where each value is stated, and lists what its sources leave unsaid as
*unspecified*. ``repaudit run --protocol`` applies the settable ones to a :class:`RunConfig`;
``repaudit compare RUN PROTOCOL`` checks a run against all of them
(:mod:`repaudit.audit.conformance`); ``repaudit reproduce`` tries each protocol first.

Protocol files are untrusted input like every other file: read through
:mod:`repaudit.boundary` (size and value limits first) and validated into :class:`Protocol`.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from repaudit.boundary import InputError, read_yaml, validate
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.run.protocol_record import ProtocolRecord
from repaudit.settings import ScoreNormalisation


def _factors() -> dict:
    """Factors a protocol may state, by name and older name (a view of :mod:`repaudit.run.factors`)."""
    from repaudit.run.factors import protocol_factors

    return protocol_factors()


PROTOCOL_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Source(_Strict):
    """Where a protocol's values are stated: ``url``, the ``section`` read, and what it ``states``."""

    url: str
    """The address of the paper, page or code that states the values."""
    section: str
    """The part of it that was read (a section, table or file)."""
    states: str
    """What it says, quoted or summarised."""


class Setting(_Strict):
    """One fixed factor: its ``value``, the id of the :class:`Source` stating it, and a note."""

    value: Any
    """The factor's value, checked against the factor's type when the protocol is read."""
    source: str
    """The key in :attr:`Protocol.sources` of the source that states the value."""
    note: str | None = None
    """A remark on the value or how repaudit applies it; None: none."""


class TaskProtocol(_Strict):
    """A task's fixed factors. ``repaudit_task`` ``None`` (written ``null``) means repaudit has no
    such task; unset means the key is repaudit's task name; ``__task__`` means the task asked for
    (the key or one of its aliases) is run under its own name, as the installed lm-eval defines it
    (the ``lmeval`` extra: ``leaderboard_bbh_navigate`` for the key ``leaderboard_bbh``). ``aliases`` are
    glob patterns of the task names other harness versions use (``hendrycksTest-*``)."""

    repaudit_task: str | None = "__key__"
    """The repaudit task run for it (see the class docstring); None: repaudit has no such task."""
    aliases: list[str] = []
    """Glob patterns of the names other harness versions give the task."""
    settings: dict[str, Setting] = {}
    """Factor name → its fixed value for this task (over the protocol's ``defaults``)."""
    unspecified: list[str] = []
    """Factor names the sources leave unsaid for this task (besides the protocol's own ``unspecified``)."""


class Protocol(_Strict):
    """A published evaluation protocol: see the module docstring.

    ``reports`` says how the protocol shows scores: ``raw`` (lm-eval's accuracies) or
    ``leaderboard_normalised`` (:func:`repaudit.run.normalise.leaderboard_normalise`).
    """

    schema_version: Literal[1]
    """The protocol file's schema (1)."""
    name: str
    """The protocol's short name, recorded in a run's fingerprint (``open_llm_leaderboard_v2``)."""
    title: str
    """A readable title (who published it, where)."""
    reports: ScoreNormalisation
    """How the protocol shows scores (see the class docstring)."""
    sources: dict[str, Source]
    """Source id → where values are stated; every setting names one."""
    defaults: dict[str, Setting] = {}
    """Factor name → value fixed for every task (a task's own settings win)."""
    unspecified: list[str] = []
    """Factor names the sources leave unsaid for every task."""
    tasks: dict[str, TaskProtocol]
    """The protocol's task name → its fixed factors."""

    @model_validator(mode="after")
    def _check(self) -> Protocol:
        blocks = [("defaults", self.defaults, self.unspecified),
                  *((f"tasks.{k}", t.settings, t.unspecified) for k, t in self.tasks.items())]
        for where, settings, unspecified in blocks:
            known = _factors()
            for key, s in settings.items():
                if key not in known:
                    raise ValueError(f"{where}.{key}: unknown factor (known: {', '.join(known)})")
                if s.source not in self.sources:
                    raise ValueError(f"{where}.{key}: source '{s.source}' is not in sources")
                try:
                    s.value = TypeAdapter(known[key].protocol).validate_python(s.value, strict=True)
                except ValidationError as exc:
                    raise ValueError(f"{where}.{key}: value {s.value!r} is not a valid {key} "
                                     f"({exc.errors(include_url=False)[0]['msg']})") from None
            for key in unspecified:
                if key not in known:
                    raise ValueError(f"{where}.unspecified: unknown factor '{key}'")
        for key, t in self.tasks.items():
            if t.repaudit_task == "__key__":
                t.repaudit_task = key
        return self

    def sha256(self) -> str:
        """sha256 of the validated protocol's canonical JSON (what the fingerprint records)."""
        return sha256_json(self.model_dump(mode="json"))

    def task_key(self, task: str) -> str | None:
        """The protocol's key for ``task`` (by name, repaudit task or alias pattern), or None."""
        for key, t in self.tasks.items():
            if task in (key, t.repaudit_task) or any(fnmatch.fnmatchcase(task, a) for a in t.aliases):
                return key
        return None

    def settings_for(self, task: str) -> dict[str, Setting]:
        """Defaults overlaid with the task's own settings (the task's win).

        Raises:
            RepauditError: the protocol does not define ``task``.
        """
        key = self.task_key(task)
        if key is None:
            raise RepauditError(f"protocol {self.name} does not define task '{task}' "
                                f"(it defines: {', '.join(self.tasks)})")
        return {**self.defaults, **self.tasks[key].settings}

    def unspecified_for(self, task: str) -> list[str]:
        """Factors the protocol's sources leave unsaid for ``task``."""
        key = self.task_key(task)
        extra = self.tasks[key].unspecified if key else []
        return sorted(set(self.unspecified) | set(extra))


def protocol_dir() -> Path:
    """``$REPAUDIT_PROTOCOL_DIR``, else the ``fingerprints/`` folder of the source tree."""
    env = os.environ.get("REPAUDIT_PROTOCOL_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "fingerprints"


def available() -> list[Path]:
    """Every protocol file of :func:`protocol_dir`, sorted by name."""
    d = protocol_dir()
    return sorted(d.glob("*.yaml")) if d.is_dir() else []


def read_protocol(path: Path) -> Protocol:
    """Read and validate one protocol file.

    Raises:
        InputError: unreadable, over a limit, not YAML, or not a valid protocol (JSON path named).
    """
    path = Path(path)
    data = read_yaml(path, "protocol file")
    if not isinstance(data, dict) or "tasks" not in data or "sources" not in data:
        raise InputError(path, None, "is not a repaudit protocol (a YAML mapping with schema_version, sources, "
                                     "tasks)")
    # the model validator's checks arrive as validation errors: validate() names their JSON path
    proto, _ = validate(Protocol, data, path, schema=f"protocol schema v{PROTOCOL_SCHEMA_VERSION}")
    return proto


def load_protocol(name_or_path: str | Path) -> tuple[Protocol, Path]:
    """A protocol by file path, or by name from :func:`protocol_dir`.

    Raises:
        RepauditError: no such file or name (the known names are listed); InputError: invalid file.
    """
    p = Path(name_or_path)
    if p.suffix.lower() in (".yaml", ".yml") or p.exists():
        return read_protocol(p), p
    for f in available():
        if f.stem == str(name_or_path):
            return read_protocol(f), f
    names = ", ".join(f.stem for f in available()) or f"none in {protocol_dir()}"
    raise RepauditError(f"unknown protocol '{name_or_path}': give a YAML path or one of: {names}")


def apply_protocol(proto: Protocol, task: str, explicit: dict[str, Any]) -> tuple[dict[str, Any], ProtocolRecord]:
    """RunConfig fields for ``task`` under ``proto``; ``explicit`` (field -> value the user set) wins.

    Returns ``(fields, record)``: the RunConfig fields to set (explicit values included) and the
    :class:`ProtocolRecord` for the fingerprint.

    Raises:
        RepauditError: the protocol does not define the task, or defines it but repaudit has no
            such task (named in one line).
    """
    key = proto.task_key(task)
    settings = proto.settings_for(task)
    assert key is not None  # settings_for raised where the protocol does not define the task
    target = proto.tasks[key].repaudit_task
    if target is None:
        raise RepauditError(f"protocol {proto.name} needs task '{key}', which repaudit does not have")
    if target == "__task__":
        target = task
    fields: dict[str, Any] = {"task": target}
    rec = ProtocolRecord(name=proto.name, sha256=proto.sha256())
    known = _factors()
    for factor, s in settings.items():
        f = known[factor]
        field = f.fields[0] if f.fields else None
        if f.stage == "scoring" and factor not in ("score", "score_normalisation"):
            rec.scoring[factor] = s.value  # a scoring choice conformance checks (and sets, where settable)
        if s.value in f.protocol_values:  # an older spelling of the value (acc_norm: bytes, tokens)
            s = s.model_copy(update={"value": f.protocol_values[s.value]})
        if field is None:
            if f.stage != "scoring":
                rec.not_applied[factor] = f"{s.value!r}: not settable in repaudit ({f.why_not.get('option', '')})"
            continue
        if factor == "batch_size" and s.value == "auto":
            rec.not_applied[factor] = "'auto': repaudit takes a fixed batch size"
            continue
        if field in explicit and explicit[field] != s.value:
            rec.overrides[factor] = [s.value, explicit[field]]
            continue
        fields[field] = s.value
        if field in ("split", "fewshot_split"):
            rec.preferred.append(field)
    for field, value in explicit.items():
        fields.setdefault(field, value)
    return fields, rec
