"""Local and Ray executors: the same grid gives the same numbers, and Ray's batches reach the driver's store."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repaudit.audit.executor import LocalExecutor, make_executor
from repaudit.audit.sweep import sweep
from repaudit.backends.store import BatchCache, RecordingCache
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.run.runner import RunConfig


def _base(tiny_model, shared_data, cache_dir, **kw):
    return RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=8, batch_size=4,
                     cache_dir=cache_dir, **kw)


def _strip(result) -> dict:
    # A run's fingerprint records torch's thread count, which differs between a Ray task (one CPU)
    # and this process; everything measured must be equal.
    d = result.model_dump()
    d.pop("computed_batches"), d.pop("cached_batches")  # where the work was done, not what was measured
    d.pop("placements")  # where each configuration ran: checked by the test
    for p in d["points"]:
        p.pop("fingerprint_digest")
    return d


@pytest.fixture(scope="module")
def ray_executor():
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.9'; make test installs it)")
    import ray

    ex = make_executor("ray", workers=2)
    yield ex
    ray.shutdown()


def test_recording_cache_keeps_new_batches_and_reads_through(tmp_path):
    store = tmp_path / "b.sqlite"
    BatchCache(store).put("c", "old", [1])
    rec = RecordingCache(store)
    assert rec.get("c", "old") == [1]
    rec.put("c", "new", [2])
    assert rec.new == [("c", "new", [2])]
    mem = RecordingCache(None)
    assert mem.get("c", "old") is None  # a private store when the driver's file is unreachable


def test_local_and_ray_sweeps_give_identical_results(tiny_model, shared_data, tmp_path, ray_executor):
    # separate stores, so that the Ray run cannot just read what the local run computed
    local = sweep(_base(tiny_model, shared_data, tmp_path / "local"), "batch_size", [1, 3, 8], LocalExecutor())
    remote = sweep(_base(tiny_model, shared_data, tmp_path / "ray"), "batch_size", [1, 3, 8], ray_executor)
    assert _strip(local) == _strip(remote)
    assert {(p.executor, p.ray_node) for p in local.placements} == {("local", None)}
    assert {p.executor for p in remote.placements} == {"ray"} and all(p.ray_node for p in remote.placements)
    # every batch the Ray workers computed is in the driver's store, so a local re-run computes nothing
    n_ray = BatchCache(tmp_path / "ray" / "batches.sqlite").count()
    assert n_ray == BatchCache(tmp_path / "local" / "batches.sqlite").count() > 0
    seen = []
    again = sweep(_base(tiny_model, shared_data, tmp_path / "ray"), "batch_size", [1, 3, 8],
                  LocalExecutor(), progress=lambda d, t: seen.append((d, t)))
    assert _strip(again) == _strip(remote)
    assert seen[-1][0] == seen[-1][1] == 5  # base + one uncached floor run + three values


def test_ray_task_errors_come_back_as_one_line(tiny_model, shared_data, tmp_path, ray_executor):
    # a settings error is refused before any task is sent (RunConfig checks itself); a missing data folder is
    # found only where the run executes, inside the Ray worker
    bad = _base(tiny_model, tmp_path / "no-such-data", tmp_path)
    with pytest.raises(RepauditError, match="no-such-data") as exc:
        ray_executor.map([bad])
    assert "\n" not in str(exc.value) and "Traceback" not in str(exc.value)


def test_cli_rejects_an_unknown_executor(tiny_model):
    res = CliRunner().invoke(app, ["sweep", "--factor", "batch_size", "--values", "1", "--model", str(tiny_model),
                                   "--executor", "slurm"])
    assert res.exit_code == 1 and "unknown executor 'slurm'" in res.stderr


def test_cli_sweep_on_ray(tiny_model, shared_data, tmp_path, ray_executor):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(app, ["sweep", "--factor", "padding_side", "--values", "left", "--model", str(tiny_model),
                                   "--data-dir", str(shared_data), "--limit", "4", "--cache-dir", str(tmp_path / "c"),
                                   "--executor", "ray", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["points"][0]["flip_rate"] == 0.0


def test_the_work_meter_counts_tokens_inside_a_configuration_and_falls_back_to_docs():
    from repaudit.run.progress import WorkMeter

    m = WorkMeter()
    assert m.text() == ""
    m.plan([1000.0, 0.0, 3000.0], [10, 10, 10], prior_rate=500.0)
    assert m.text() == ("0 of 4,000 tokens computed (500 tokens/s measured by earlier runs in the batch store), "
                        "~8 s left")
    m.start()
    m.share(0.5)
    assert m.text().startswith("500 of 4,000 tokens computed (") and "tokens/s measured)" in m.text()
    m.finish()
    m.start()
    m.finish()  # a configuration whose batches are all in the store adds nothing
    assert m.done == 1000
    generated = WorkMeter()  # a generate_until grid cannot plan tokens: its docs are counted
    generated.plan([None, 500.0], [40, 60], prior_rate=900.0)
    assert (generated.unit, generated.planned, generated.prior) == ("docs", 100.0, None)


def test_a_grid_shows_progress_inside_a_configuration_with_the_time_left_from_tokens(tiny_model, shared_data,
                                                                                      tmp_path, monkeypatch):
    """Issue 63: '~13 min left' stayed the same for 50 min, because the grid's progress moved only when a
    configuration ended. The plain lines (stderr not a terminal) now move inside a configuration, and their time
    left is the tokens still to compute over the tokens per second measured."""
    import re

    import repaudit.run.progress as progress

    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.0)
    res = CliRunner().invoke(app, ["sweep", "--factor", "batch_size", "--values", "1,2", "--task", "arc_easy",
                                   "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "120",
                                   "--cache-dir", str(tmp_path / "c"), "--noise-seeds", "1"])
    assert res.exit_code == 0, res.output
    lines = [x for x in res.stderr.splitlines() if x.startswith("sweep: ")]
    inside = [x for x in lines if re.match(r"sweep: \d/\d configurations \((?!0 %|25 %|50 %|75 %|100 %)\d+ %\)", x)]
    assert inside, lines  # a share of a configuration, not a whole one
    eta = [re.search(r"([\d,]+) of ([\d,]+) tokens computed \(([\d,]+) tokens/s measured\), ~\d+ s left", x)
           for x in inside]
    assert all(eta) and all(int(m.group(1).replace(",", "")) <= int(m.group(2).replace(",", "")) for m in eta)
    assert lines[-1].startswith("sweep: ") and "done in" in lines[-1]
