"""Every Eval Ever records of schema 0.1.x and 0.2.x read with their per-sample rows: the typed record
(:mod:`.legacy_schema`), the rows of its JSONL sidecar (0.2.x, ``detailed_evaluation_results``) or the rows it holds
inline (0.1.x, ``detailed_evaluation_results_per_samples``).

Checks, in order: the boundary's limits, the typed models (optional parts lenient: a wrong type is *not recorded*,
with a note), then for a sidecar its checksum against the record's, each line as JSON within the limits, each row
against the row model, and the row count against ``total_rows``. A sidecar the record names but that is not beside
it (EEE's 0.2.0 records name ``instance_level_data/…`` files that were never published) is a note: the record's
aggregates are read, its per-doc values are not. A row of another ``evaluation_id`` (EEE's 0.2.1 HELM converter wrote
``None_samples``) is a note too — the checksum, where the record has one, already ties the sidecar to it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from repaudit.boundary import LIMITS, InputError, decode, parse_json, read_bytes, validate
from repaudit.importers.eee.legacy_schema import Aggregate, Row

#: hash algorithms a legacy record may name for its sidecar's checksum
ALGORITHMS = ("sha256", "md5", "sha1", "sha512")


@dataclass
class LegacyRecord:
    """One record of schema 0.1.x or 0.2.x as read.

    Attributes:
        path: the aggregate file.
        agg: its typed fields.
        sidecar: the sidecar file read, or ``None`` (no sidecar named, or not beside the record).
        rows: the sidecar's rows in file order with their line numbers; ``None`` without a sidecar read.
        notes: what the boundary dropped as not recorded, a sidecar not found, rows of another evaluation id.
    """

    path: Path
    agg: Aggregate
    sidecar: Path | None = None
    rows: list[tuple[int, Row]] | None = None
    notes: list[str] = field(default_factory=list)


def known(value: str | None) -> bool:
    """A recorded value, not EEE's placeholder (``unknown``, empty)."""
    return bool(value) and str(value).strip().lower() not in ("unknown", "none", "null")


def library_label(name: str | None, version: str | None) -> str:
    """``lm_eval 0.4.13`` as a run's source names it: EEE's ``unknown`` placeholders left out, and
    ``evaluation library not recorded`` where the name is one."""
    if not known(name):
        return "evaluation library not recorded"
    return str(name) + (f" {version}" if known(version) else "")


def source_line(agg: Aggregate) -> str:
    """The run's ``source`` as compare names it: ``EEE 0.2.0: helm_instruct`` — the schema version, then the
    evaluation library and its version where recorded (0.2.1 on), else ``source_metadata.source_name``."""
    lib = agg.eval_library
    if lib is not None and known(lib.name):
        tool = library_label(lib.name, lib.version)
    else:
        meta = agg.source_metadata or {}
        tool = str(meta.get("source_name") or "source not recorded")
    return f"EEE {agg.schema_version}: {tool}"


def read_legacy(path: Path, obj: Any) -> LegacyRecord:
    """A parsed record of schema 0.1.x/0.2.x, typed, with its sidecar's rows where the sidecar is beside it.

    Raises:
        InputError: a required field missing or of the wrong type (its JSON path named), or a sidecar that fails
            its checks (:func:`read_rows`).
    """
    schema = f"EEE schema {obj.get('schema_version')}" if isinstance(obj, dict) else "EEE schema"
    agg, notes = validate(Aggregate, obj, path, schema=schema)
    rec = LegacyRecord(path=path, agg=agg, notes=[f"'{path}': {n}" for n in notes])
    det = agg.detailed_evaluation_results
    if det is None:
        return rec
    sidecar = find_sidecar(path, det.file_path)
    if sidecar is None:
        rec.notes.append(f"'{path}': names the sidecar '{det.file_path}', which is not beside the record: its "
                         "aggregates are read, its per-doc values are not")
        return rec
    rec.sidecar = sidecar
    rec.rows = read_rows(sidecar, path, agg, rec.notes)
    return rec


def find_sidecar(path: Path, file_path: str) -> Path | None:
    """The sidecar a record names: its file name beside the record, else its relative path under the record's
    folder (a path that climbs out of the folder, or an absolute one, is not followed)."""
    name = PurePosixPath(file_path.replace("\\", "/"))
    beside = path.parent / name.name
    if name.name and beside.is_file():
        return beside
    if not name.is_absolute() and ".." not in name.parts and name.parts:
        under = path.parent.joinpath(*name.parts)
        if under.is_file():
            return under
    return None


def read_rows(sidecar: Path, path: Path, agg: Aggregate, notes: list[str]) -> list[tuple[int, Row]]:
    """The rows of a 0.2.x sidecar, checked against the record at ``path`` (rows of another ``evaluation_id`` are
    counted in a note).

    Raises:
        InputError: unreadable or over a limit, a checksum or row count other than the record's, a line that is not
            JSON or fails the row model.
    """
    det = agg.detailed_evaluation_results
    assert det is not None
    data = read_bytes(sidecar, LIMITS, "EEE sidecar")
    algorithm = (det.hash_algorithm or "sha256").lower()
    if det.checksum is not None and algorithm in ALGORITHMS:
        got = hashlib.new(algorithm, data).hexdigest()
        if got != det.checksum.strip().lower():
            raise InputError(sidecar, None, f"its {algorithm} {got[:16]}… differs from the record's checksum "
                                            f"{det.checksum[:16]}… ({path.name}): the sidecar was changed or "
                                            "truncated after the record was written")
    rows, others = [], 0
    for n, line in enumerate(decode(data, sidecar).split("\n"), 1):
        if not line.strip():
            continue
        row, dropped = validate(Row, parse_json(line, sidecar, LIMITS, f"line {n}: "), sidecar, where=f"line {n}: ",
                                schema=f"EEE schema {agg.schema_version}")
        notes += [f"'{sidecar}': {d}" for d in dropped]
        others += row.evaluation_id != agg.evaluation_id
        rows.append((n, row))
    if det.total_rows is not None and det.total_rows != len(rows):
        raise InputError(sidecar, None, f"holds {len(rows):,} rows; its record {path.name} says total_rows "
                                        f"{det.total_rows:,} (a truncated or extended sidecar)")
    if others:
        notes.append(f"'{sidecar}': {others} of {len(rows)} rows name another evaluation_id than the record's "
                     f"('{agg.evaluation_id[:60]}'); read as the record's rows")
    return rows
