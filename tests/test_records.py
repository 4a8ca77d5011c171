"""Run files: strict schema, clear errors for foreign or malformed files, atomic writes."""

from __future__ import annotations

import json

import pytest

from repaudit.errors import RepauditError
from repaudit.run.fingerprint import Fingerprint
from repaudit.run.records import read_record, write_atomic


def test_malformed_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(RepauditError, match="x.json': is not valid JSON"):
        read_record(p)


def test_foreign_json(tmp_path, lmeval_runs):
    p = next((lmeval_runs / "s1").rglob("results_*.json"))
    with pytest.raises(RepauditError, match="is not a repaudit run"):
        read_record(p)


def test_schema_mismatch_names_the_field(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"kind": "repaudit.run", "schema_version": 2}))
    with pytest.raises(RepauditError, match=r"x.json.: \$.repaudit_version: is missing \(required\) \(run schema v2\)"):
        read_record(p)


def test_fingerprint_rejects_unknown_keys():
    with pytest.raises(Exception, match="Extra inputs are not permitted"):
        Fingerprint.model_validate({"schema_version": 1, "surprise": 1})


def test_write_atomic_leaves_no_partial_file(tmp_path):
    p = tmp_path / "out.json"

    with pytest.raises(TypeError):
        write_atomic(p, 12345)  # not a str: the write fails midway
    assert not p.exists() and list(tmp_path.iterdir()) == []


def test_a_run_file_with_no_docs_is_refused(tmp_path):
    """Issue 63: a run file whose docs list is empty was accepted silently (its metrics still claimed 3 docs)."""
    import json
    from pathlib import Path

    from repaudit.boundary import InputError

    raw = json.loads((Path(__file__).parent / "fixtures" / "repaudit_runs" / "arc_easy_3docs.json").read_text())
    raw["docs"] = []
    p = tmp_path / "empty.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(InputError, match=r"\$\.docs: is empty: a run file holds one result per evaluated doc \(its "
                                         r"metrics count 3\)"):
        read_record(p)
