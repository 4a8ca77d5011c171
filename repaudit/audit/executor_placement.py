"""Where each configuration of a grid ran, as a report records it: the executor, a served model's endpoint (among
replicas), the Ray node."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from repaudit.run.records import RunRecord


class Placed(BaseModel):
    """One configuration of a grid and where it ran."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    configuration: str
    """The configuration's label in the report."""
    executor: str
    """``local`` (this process) or ``ray``."""
    endpoint: str | None = None
    """A served model's endpoint (base URL without credentials); None: an in-process backend."""
    ray_node: str | None = None
    """The Ray node id; None outside Ray."""


def placed(labelled: list[tuple[str, RunRecord]]) -> list[Placed]:
    """Every ``(label, record)``'s placement: the one the executor stamped on the record, else this process (a
    served run's endpoint read from its fingerprint's server facts)."""
    out = []
    for label, rec in labelled:
        p = rec.placement
        server = rec.fingerprint.server
        out.append(Placed(configuration=label, executor=p.executor if p is not None else "local",
                          endpoint=(p.endpoint if p is not None and p.endpoint else
                                    server.base_url if server is not None else None),
                          ray_node=p.ray_node if p is not None else None))
    return out
