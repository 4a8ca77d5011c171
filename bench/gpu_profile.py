"""Profile of one GPU check run: the top kernels by time over a few batches after warm-up.

Loads the model as ``repaudit run`` would (the same RunConfig, docs and requests), scores the requests of the first
``--warmup`` batches (kernel selection, allocator and caches settle), then the requests of the next ``--batches``
batches under ``torch.profiler`` (CPU and, on a GPU, CUDA activity), and writes JSON to OUT: the top ops by self
time on the device (CUDA kernels; on a CPU run the CPU ops), each with calls, milliseconds and share of the
profiled device time, and the backend's split of that time (``eval_parts``).

    python bench/gpu_profile.py OUT.json --task arc_easy --model DIR --device cuda --dtype bfloat16 \\
        --batch-size 64 --data-dir DATA [--limit N] [--num-fewshot K]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

#: ops listed per run
TOP = 8


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--task", required=True)
    ap.add_argument("--model", default="default")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch-size", default="8")
    ap.add_argument("--scoring-strategy", default="full_sequence")
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--num-fewshot", type=int)
    ap.add_argument("--cache-dir", type=Path)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batches", type=int, default=3)
    return ap.parse_args()


def _requests(a: argparse.Namespace):
    """``(backend, requests in batches)``: the run's backend and its loglikelihood requests, grouped as the backend
    batches them (``plan_loglikelihood``; the shared-prefix strategy: in request order, batch-size slices)."""
    from rich.console import Console

    from repaudit.backends.model_source import resolve_model
    from repaudit.run.pool import load
    from repaudit.run.runner import (
        RunConfig,
        check_config,
        default_cache_dir,
        generation_settings,
        load_docs,
        render_requests,
    )

    cfg = RunConfig(task=a.task, model=a.model, device=a.device, dtype=a.dtype,
                    batch_size=a.batch_size if a.batch_size == "auto" else int(a.batch_size),
                    scoring_strategy=a.scoring_strategy, data_dir=a.data_dir, limit=a.limit or None,
                    num_fewshot=a.num_fewshot, cache_dir=a.cache_dir, use_batch_cache=False)
    task, err = check_config(cfg), Console(stderr=True, quiet=True)
    docset = load_docs(task, cfg, err)
    backend = load(resolve_model(cfg.model, None, cfg.cache_dir or default_cache_dir()), cfg)
    rendered = render_requests(task, cfg, docset, backend, generation_settings(task, cfg, backend.info.eos_token))
    requests = [r for rd in rendered for r in rd.all_requests]
    if backend.scoring_strategy == "full_sequence":
        batches, _ = backend.plan_loglikelihood(requests)
        return backend, [[requests[m] for g in b for m in g] for b in batches]
    size = backend.batch_size if backend.batch_size != "auto" else 64
    return backend, [requests[k:k + size] for k in range(0, len(requests), size)]


def _top(prof, on_gpu: bool) -> tuple[list[dict], float]:
    """The top ops by self device time (CUDA) or self CPU time, and the total of that time in ms."""
    rows = []
    for e in prof.key_averages():
        if on_gpu:
            t = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        else:
            t = e.self_cpu_time_total
        rows.append((t / 1000.0, e.key, e.count))
    total = sum(t for t, _, _ in rows)
    rows.sort(reverse=True)
    return [{"op": k[:120], "calls": c, "ms": round(t, 3), "share": round(t / total, 4) if total else 0.0}
            for t, k, c in rows[:TOP]], total


def main() -> int:
    a = _args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from repaudit.backends.device import synchronize

    backend, batches = _requests(a)
    warm, measured = batches[:a.warmup], batches[a.warmup:a.warmup + a.batches] or batches[-1:]
    for reqs in warm:
        backend.loglikelihood(reqs)
    on_gpu = torch.device(a.device).type == "cuda"
    backend.configure(backend.serving)  # counters from zero: eval_parts of the profiled batches only
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    synchronize(a.device)
    t = time.perf_counter()
    with profile(activities=activities) as prof:
        for reqs in measured:
            backend.loglikelihood(reqs)
        synchronize(a.device)
    wall = time.perf_counter() - t
    top, total = _top(prof, on_gpu)
    out = {"device": a.device, "dtype": a.dtype, "batches": len(measured), "rows": [len(r) for r in measured],
           "wall_s": round(wall, 4), "device_time_ms": round(total, 3), "kind": "cuda" if on_gpu else "cpu",
           "top": top, "eval_parts": {k: round(v, 4) for k, v in sorted(backend.eval_parts.items())},
           "engine": backend.info.engine}
    a.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
