"""RunRecord: a fingerprint plus per-doc results and aggregates; read, validated and written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from repaudit.errors import RepauditError
from repaudit.run.fingerprint import Fingerprint
from repaudit.run.metrics import Metric

RUN_SCHEMA_VERSION = 2


class DocResult(BaseModel):
    """One doc's outcome.

    For multiple choice: ``loglikelihoods``, ``is_greedy`` and ``continuation_tokens`` per choice
    (in nats / bool / tokens), ``prediction`` the argmax choice index. For generation:
    ``generation`` the raw text, ``extracted`` the answer per filter, ``prediction`` the
    strict-match answer. ``doc_hash`` / ``prompt_hash`` / ``target_hash`` are computed as in
    lm-eval's sample logs, so they can be matched against them.
    """

    model_config = ConfigDict(extra="forbid")
    doc_id: int
    doc_hash: str
    prompt_hash: str
    target_hash: str
    target: str
    gold: int | None
    cluster: str | None
    fewshot_ids: list[int]
    choices: list[str]
    loglikelihoods: list[float]
    is_greedy: list[bool]
    continuation_tokens: list[int]
    prediction: int | str
    metrics: dict[str, float]
    generation: str | None = None
    extracted: dict[str, str] | None = None


class Timings(BaseModel):
    """Wall-clock seconds. ``computed_batches`` ran now; ``cached_batches`` came from the store;
    ``tokens_computed`` is the number of positions the decoder ran for loglikelihood requests now,
    ``forward_s`` the seconds spent inside those forward passes (output layer and log-softmax included)."""

    model_config = ConfigDict(extra="forbid")
    model_load_s: float
    eval_s: float
    total_s: float
    docs_per_s: float
    computed_batches: int
    cached_batches: int
    tokens_computed: int = 0
    forward_s: float = 0.0


class RunRecord(BaseModel):
    """A complete run file (``repaudit run -o run.json``)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["repaudit.run"] = "repaudit.run"
    schema_version: Literal[2] = RUN_SCHEMA_VERSION
    repaudit_version: str
    created_at: str
    fingerprint: Fingerprint
    fingerprint_digest: str
    metrics: list[Metric]
    docs: list[DocResult]
    timings: Timings


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through a temporary file and rename, so no partial
    file is left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a run file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_record(record: RunRecord, path: Path) -> None:
    """Serialise ``record`` as indented JSON, atomically."""
    write_atomic(path, record.model_dump_json(indent=1))


def read_json(path: Path) -> Any:
    """Parse a JSON file (``Infinity``/``NaN`` accepted, as lm-eval writes them).

    Raises:
        RepauditError: missing, unreadable or malformed — the message names the file.
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RepauditError(f"'{path}' does not exist") from None
    except OSError as exc:
        raise RepauditError(f"'{path}' cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise RepauditError(f"'{path}' is not valid JSON ({exc})") from None


def read_record(path: Path, raw: Any = None) -> RunRecord:
    """Load and validate a run file (``raw``: its already-parsed JSON, to avoid reading it twice).

    Raises:
        RepauditError: unreadable, not JSON, not a repaudit run, or failing the schema (the
            first offending field is named).
    """
    if raw is None:
        raw = read_json(path)
    if not isinstance(raw, dict) or raw.get("kind") != "repaudit.run":
        raise RepauditError(f"run file '{path}' is not a repaudit run (no \"kind\": \"repaudit.run\")")
    version = raw.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version != RUN_SCHEMA_VERSION:
        raise RepauditError(f"run file '{path}' has run schema v{version}; this repaudit reads v{RUN_SCHEMA_VERSION} "
                            "(v2 records where the data came from and a source-independent content hash): "
                            "re-run it with this version")
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise RepauditError(f"run file '{path}' does not match the run schema v{RUN_SCHEMA_VERSION}: "
                            f"{loc}: {err['msg']}") from None
