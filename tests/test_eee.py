"""Every Eval Ever: records of EEE's own lm-eval converter compared doc by doc, bad records refused in one line."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit import api
from repaudit.cli import app
from repaudit.importers import detect
from repaudit.importers.eee.schema import SCHEMA_DIR, SCHEMA_FILES

FIX = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"
runner = CliRunner()

#: the flips compare of ../shared/lmeval_runs/s1 and s3 finds (repaudit compare … --json)
S1_S3_FLIPS = {("acc", 85), ("acc", 135), ("acc", 178), ("acc", 316), ("acc", 417), ("acc", 431), ("acc", 462),
               ("acc_norm", 27), ("acc_norm", 365)}


def _one_error_line(res, code: int = 1) -> str:
    assert res.exit_code == code, res.output
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:"), res.stderr
    return errors[0]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    """The two folders EEE's own lm-eval converter wrote from ../shared/lmeval_runs/s1 and s3."""
    out = tmp_path_factory.mktemp("converted")
    with tarfile.open(FIX / "eee" / "lmeval_s1_s3.tar.xz") as tar:
        tar.extractall(out, filter="data")
    return out


def test_the_vendored_schemas_are_eees_0_3_0_as_sources_md_says():
    sources = (SCHEMA_DIR / "SOURCES.md").read_text()
    for name in SCHEMA_FILES.values():
        data = (SCHEMA_DIR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() in sources
        assert json.loads(data)["version"] == "0.3.0"
    assert "MIT License" in (SCHEMA_DIR / "LICENSE").read_text()


def test_eees_own_conversions_flip_the_docs_lmeval_flips(converted):
    detect._cache.clear()
    c = api.compare(converted / "s1", converted / "s3", n_boot=200)
    counts = Counter((f.metric, f.direction) for f in c.flips)
    assert counts == {("acc", "right_to_wrong"): 6, ("acc", "wrong_to_right"): 1, ("acc_norm", "right_to_wrong"): 2}
    assert {(f.metric, f.doc_id) for f in c.flips} == S1_S3_FLIPS
    assert [(r.group, r.field, r.a, r.b) for r in c.factors if r.status == "differs"] == [
        ("dtype", "dtype", "float32", "bfloat16")]
    assert {r.field for r in c.factors if r.status == "unknown"} >= {"batch_size", "python", "padding_side"}
    assert c.docs[0].doc_hash_equal == 570 and c.docs[0].prediction_equal == 562


@pytest.mark.skipif(not (SHARED / "lmeval_runs").is_dir(), reason="../shared/lmeval_runs is absent")
def test_eee_conversions_and_the_lmeval_runs_agree(converted):
    direct = api.compare(SHARED / "lmeval_runs" / "s1", SHARED / "lmeval_runs" / "s3", n_boot=200)
    assert {(f.metric, f.doc_id) for f in direct.flips} == S1_S3_FLIPS
    mixed = api.compare(SHARED / "lmeval_runs" / "s1", converted / "s3", n_boot=200)  # one file of each
    assert {(f.metric, f.doc_id) for f in mixed.flips} == S1_S3_FLIPS


def _copy(src: Path, dst: Path) -> tuple[Path, Path]:
    shutil.copytree(src, dst)
    record = next(p for p in dst.rglob("*.json"))
    return record, record.with_name(record.stem + "_samples.jsonl")


def _reseal(record: Path, sidecar: Path) -> None:
    """Record the sidecar's current checksum and row count, as if the edit had been made before."""
    agg = json.loads(record.read_text())
    data = sidecar.read_bytes()
    agg["detailed_evaluation_results"].update(checksum=hashlib.sha256(data).hexdigest(),
                                              total_rows=len(data.decode().splitlines()))
    record.write_text(json.dumps(agg))


def _truncated(record: Path, sidecar: Path) -> None:
    sidecar.write_bytes(sidecar.read_bytes()[:-700])


def _changed(record: Path, sidecar: Path) -> None:
    sidecar.write_text(sidecar.read_text().replace('"score": 0.0', '"score": 1.0', 1))


def _old_schema(record: Path, sidecar: Path) -> None:
    record.write_text(record.read_text().replace('"schema_version": "0.3.0"', '"schema_version": "0.2.2"', 1))


def _number_in_metadata(record: Path, sidecar: Path) -> None:
    lines = sidecar.read_text().splitlines()
    row = json.loads(lines[0])
    row["metadata"]["doc_hash"] = 5
    sidecar.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    _reseal(record, sidecar)


def _row_dropped(record: Path, sidecar: Path) -> None:
    sidecar.write_text("".join(sidecar.read_text().splitlines(keepends=True)[:-1]))
    agg = json.loads(record.read_text())
    agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    record.write_text(json.dumps(agg))


@pytest.mark.parametrize("damage,needle", [
    (_truncated, "differs from the record's checksum"),
    (_changed, "differs from the record's checksum"),
    (_old_schema, '$.schema_version: is "0.2.2": this repaudit reads Every Eval Ever schema 0.3.0 only'),
    (_number_in_metadata, "line 1: $.metadata.doc_hash: 5 is not of type 'string'"),
    (_row_dropped, "rows; its record"),
])
def test_a_bad_record_is_one_error_line(converted, tmp_path, damage, needle):
    record, sidecar = _copy(converted / "s1", tmp_path / "bad")
    damage(record, sidecar)
    detect._cache.clear()
    assert needle in _one_error_line(runner.invoke(app, ["compare", str(tmp_path / "bad"), str(converted / "s3")]))
