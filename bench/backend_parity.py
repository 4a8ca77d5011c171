"""transformers vs vLLM on the same model, docs and settings: agreement, |Δ loglikelihood|, acc, wall.

Run it where vLLM is installed (``make install-vllm``)::

    .venv-vllm/bin/python bench/backend_parity.py --limit 100 --dtype float32 --dtype bfloat16 --out /tmp/parity

Each (backend, dtype) run is written to ``OUT/<backend>-<dtype>.json``, so ``repaudit attribute
OUT/hf-float32.json OUT/vllm-bfloat16.json`` afterwards re-uses every batch from the store.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from repaudit.run.records import write_record
from repaudit.run.runner import BackendPool, RunConfig, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="arc_easy")
    ap.add_argument("--model", default="default")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--dtype", action="append", default=None)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", type=Path, default=Path("parity"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for dtype in args.dtype or ["float32"]:
        recs, walls = {}, {}
        for backend in ("hf", "vllm"):
            pool = BackendPool()  # a fresh load per run, so that wall time includes it for both
            cfg = RunConfig(task=args.task, model=args.model, data_dir=args.data_dir, limit=args.limit,
                            backend=backend, dtype=dtype, batch_size=args.batch_size)
            t = time.perf_counter()
            recs[backend] = run(cfg, backends=pool)
            walls[backend] = time.perf_counter() - t
            write_record(recs[backend], args.out / f"{backend}-{dtype}.json")
        a, b = recs["hf"].docs, recs["vllm"].docs
        dll = np.abs(np.concatenate([np.subtract(x.loglikelihoods, y.loglikelihoods) for x, y in zip(a, b)]))
        agree = np.mean([x.prediction == y.prediction for x, y in zip(a, b)])
        acc = [np.mean([d.metrics["acc"] for d in r.docs]) for r in (recs["hf"], recs["vllm"])]
        rows.append((dtype, len(a), acc[0], acc[1], agree, dll.max(), dll.mean(), walls["hf"], walls["vllm"],
                     recs["vllm"].fingerprint.backend.engine.get("attention_backend")))
    print("| dtype | docs | acc hf | acc vllm | per-doc agreement | max abs dll | mean abs dll | wall hf s | "
          "wall vllm s | vLLM attention |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.4f} | {r[3]:.4f} | {100 * r[4]:.1f} % | {r[5]:.2e} | {r[6]:.2e} | "
              f"{r[7]:.1f} | {r[8]:.1f} | {r[9]} |")


if __name__ == "__main__":
    main()
