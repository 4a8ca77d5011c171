"""Every field of repaudit's own records says what it holds: a docstring under the field, which pydantic's
``use_attribute_docstrings`` makes the field's description (or a ``Field(description=...)``).

The models of other tools' file formats (``repaudit/importers/<tool>/schema.py``, any ``*_schema`` module) are
left out: their fields mean what the tool's documentation says.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from pydantic import BaseModel

import repaudit

#: optional extras a module may need at import; any other ImportError is a failure
OPTIONAL = {"vllm", "lm_eval", "inspect_ai", "ray"}
#: modules that must not be imported here (``python -m repaudit`` runs the command line on import)
NOT_IMPORTED = {"repaudit.__main__"}


def _optional(exc: ImportError) -> bool:
    return (exc.name or "").split(".")[0] in OPTIONAL


def _modules() -> list:
    def onerror(name: str) -> None:  # a package that fails to import while walking: only an optional extra may
        raise

    mods = [repaudit]
    for info in pkgutil.walk_packages(repaudit.__path__, "repaudit.", onerror=onerror):
        if info.name in NOT_IMPORTED:
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError as exc:
            if not _optional(exc):
                raise
    return mods


def _foreign(module: str) -> bool:
    """A module of another tool's file format."""
    parts = module.split(".")
    return parts[-1].endswith("_schema") or (len(parts) == 4 and parts[1] == "importers" and parts[3] == "schema")


def _records() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for mod in _modules():
        for obj in vars(mod).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__.startswith("repaudit.")
                    and not _foreign(obj.__module__)):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


def test_every_record_field_has_a_description():
    records = _records()
    names = {m.__name__ for m in records}
    # the walk found the records (a vacuous pass is a failure): run files, settings, protocols, compare, gate
    assert {"RunRecord", "DocResult", "Fingerprint", "ServingSettings", "Protocol", "Comparison", "GateResult",
            "AttributionReport"} <= names, sorted(names)
    missing = [f"{m.__module__}.{m.__qualname__}.{name}" for m in records
               for name, info in m.model_fields.items() if not (info.description or "").strip()]
    assert not missing, f"{len(missing)} record fields without a description:\n" + "\n".join(missing)


def test_a_base_s_use_attribute_docstrings_reaches_its_subclasses():
    """A base sets ``use_attribute_docstrings`` once (protocol.py's ``_Strict``); a subclass that sets no config of
    its own inherits it, so a docstring under its field is the field's description."""
    from repaudit.run.protocol import Source

    class Probe(Source):
        probe: int = 0
        """A probe field."""

    assert Probe.model_fields["probe"].description == "A probe field."
    assert Probe.model_fields["url"].description == Source.model_fields["url"].description
