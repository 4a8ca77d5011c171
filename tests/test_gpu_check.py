"""bench/gpu_check.sh end to end on the CPU: small, float32, the tiny model (the GPU's numbers need a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_runs_on_the_cpu_and_writes_its_table(tiny_model, shared_data, tmp_path):
    out = tmp_path / "out"
    cmd = ["bash", str(ROOT / "bench" / "gpu_check.sh"), "--python", sys.executable, "--device", "cpu",
           "--limit", "20", "--model", str(tiny_model), "--dtypes", "float32", "--arc-batch-sizes", "1,8",
           "--hellaswag-dtypes", "float32", "--hellaswag-batch-sizes", "8", "--data-dir", str(shared_data), str(out)]
    # one torch thread per process: a busy 2-core machine makes two threads much slower, not faster
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    md = (out / "gpu_check.md").read_text()
    assert md in res.stdout  # the table is printed as written
    for name in ("arc_easy-float32-b8", "arc_easy-float32-b1", "hellaswag-float32-b8"):
        rec = json.loads((out / f"{name}.json").read_text())
        assert len(rec["docs"]) == 20 and rec["fingerprint"]["settings"]["serving"]["device"] == "cpu"
        acc = next(m["value"] for m in rec["metrics"] if m["name"] == "acc")
        assert f"| {name} | 20 | {acc:.2%} |" in md
        assert rec["timings"]["gpu_memory_peak_mib"] is None  # no GPU counter on the CPU
        assert set(rec["timings"]["model_load_parts_s"]) >= {"tokenizer", "weights"}
    pair = json.loads((out / "compare-arc_easy-float32-b8-vs-arc_easy-float32-b1.json").read_text())
    assert pair["summary"]["differing"] == ["batch_size"]
    assert "| arc_easy-float32-b8 | arc_easy-float32-b1 | batch size | 20 |" in md
    att = json.loads((out / "attribute-arc_easy-float32-b1-vs-arc_easy-float32-b8.json").read_text())
    # the hybrids are the runs themselves: every batch comes from the runs' store
    assert att["factors"] == ["batch_size"] and att["computed_batches"] == 0 and att["cached_batches"] > 0
    assert "arc_easy-float32-b1 → arc_easy-float32-b8 (acc, 20 docs)" in md
    # lm-eval ran on the largest batch, or the table says why it did not
    assert "| arc_easy-float32-b8 | 20 |" in md.split("## lm-eval")[1] or "- lm-eval: " in md
