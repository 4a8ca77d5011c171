"""The determinism step of the GPU check (``bench/gpu_determinism.sh`` installs batch_invariant_ops, then runs this).

For each dtype (float32, bfloat16) and each batch-invariant mode (off; on, through batch_invariant_ops where it
imports): ``repaudit determinism --axes batch --batch-sizes 1,8,64`` on the first ARC-Easy validation docs, each as
its own process (the mode's kernel overrides are per process), its JSON report under ``OUT/determinism``; then one
table, ``OUT/determinism/determinism.md``, printed too: per run and B, the docs whose log-likelihoods changed
against the doc alone, the largest |Δ| in nats, the flipped predictions and the verdict — or why the run did not
measure (a mode this build cannot run, a run past its time). No run starts after the budget; the step never fails
the check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu_check import _sh  # noqa: E402  (the check's own runner: command line and output in the log)

T0 = time.perf_counter()


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s [--device D] [--model M] [--data-dir DATA] [--limit N] [...] OUT")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="default")
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="docs probed (0: $REPAUDIT_DETERMINISM_LIMIT, else 100)")
    ap.add_argument("--dtypes", default=None, help="gpu_check.py's dtypes (default: $REPAUDIT_DETERMINISM_DTYPES, "
                                                   "else float32,bfloat16)")
    argv = sys.argv[1:]
    if not argv or argv[-1].startswith("-"):
        ap.error("the output folder OUT is the last argument")
    # gpu_check.py's own options (some with values) come along and are ignored: OUT is the last argument, as
    # gpu_check.sh's usage puts it
    a, _ = ap.parse_known_args(argv[:-1])
    a.out = Path(argv[-1])
    env = os.environ
    a.limit = a.limit or int(env.get("REPAUDIT_DETERMINISM_LIMIT", "100"))
    a.batches = env.get("REPAUDIT_DETERMINISM_BATCHES", "1,8,64")
    a.dtypes = (a.dtypes or env.get("REPAUDIT_DETERMINISM_DTYPES", "float32,bfloat16")).split(",")
    a.budget_s = float(env.get("REPAUDIT_DETERMINISM_BUDGET_S", "240"))
    return a


def _run(a: argparse.Namespace, dtype: str, invariant: bool, log: Path, report: Path) -> tuple[int, float]:
    """One ``repaudit determinism`` process; (exit code, wall seconds)."""
    cmd = [sys.executable, "-m", "repaudit", "determinism", "--task", "arc_easy", "--model", a.model, "--device",
           a.device, "--dtype", dtype, "--limit", str(a.limit), "--axes", "batch", "--batch-sizes", a.batches,
           "--json", "-o", str(report)]
    cmd += ["--data-dir", str(a.data_dir)] if a.data_dir else []
    cmd += ["--batch-invariant"] if invariant else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return _sh(cmd, log, env)


def _rows(name: str, report: dict, wall: float) -> list[str]:
    """Table rows of one run's report: one per batch size, or one saying why nothing was measured."""
    if report.get("unsupported"):
        return [f"| {name} | — | — | — | — | not measured: {report['unsupported']} | {wall:.0f} |"]
    axis = next(x for x in report["axes"] if x["axis"] == "batch")
    out = []
    for p in axis["points"]:
        delta = "0" if not p["max_abs_delta"] else f"{p['max_abs_delta']:.2e}"
        out.append(f"| {name} | {p['label']} | {p['docs_changed']}/{p['n_docs']} | {delta} | {p['flips']} | "
                   f"{p['verdict']} | {wall:.0f} |")
    return out


def main() -> int:
    a = _args()
    out = a.out.resolve() / "determinism"
    out.mkdir(parents=True, exist_ok=True)
    lines, notes = [], []
    if a.device == "cpu":
        notes.append("batch-invariant runs: not run on the CPU (batch_invariant_ops has Triton kernels for CUDA and "
                     "XPU only)")
    for dtype in a.dtypes:
        for invariant in (False, True) if a.device != "cpu" else (False,):
            name = f"arc_easy-{dtype}" + ("-batch-invariant" if invariant else "")
            spent = time.perf_counter() - T0
            if spent > a.budget_s:
                notes.append(f"{name}: not started, {spent:.0f} s spent of the {a.budget_s:.0f} s budget")
                continue
            report = out / f"{name}.json"
            rc, wall = _run(a, dtype, invariant, out / f"{name}.log", report)
            if not report.is_file():  # a crash or a usage error: no report to read
                notes.append(f"{name}: exit {rc}, no report (determinism/{name}.log)")
                continue
            r = json.loads(report.read_text())
            lines += _rows(name, r, wall)
            m = r["modes"]
            notes.append(f"{name}: exit {rc}; batch_invariant_ops {m.get('batch_invariant_ops') or 'not installed'}"
                         f", mode {'on' if m.get('batch_invariant_ops_mode') else 'off'}; CUBLAS_WORKSPACE_CONFIG "
                         f"{m.get('cublas_workspace_config') or 'unset'}; attention {m.get('attention')}; "
                         f"{r['n_docs']} docs, device {r['device']}")
    md = [f"## Determinism: each ARC-Easy doc alone vs among B − 1 other requests (batch sizes {a.batches})", "",
          "| run | B | docs changed | max \\|Δ ll\\| (nats) | flips | verdict | wall s |",
          "|---|---|---:|---:|---:|---|---:|", *lines, "", *(f"- {n}" for n in notes), ""]
    text = "\n".join(md)
    (out / "determinism.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
