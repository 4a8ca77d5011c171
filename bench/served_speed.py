"""Speed and agreement through a served model: repaudit's ``openai`` backend vs lm-evaluation-harness 0.4.13's
``local-completions``, against the same vLLM OpenAI server, with the same number of requests in flight.

Starts vLLM's server from ``.venv-vllm`` on the default model (or uses ``--base-url``), then per case runs lm-eval
(``--model local-completions``, ``num_concurrent`` = ``--concurrency``, its own tokenizer on the same converted
folder, ``tokenized_requests=True``) and ``repaudit run --backend openai --max-concurrency`` (``--no-cache``) one
after the other, and prints a table: wall seconds of each whole process, their ratio, per-doc agreement of
predictions, max |Δ log-likelihood|, and acc of each.

    make install-vllm install-lmeval
    .venv/bin/python bench/served_speed.py --data-dir ../shared/data --case arc_easy:0 --case hellaswag:500

Levers repaudit uses and lm-eval's API model does not: ``--batch-size`` rows per request (lm-eval's API default is
1), identical rows sent once, and requests ordered longest first so that the server's batches stay full.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from lmeval_tasks import write_tasks

ROOT = Path(__file__).resolve().parents[1]
MODEL = "smollm2"


def _start_server(model_dir: Path, log: Path, threads: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2", "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.Popen([str(ROOT / ".venv-vllm/bin/python"), "-m", "vllm.entrypoints.openai.api_server",
                             "--model", str(model_dir), "--served-model-name", MODEL, "--dtype", "float32",
                             "--max-model-len", "2048", "--port", str(port), "--host", "127.0.0.1"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(900):
        if proc.poll() is not None:
            raise SystemExit("vLLM's server exited: " + log.read_text()[-2000:])
        try:
            if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(2)
    raise SystemExit("vLLM's server did not start")


def _lmeval(lm_eval: str, url: str, model_dir: Path, task: str, limit: int, conc: int, data_dir: Path,
            work: Path) -> tuple[float, list[dict], dict]:
    tasks_dir = work / "tasks"
    write_tasks(task, data_dir, tasks_dir, limit)
    out = work / f"lmeval-{task}"
    margs = (f"model={MODEL},base_url={url}/completions,num_concurrent={conc},tokenized_requests=True,"
             f"tokenizer={model_dir},max_retries=3")
    cmd = [lm_eval, "--model", "local-completions", "--model_args", margs, "--tasks", task, "--include_path",
           str(tasks_dir), "--log_samples", "--output_path", str(out)]
    if limit:
        cmd += ["--limit", str(limit)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(tasks_dir)}
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    samples = [json.loads(line) for line in next(out.rglob("samples_*.jsonl")).open()]
    return wall, samples, json.loads(next(out.rglob("results_*.json")).read_text())["results"][task]


def _repaudit(url: str, task: str, limit: int, conc: int, bs: int, data_dir: Path, work: Path
              ) -> tuple[float, dict]:
    out = work / f"repaudit-{task}.json"
    cmd = [sys.executable, "-m", "repaudit", "run", "--backend", "openai", "--base-url", url, "--model", MODEL,
           "--task", task, "--data-dir", str(data_dir), "--max-concurrency", str(conc), "--batch-size", str(bs),
           "-o", str(out), "--no-cache"]
    if limit:
        cmd += ["--limit", str(limit)]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--lmeval", default=str(ROOT / ".venv-lmeval/bin/lm_eval"),
                    help="path of the lm_eval executable (its own venv, with the api extra)")
    ap.add_argument("--case", action="append", default=[], help="TASK:LIMIT (0 = all docs)")
    ap.add_argument("--concurrency", type=int, default=8, help="requests in flight, both tools")
    ap.add_argument("--batch-size", type=int, default=8, help="repaudit's rows per request")
    ap.add_argument("--base-url", help="a running server serving the default model as 'smollm2' (default: start "
                                       "one from .venv-vllm)")
    ap.add_argument("--server-threads", type=int, default=2)
    args = ap.parse_args()

    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.runner import default_cache_dir

    model_dir = resolve_default_model(default_cache_dir()).path
    proc = None
    with tempfile.TemporaryDirectory() as tmp:
        url = args.base_url
        if url is None:
            proc, url = _start_server(model_dir, Path(tmp) / "server.log", args.server_threads)
        rows = []
        try:
            for case in args.case or ["arc_easy:0"]:
                task, limit = case.split(":")
                work = Path(tmp) / task
                work.mkdir()
                lm_wall, samples, lm_res = _lmeval(args.lmeval, url, model_dir, task, int(limit), args.concurrency,
                                                   args.data_dir.resolve(), work)
                ra_wall, rec = _repaudit(url, task, int(limit), args.concurrency, args.batch_size,
                                         args.data_dir.resolve(), work)
                rows.append(_row(task, samples, lm_res, lm_wall, rec, ra_wall, args))
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()
    head = ("task", "docs", "requests", "in flight", "rows/request", "lm-eval s", "repaudit s", "speed-up",
            "agreement", "max|Δll|", "lm-eval acc", "repaudit acc")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("Seconds are whole-process wall times of each tool (imports, tokenising, requests, writing); speed-up = "
          "lm-eval s / repaudit s; agreement: docs with the same argmax prediction; Δll in nats.")


def _row(task, samples, lm_res, lm_wall, rec, ra_wall, args) -> tuple[str, ...]:
    by_id = {d["doc_id"]: d for d in rec["docs"]}
    agree, max_d, n_req = 0, 0.0, 0
    for s in samples:
        lm_ll = [float(r[0][0]) for r in s["resps"]]
        n_req += len(lm_ll)
        mine = by_id[s["doc_id"]]
        agree += int(np.argmax(lm_ll)) == mine["prediction"]
        max_d = max(max_d, max(abs(a - b) for a, b in zip(lm_ll, mine["loglikelihoods"])))
    n = len(samples)
    acc = {m["name"]: m["value"] for m in rec["metrics"]}
    return (task, str(n), str(n_req), str(args.concurrency), f"lm-eval 1, repaudit {args.batch_size}",
            f"{lm_wall:.1f}", f"{ra_wall:.1f}", f"{lm_wall / ra_wall:.2f}", f"{100 * agree / n:.2f}%",
            f"{max_d:.2e}", f"{lm_res['acc,none']:.4f}", f"{acc['acc']:.4f}")


if __name__ == "__main__":
    main()
