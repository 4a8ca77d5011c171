"""``repaudit determinism``'s process axis: the base configuration in a fresh process each time — the model loaded
again, the libraries imported again — so that load-time nondeterminism (a kernel picked by a benchmark at start-up,
an allocation order, a thread pool sized from the machine's load) shows; each process records the environment that
governs numerics.

The parent writes the configuration and the probed doc ids to a JSON file and runs ``python -m
repaudit.audit.determinism_process IN OUT``; the child rebuilds the probed docs, answers their requests as a run
does (no batch store), and writes the answers and its environment to ``OUT`` (JSON floats keep every bit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from repaudit.audit.determinism import AxisResult
from repaudit.audit.determinism_probe import Context, compare, result
from repaudit.errors import RepauditError
from repaudit.tasks.requests import GenerateRequest, Generation, LoglikelihoodResult

#: environment variables that govern numerics (thread pools, BLAS, cuBLAS workspaces, TF32, vLLM's invariance)
NUMERIC_PREFIXES = ("OMP_", "MKL_", "KMP_", "OPENBLAS_", "CUBLAS_", "CUDA_", "NVIDIA_TF32", "TORCH_",
                    "VLLM_BATCH_INVARIANT", "VLLM_CPU_", "PYTORCH_")


def numerics_environment() -> dict[str, Any]:
    """This process's numerics: torch's intra- and inter-op threads, its deterministic-algorithms switch, the
    machine's cores, and every environment variable of :data:`NUMERIC_PREFIXES` (none of them holds a credential)."""
    import torch

    return {"torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(), "cpu_count": os.cpu_count(),
            "variables": {k: v for k, v in sorted(os.environ.items()) if k.startswith(NUMERIC_PREFIXES)}}


def axis_process(c: Context) -> AxisResult:
    """The base configuration in ``processes`` fresh processes, each against the first."""
    p = c.probe
    t0 = time.perf_counter()
    ids = [rd.doc.doc_id for rd in p.docs]
    runs = []
    with c.bar("process", len(p.docs) * c.opts.processes) as bar:
        for _ in range(c.opts.processes):
            runs.append(run_in_process(p.cfg, ids))
            bar.advance(len(p.docs))
    ref = p.score(runs[0][0])
    points = []
    for k, (answers, env) in enumerate(runs[1:], start=2):
        pt = compare(p, ref, p.score(answers), f"process {k}")
        pt.environment = env
        points.append(pt)
    notes = ["each process imports the libraries and loads the model again (a served model: a new client of the "
             "same server)"]
    return result("process", "process 1", ref, points, notes, t0, reference_environment=runs[0][1])


def run_in_process(cfg, doc_ids: list[int]) -> tuple[list[list], dict[str, Any]]:
    """The probed docs' answers from a fresh Python process, and its numerics environment.

    Raises:
        RepauditError: the child failed (its last error line), or probed other docs.
    """
    with tempfile.TemporaryDirectory(prefix="repaudit-process-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"config": json.loads(cfg.model_dump_json()), "doc_ids": doc_ids}))
        proc = subprocess.run([sys.executable, "-m", "repaudit.audit.determinism_process", str(src), str(dst)],
                              capture_output=True, text=True, env=os.environ.copy())
        if proc.returncode != 0 or not dst.is_file():
            lines = [x for x in (proc.stderr or "").strip().splitlines() if x.strip()]
            raise RepauditError(f"the process axis's child process failed ({lines[-1] if lines else proc.returncode})")
        out = json.loads(dst.read_text())
    if out["doc_ids"] != doc_ids:
        raise RepauditError("the process axis's child process probed other docs than this one")
    return [[_answer(a) for a in doc] for doc in out["answers"]], out["environment"]


def _answer(a: dict[str, Any]):
    if "text" in a:
        return Generation(a["text"], a["n_tokens"], a["finish"])
    return LoglikelihoodResult(logprob=a["logprob"], is_greedy=a["is_greedy"], n_tokens=a["n_tokens"])


def _dump(a) -> dict[str, Any]:
    if isinstance(a, Generation):
        return {"text": a.text, "n_tokens": a.n_tokens, "finish": a.finish}
    return {"logprob": a.logprob, "is_greedy": a.is_greedy, "n_tokens": a.n_tokens}


def child(src: Path, dst: Path) -> None:
    """The child's work (see the module docstring)."""
    from rich.console import Console

    from repaudit.backends.model_source import resolve_for
    from repaudit.run.config import RunConfig, default_cache_dir
    from repaudit.run.docs import load_docs
    from repaudit.run.pool import load
    from repaudit.run.runner import check_config, generation_settings, render_requests, seed_everything

    spec = json.loads(src.read_text())
    cfg = RunConfig.model_validate(spec["config"])
    quiet = Console(stderr=True, quiet=True)
    task = check_config(cfg)
    resolved = resolve_for(cfg.serving.backend, cfg.model, cfg.revision, cfg.cache_dir or default_cache_dir())
    seed_everything(cfg)
    docset = load_docs(task, cfg, quiet)
    backend = load(resolved, cfg)
    rendered = render_requests(task, cfg, docset, backend, generation_settings(task, cfg, backend.info.eos_token))
    wanted = set(spec["doc_ids"])
    rendered = [rd for rd in rendered if rd.doc.doc_id in wanted]
    flat = [r for rd in rendered for r in rd.all_requests]
    answers = (backend.generate_until(flat, None, None) if isinstance(flat[0], GenerateRequest)
               else backend.loglikelihood(flat, None, None))
    out, pos = [], 0
    for rd in rendered:
        out.append([_dump(a) for a in answers[pos:pos + len(rd.all_requests)]])
        pos += len(rd.all_requests)
    dst.write_text(json.dumps({"doc_ids": [rd.doc.doc_id for rd in rendered], "answers": out,
                               "environment": numerics_environment()}))


if __name__ == "__main__":  # pragma: no cover - run as a child process by run_in_process
    child(Path(sys.argv[1]), Path(sys.argv[2]))
