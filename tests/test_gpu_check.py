"""bench/gpu_check.sh end to end on the CPU: small, float32, the tiny model and the tiny synthetic one (the GPU's
numbers need a GPU). Its steps run ``--in-process`` (one interpreter, imports paid once: 27 s instead of 90 s); the
subprocess runner they otherwise go through is the one bench/gpu_determinism.sh's test runs."""

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
           "--hellaswag-dtypes", "float32", "--hellaswag-batch-sizes", "8", "--data-dir", str(shared_data),
           "--synthetic", "tiny", "--synthetic-tasks", "mmlu", "--synthetic-other-dtypes", "float32",
           "--profile-batches", "1",
           "--budget-s", "100000", "--no-determinism", "--in-process", str(out)]  # the budget: every step runs
    # one torch thread per process: a busy 2-core machine makes two threads much slower, not faster
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"})
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
    # the batch size asked and the batches it ran: nothing else differs
    assert _differing(pair) == {"serving.batch_size", "engine.batch_sizes_used"}
    assert "| arc_easy-float32-b8 | arc_easy-float32-b1 | batch size | 20 |" in md
    att = json.loads((out / "attribute-arc_easy-float32-b1-vs-arc_easy-float32-b8.json").read_text())
    # the hybrids are the runs themselves: every batch comes from the runs' store
    assert att["factors"] == ["batch_size"] and att["computed_batches"] == 0 and att["cached_batches"] > 0
    assert "arc_easy-float32-b1 → arc_easy-float32-b8 (acc, 20 docs)" in md
    # lm-eval ran on the largest batch, or the table says why it did not
    assert "| arc_easy-float32-b8 | 8 | 20 |" in md.split("## lm-eval")[1] or "- lm-eval: " in md
    _check_split_and_auto(out, md)
    _check_synthetic(out, md)
    _check_profile(out, md)


def _check_split_and_auto(out: Path, md: str) -> None:
    """The table's eval split is the record's; auto batches record their budget and score as batch 8 does."""
    from repaudit.backends.base import EVAL_PARTS
    from repaudit.backends.batching import CPU_BATCH_TOKENS

    rec = json.loads((out / "arc_easy-float32-b8.json").read_text())
    t = rec["timings"]
    split = " / ".join(f"{t['eval_parts_s'][k]:.2f}" for k in EVAL_PARTS)
    assert f"| {t['eval_s']:.2f} | {split} |" in md and "(unknown)" in md  # no peak FLOP/s for a CPU
    auto = json.loads((out / "arc_easy-float32-bauto.json").read_text())
    assert auto["fingerprint"]["backend"]["engine"]["batch_tokens"] == CPU_BATCH_TOKENS
    assert auto["fingerprint"]["settings"]["serving"]["batch_size"] == "auto"
    for a, b in zip(auto["docs"], rec["docs"]):
        assert max(abs(x - y) for x, y in zip(a["loglikelihoods"], b["loglikelihoods"])) < 1e-4


def _check_synthetic(out: Path, md: str) -> None:
    """The synthetic model has the published shapes, the tokenizer's vocabulary, and runs like any model."""
    sys.path.insert(0, str(ROOT / "bench"))
    from synthetic_model import SHAPES
    from transformers import AutoConfig, AutoTokenizer

    folder = out / "cache" / "synthetic" / "tiny-seed0"
    cfg, tok = AutoConfig.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    rope = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta")  # transformers 5 nests it
    assert all(getattr(cfg, k) == v for k, v in SHAPES["tiny"].items() if k != "rope_theta")
    assert rope == SHAPES["tiny"]["rope_theta"] and cfg.vocab_size == len(tok)
    params = json.loads((folder / "synthetic.json").read_text())["parameters"]
    for task in ("mmlu",):  # ARC-Easy runs as the tiny model's above: one synthetic task keeps the test short
        rec = json.loads((out / f"syn-tiny-{task}-float32-b8.json").read_text())
        assert len(rec["docs"]) == 20 and rec["fingerprint"]["model"]["num_parameters"] == params
        assert f"| syn-tiny-{task}-float32-b8 | 20 |" in md
    assert f"{params:,} parameters" in md
    # the shared-prefix strategy beside full_sequence on the last task, compared
    pair = json.loads((out / "compare-syn-tiny-mmlu-float32-b8-vs-syn-tiny-mmlu-float32-b8-sp.json").read_text())
    assert _differing(pair) == {"serving.scoring_strategy"}
    assert "| syn-tiny-mmlu-float32-b8 | syn-tiny-mmlu-float32-b8-sp | scoring strategy | 20 |" in md


def _differing(pair: dict) -> set[str]:
    """The settings paths a compare JSON reports as differing in any task."""
    return {f["path"] for f in pair["factors"] if f["status"] == "differs"}


def _check_profile(out: Path, md: str) -> None:
    """A profile per ARC run at the largest batch: CPU ops on a CPU run, shares of the profiled time."""
    for name in ("arc_easy-float32-b8",):
        prof = json.loads((out / f"profile-{name}.json").read_text())
        assert prof["kind"] == "cpu" and prof["top"] and sum(t["share"] for t in prof["top"]) <= 1.0 + 1e-6
        assert prof["top"] == sorted(prof["top"], key=lambda t: -t["ms"]) and f"### {name}" in md
        assert any("addmm" in t["op"] or "mm" in t["op"] or "linear" in t["op"] for t in prof["top"])
