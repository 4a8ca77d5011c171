"""Load a task's docs from local JSON-lines files (``--data-dir``) or from the Hugging Face hub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_file, sha256_json
from repaudit.tasks.base import Doc, Task


class DataSource(BaseModel):
    """Where a split came from and what it held.

    ``sha256`` is the hash of the local file's bytes, or for hub data the hash of the canonical
    JSON of all rows; ``n_docs`` counts the whole split, before any ``--limit``.
    """

    model_config = ConfigDict(extra="forbid")
    kind: str  # "local" or "hub"
    location: str
    split: str
    revision: str | None
    sha256: str
    n_docs: int


def _read_jsonl(path: Path, task: Task) -> list[dict[str, Any]]:
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    raise RepauditError(f"data file '{path}' line {lineno} is not valid JSON: "
                                        "expected one JSON object per line") from None
                if not isinstance(row, dict):
                    raise RepauditError(f"data file '{path}' line {lineno} is not a JSON object")
                missing = [k for k in task.required_fields if k not in row]
                if missing:
                    raise RepauditError(f"data file '{path}' line {lineno} lacks field(s) {', '.join(missing)} "
                                        f"that task {task.name} needs: is this the right file?")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as exc:
        raise RepauditError(f"data file '{path}' cannot be read ({exc.__class__.__name__}): "
                            "check the path and permissions") from None
    if not rows:
        raise RepauditError(f"data file '{path}' holds no docs")
    return rows


def available_local_splits(task: Task, data_dir: Path) -> list[str]:
    """Splits of ``task`` whose file exists under ``data_dir``."""
    return [s for s, rel in task.local_files.items() if (data_dir / rel).is_file()]


def load_rows(task: Task, split: str, data_dir: Path | None, revision: str | None = None
              ) -> tuple[list[dict[str, Any]], DataSource]:
    """Raw rows of ``task``/``split`` and their :class:`DataSource`.

    Raises:
        RepauditError: the split has no local file, the file is unreadable or of the wrong
            schema, or the hub cannot provide it.
    """
    if data_dir is not None:
        rel = task.local_files.get(split)
        if rel is None:
            raise RepauditError(f"task {task.name} has no local file for split '{split}' "
                                f"(known: {', '.join(task.local_files)}): choose --split accordingly")
        path = data_dir / rel
        if not path.is_file():
            raise RepauditError(f"data file '{path}' for task {task.name} split {split} does not exist: "
                                "check --data-dir (layout as in shared/data)")
        rows = _read_jsonl(path, task)
        return rows, DataSource(kind="local", location=rel, split=split, revision=None,
                                sha256=sha256_file(path), n_docs=len(rows))
    return _load_hub(task, split, revision)


def _load_hub(task: Task, split: str, revision: str | None) -> tuple[list[dict[str, Any]], DataSource]:
    import datasets

    try:
        ds = datasets.load_dataset(task.hub_path, task.hub_name, split=split, revision=revision)
    except Exception as exc:  # datasets raises many types for "cannot fetch"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RepauditError(f"dataset {task.hub_path} ({task.hub_name}) split {split} could not be loaded from "
                            f"the Hugging Face hub ({reason}): pass --data-dir for local files") from None
    rows = [dict(r) for r in ds]
    return rows, DataSource(kind="hub", location=f"{task.hub_path}/{task.hub_name or ''}".rstrip("/"),
                            split=split, revision=revision, sha256=sha256_json(rows), n_docs=len(rows))


def to_docs(task: Task, rows: list[dict[str, Any]]) -> list[Doc]:
    """Apply the task's ``process`` and number the docs in file order (lm-eval's ``doc_id``)."""
    docs = []
    for i, row in enumerate(rows):
        processed = task.process(row)
        docs.append(Doc(doc_id=i, row=processed, cluster=task.cluster(processed)))
    return docs
