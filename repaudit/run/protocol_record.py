"""What a run records of the published protocol it followed (``run --protocol``): a record of its own, so that the
run configuration and the fingerprint hold it without reading protocols (:mod:`repaudit.run.protocol` does)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ProtocolRecord(BaseModel):
    """What a run records of its protocol: name, sha256, the options the user set over it
    (``overrides``: factor -> [protocol value, value used]) and the protocol's settings that
    repaudit could not apply (``not_applied``: factor -> why)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The protocol's ``name`` (:attr:`repaudit.run.protocol.Protocol.name`)."""
    sha256: str
    """sha256 of the validated protocol's canonical JSON (:meth:`repaudit.run.protocol.Protocol.sha256`)."""
    overrides: dict[str, list[Any]] = {}
    """Factor → [the protocol's value, the value used] where the user set another."""
    not_applied: dict[str, str] = {}
    """Factor → why repaudit could not apply the protocol's setting."""
    preferred: list[str] = []
    """Fields applied only where the data has them (splits fall back as the task's default does)."""
    scoring: dict[str, Any] = {}
    """The scoring choices it fixes (metric, acc_norm, aggregation, random_baseline)."""
