"""A run killed mid-way resumes from the SQLite store and ends bit-identical to an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time


def _batches(db) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(str(db), timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_killed_run_resumes_without_recomputing(tiny_model, shared_data, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "run.json"
    cmd = [sys.executable, "-m", "repaudit", "run", "--task", "arc_easy", "--model", str(tiny_model),
           "--data-dir", str(shared_data), "--limit", "40", "--batch-size", "1", "--cache-dir", str(cache),
           "-o", str(out)]
    env = {**os.environ, "REPAUDIT_CACHE_DIR": str(cache)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = cache / "batches.sqlite"
    deadline = time.time() + 120
    while _batches(db) < 20 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = _batches(db)
    assert done_before > 0 and not out.exists(), "the kill must land mid-run, before the file is written"

    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resumed = json.loads(out.read_text())
    assert resumed["timings"]["cached_batches"] >= done_before
    assert resumed["timings"]["computed_batches"] == _batches(db) - done_before

    fresh_out = tmp_path / "fresh.json"
    fresh_cache = tmp_path / "fresh-cache"
    # the uninterrupted run in this process (the same command; a third interpreter start buys nothing)
    from typer.testing import CliRunner

    from repaudit.cli import app

    res = CliRunner().invoke(app, cmd[3:-4] + ["--cache-dir", str(fresh_cache), "-o", str(fresh_out)],
                             env={"REPAUDIT_CACHE_DIR": str(fresh_cache)})
    assert res.exit_code == 0, res.output
    fresh = json.loads(fresh_out.read_text())
    assert [d["loglikelihoods"] for d in resumed["docs"]] == [d["loglikelihoods"] for d in fresh["docs"]]
    assert resumed["fingerprint_digest"] == fresh["fingerprint_digest"]


def test_log_progress_ends_on_how_long_the_work_took_not_on_a_time_left():
    import io

    from rich.console import Console

    from repaudit.run.progress import progress

    buf = io.StringIO()
    with progress(Console(file=buf, force_terminal=False, width=200), "attribution", 80, unit="configurations",
                  interval=0.0) as p:
        p.advance(24)  # work that stops early, as --precision does when its precision is reached
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("attribution: 24/80 configurations (30 %)") and "left" in lines[0]
    assert lines[-1].startswith("attribution: 24/80 configurations (30 %)") and "done in" in lines[-1]
    assert "left" not in lines[-1]
