"""Parity and speed: lm-evaluation-harness 0.4.13 vs ``repaudit run`` on the same model, docs and settings.

Runs both, one after the other, in one invocation, and prints a table: docs/s of each, their
ratio, per-doc agreement of predictions, max |Δ log-likelihood| and acc of each.

    make install-lmeval
    .venv/bin/python bench/parity_lmeval.py --data-dir ../shared/data \
        --lmeval .venv-lmeval/bin/lm_eval --case arc_easy:0 --case piqa:300

lm-eval runs offline with a local model directory (repaudit's converted copy of the default
model) and task YAMLs with ``dataset_path: json`` that mirror its built-in tasks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from lmeval_tasks import write_tasks


def _run_lmeval(lm_eval: str, model_dir: Path, task: str, limit: int, dtype: str, bs: int, nshot: int,
                data_dir: Path, work: Path) -> tuple[float, list[dict], dict]:
    tasks_dir = work / "tasks"
    write_tasks(task, data_dir, tasks_dir, limit)
    out = work / f"lmeval-{task}"
    cmd = [lm_eval, "--model", "hf", "--model_args", f"pretrained={model_dir},dtype={dtype}", "--tasks", task,
           "--include_path", str(tasks_dir), "--device", "cpu", "--batch_size", str(bs), "--num_fewshot", str(nshot),
           "--log_samples", "--output_path", str(out)]
    if limit:
        cmd += ["--limit", str(limit)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(tasks_dir)}
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    samples = [json.loads(line) for line in next(out.rglob("samples_*.jsonl")).open()]
    results = json.loads(next(out.rglob("results_*.json")).read_text())["results"][task]
    return wall, samples, results


def _run_repaudit(task: str, limit: int, dtype: str, bs: int, nshot: int, data_dir: Path, work: Path
                  ) -> tuple[float, dict]:
    out = work / f"repaudit-{task}.json"
    cmd = [sys.executable, "-m", "repaudit", "run", "--task", task, "--data-dir", str(data_dir), "--dtype", dtype,
           "--batch-size", str(bs), "--num-fewshot", str(nshot), "-o", str(out), "--no-cache"]
    if limit:
        cmd += ["--limit", str(limit)]
    # The converted model comes from the shared cache (as lm-eval reads the same converted folder);
    # --no-cache makes repaudit compute every batch.
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--lmeval", required=True, help="path of the lm_eval executable (its own venv)")
    ap.add_argument("--case", action="append", default=[], help="TASK:LIMIT (0 = all docs)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--num-fewshot", type=int, default=0)
    args = ap.parse_args()

    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.runner import default_cache_dir

    model_dir = resolve_default_model(default_cache_dir()).path
    # the model loads and converts once into the shared cache; each tool then reads the same folder
    rows = []
    for case in args.case or ["arc_easy:0"]:
        task, limit = case.split(":")
        limit = int(limit)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            lm_wall, samples, lm_res = _run_lmeval(args.lmeval, model_dir, task, limit, args.dtype, args.batch_size,
                                                   args.num_fewshot, args.data_dir.resolve(), work)
            ra_wall, rec = _run_repaudit(task, limit, args.dtype, args.batch_size, args.num_fewshot,
                                         args.data_dir.resolve(), work)
        by_id = {d["doc_id"]: d for d in rec["docs"]}
        agree, max_d = 0, 0.0
        for s in samples:
            lm_ll = [float(r[0][0]) for r in s["resps"]]
            mine = by_id[s["doc_id"]]
            agree += int(np.argmax(lm_ll)) == mine["prediction"]
            max_d = max(max_d, max(abs(a - b) for a, b in zip(lm_ll, mine["loglikelihoods"])))
        n = len(samples)
        acc = {m["name"]: m["value"] for m in rec["metrics"]}
        rows.append((task, n, args.dtype, args.batch_size, args.num_fewshot, n / lm_wall, n / ra_wall,
                     lm_wall / ra_wall, agree / n, max_d, lm_res["acc,none"], acc["acc"]))
    head = ("task", "docs", "dtype", "bs", "shots", "lm-eval docs/s", "repaudit docs/s", "ratio",
            "agreement", "max|Δll|", "lm-eval acc", "repaudit acc")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} | "
              f"{100 * r[8]:.2f}% | {r[9]:.2e} | {r[10]:.4f} | {r[11]:.4f} |")
    print("docs/s are whole-process wall times (imports, model load, scoring, writing) of each tool.")


if __name__ == "__main__":
    main()
