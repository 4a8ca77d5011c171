"""Every Eval Ever files read with every check: an aggregate record, its sidecar (checksum, row count, each row's
``evaluation_id``), and the records of a folder (EEE's layout ``data/<benchmark>/<developer>/<model>/<uuid>.json``).
Records of schema 0.1.x and 0.2.x go to :mod:`.legacy`; what follows is 0.3.0's.

Order of checks (:mod:`repaudit.importers.eee.schema` for the first three): the boundary's limits, the
``schema_version``, EEE's JSON Schema, the typed models; then for the sidecar its checksum against the record's
(a truncated or edited file fails here), each line as JSON within the limits, each row against the instance
schema, its ``evaluation_id`` against the record's, and the row count against ``total_rows``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from repaudit.boundary import LIMITS, InputError, decode, parse_json, read_bytes, read_json, validate
from repaudit.importers.eee.legacy_schema import LEGACY_VERSION
from repaudit.importers.eee.schema import SCHEMA_VERSION, Aggregate, Row, check

if TYPE_CHECKING:
    from repaudit.importers.eee.legacy import LegacyRecord

#: most JSON files looked at in a folder of records (as detect's for any output directory)
MAX_FOLDER_FILES = 2000


@dataclass
class Record:
    """One aggregate record as read, with its sidecar.

    Attributes:
        path: the aggregate file.
        agg: its typed fields.
        sidecar: the sidecar file, or ``None`` where the record has none.
        rows: the sidecar's rows in file order, each with its line number (``None`` without a sidecar).
    """

    path: Path
    agg: Aggregate
    sidecar: Path | None
    rows: list[tuple[int, Row]] | None


def is_aggregate(obj: Any) -> bool:
    """Whether a parsed JSON document looks like an EEE aggregate record (any schema version: another version is
    then refused by :func:`read_record` in one line, not mistaken for something else)."""
    return (isinstance(obj, dict) and "schema_version" in obj and "evaluation_id" in obj
            and "evaluation_results" in obj and "model_info" in obj)


def is_row(obj: Any) -> bool:
    """Whether a parsed JSON document looks like one EEE sidecar row."""
    return (isinstance(obj, dict) and "schema_version" in obj and "evaluation_id" in obj and "sample_id" in obj
            and "interaction_type" in obj)


def read_record(path: Path, obj: Any = None) -> Record | LegacyRecord:
    """An aggregate record and its sidecar, every check passed (``obj``: the file already parsed); a record of
    schema 0.1.x or 0.2.x is read by :func:`repaudit.importers.eee.legacy.read_legacy`.

    Raises:
        InputError: a check fails (the file, sidecar line and JSON path named).
    """
    path = Path(path)
    if obj is None:
        obj = read_json(path, what="EEE record")
    version = obj.get("schema_version") if isinstance(obj, dict) else None
    if isinstance(version, str) and LEGACY_VERSION.fullmatch(version):
        from repaudit.importers.eee.legacy import read_legacy

        return read_legacy(path, obj)
    check(obj, "aggregate", path)
    agg, _ = validate(Aggregate, obj, path, schema=f"EEE schema {SCHEMA_VERSION}")
    if agg.detailed_evaluation_results is None:
        return Record(path, agg, None, None)
    sidecar = path.parent / PurePosixPath(agg.detailed_evaluation_results.file_path).name
    return Record(path, agg, sidecar, read_sidecar(sidecar, path, agg))


def read_sidecar(sidecar: Path, path: Path, agg: Aggregate) -> list[tuple[int, Row]]:
    """The rows of ``sidecar``, checked against the record at ``path``.

    Raises:
        InputError: missing or unreadable, a checksum or row count other than the record's, a line that is not
            JSON or fails the instance schema, a row of another ``evaluation_id``.
    """
    det = agg.detailed_evaluation_results
    assert det is not None
    where = "$.detailed_evaluation_results"
    if not sidecar.is_file():
        raise InputError(path, f"{where}.file_path", f"names the sidecar '{sidecar.name}', which is not beside the "
                                                     "record")
    data = read_bytes(sidecar, LIMITS, "EEE sidecar")
    if det.checksum is not None:
        got = hashlib.new(det.hash_algorithm or "sha256", data).hexdigest()
        if got != det.checksum.lower():
            raise InputError(sidecar, None, f"its {det.hash_algorithm or 'sha256'} {got[:16]}… differs from the "
                                            f"record's checksum {det.checksum[:16]}… ({path.name}): the sidecar was "
                                            "changed or truncated after the record was written")
    lines = decode(data, sidecar).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows: list[tuple[int, Row]] = []
    for n, line in enumerate(lines, 1):
        at = f"line {n}: "
        obj = parse_json(line, sidecar, LIMITS, at)
        check(obj, "instance", sidecar, at)
        row, _ = validate(Row, obj, sidecar, where=at, schema=f"EEE schema {SCHEMA_VERSION}")
        if row.evaluation_id != agg.evaluation_id:
            raise InputError(sidecar, "$.evaluation_id", f"'{row.evaluation_id[:80]}' is not the evaluation_id of "
                                                         f"its record {path.name} ('{agg.evaluation_id[:80]}')", at)
        rows.append((n, row))
    if det.total_rows is not None and det.total_rows != len(rows):
        raise InputError(sidecar, None, f"holds {len(rows):,} rows; its record {path.name} says total_rows "
                                        f"{det.total_rows:,} (a truncated or extended sidecar)")
    return rows


#: an aggregate record's file name in EEE's layout (``<uuid>.json``)
RECORD_NAME = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\.json")


def folder_records(folder: Path) -> list[Path]:
    """The aggregate records under ``folder`` (any depth), sorted by path; sidecars and other JSON files skipped —
    but a file named as a record (``<uuid>.json``) that cannot be read is an error, never a task silently missing.

    Raises:
        InputError: more than :data:`MAX_FOLDER_FILES` JSON files, or a ``<uuid>.json`` that is no valid JSON.
    """
    found = []
    for n, p in enumerate(sorted(q for q in folder.rglob("*.json") if q.is_file())):
        if n >= MAX_FOLDER_FILES:
            raise InputError(folder, None, f"holds more than {MAX_FOLDER_FILES} JSON files: pass one record")
        try:
            obj = read_json(p, what="EEE record")
        except InputError:
            if RECORD_NAME.fullmatch(p.name):
                raise
            continue
        if is_aggregate(obj):
            found.append(p)
    return found
