"""Scoring speed: lm-evaluation-harness 0.4.13 vs repaudit's two scoring strategies, side by side.

For each case (task, n-shot, limit, dtype) it runs, one after the other in one invocation,
lm-eval, ``repaudit run --scoring-strategy full_sequence`` and ``repaudit run --scoring-strategy
shared_prefix`` on the same converted model and the same docs, and prints one table row per tool:

- docs/s and wall time: whole process (imports, model load, scoring, writing), as a user waits;
- tokens computed: positions run through the decoder for loglikelihood requests (lm-eval's equals
  repaudit full_sequence's: the same grouping and truncation, checked by the parity bench);
- peak RSS of the process tree (``ru_maxrss`` of a fresh launcher's children);
- per-doc agreement of predictions with lm-eval, max |Δ loglikelihood| against lm-eval, and for
  shared_prefix also against repaudit's full_sequence path, with the top-2 margins of disagreements;
- overhead ratio: repaudit's scoring wall time over the time spent inside the forward passes of
  the tokens it computed (timed forward calls: decoder, output layer, log-softmax), and the same
  for the whole process.

    make install-lmeval
    .venv/bin/python bench/scoring_speed.py --data-dir ../shared/data --lmeval .venv-lmeval/bin/lm_eval \\
        --case arc_easy:0:0:float32 --case arc_challenge:25:100:float32 \\
        --case hellaswag:10:300:float32 --case mmlu:5:300:float32

``TASK:SHOTS:LIMIT:DTYPE`` (LIMIT 0 = all docs; for MMLU ``N/subject`` = the first N docs of each of
the 57 subjects, lm-eval's ``--limit N`` per subject task). ``--skip-lmeval`` compares the two
strategies only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from lmeval_tasks import mmlu_per_subject, write_tasks
from measure import measured


def _lmeval(lm_eval: str, model_dir: Path, task: str, nshot: int, limit: int, dtype: str, bs: int,
            data_dir: Path, work: Path, per_subject: int | None) -> tuple[float, float, list[list[float]]]:
    names, lm_limit = write_tasks(task, data_dir, work / "tasks", limit, per_subject)
    out = work / "lmeval"
    cmd = [lm_eval, "--model", "hf", "--model_args", f"pretrained={model_dir},dtype={dtype}",
           "--tasks", ",".join(names), "--include_path", str(work / "tasks"), "--device", "cpu",
           "--batch_size", str(bs), "--num_fewshot", str(nshot), "--log_samples", "--output_path", str(out)]
    if lm_limit:
        cmd += ["--limit", str(lm_limit)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(work / "tasks")}
    wall, rss = measured(cmd, work, env)
    lls = []
    for name in names:  # MMLU subjects in repaudit's doc order; doc ids restart per subject
        path = next(out.rglob(f"samples_{name}_*.jsonl"))
        samples = sorted((json.loads(line) for line in path.open()), key=lambda s: s["doc_id"])
        lls += [[float(r[0][0]) for r in s["resps"]] for s in samples]
    return wall, rss, lls


def _repaudit(strategy: str, task: str, nshot: int, limit: int, dtype: str, bs: int, data_dir: Path,
              work: Path, per_subject: int | None) -> tuple[float, float, dict]:
    out = work / f"repaudit-{strategy}.json"
    cmd = [sys.executable, "-m", "repaudit", "run", "--task", task, "--data-dir", str(data_dir), "--dtype", dtype,
           "--batch-size", str(bs), "--num-fewshot", str(nshot), "--scoring-strategy", strategy, "-o", str(out),
           "--no-cache"]
    if per_subject:
        cmd += ["--doc-ids", ",".join(map(str, mmlu_per_subject(data_dir, per_subject)[1]))]
    elif limit:
        cmd += ["--limit", str(limit)]
    wall, rss = measured(cmd, work)
    return wall, rss, json.loads(out.read_text())


def _agreement(ref: list[list[float]], lls: list[list[float]]) -> tuple[float, float, list[float]]:
    """(share of docs with the same argmax, max |Δll|, top-2 margins of ref at disagreeing docs)."""
    same, max_d, margins = 0, 0.0, []
    for a, b in zip(ref, lls, strict=True):
        if int(np.argmax(a)) == int(np.argmax(b)):
            same += 1
        else:
            s = sorted(a, reverse=True)
            margins.append(s[0] - s[1])
        max_d = max(max_d, max(abs(x - y) for x, y in zip(a, b)))
    return same / len(ref), max_d, margins


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--lmeval", help="path of the lm_eval executable (its own venv)")
    ap.add_argument("--skip-lmeval", action="store_true")
    ap.add_argument("--case", action="append", default=[], help="TASK:SHOTS:LIMIT:DTYPE")
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    if not args.skip_lmeval and not args.lmeval:
        ap.error("--lmeval is required unless --skip-lmeval")
    if args.lmeval:  # lm-eval runs in a temporary directory: a relative path would not resolve there
        args.lmeval = str(Path(args.lmeval).absolute())

    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.runner import default_cache_dir

    model_dir = resolve_default_model(default_cache_dir()).path  # converted once; every tool reads this folder
    data_dir = args.data_dir.resolve()
    head = ("case", "tool", "docs", "wall s", "docs/s", "× lm-eval", "tokens computed", "peak RSS MiB",
            "agree lm-eval", "max|Δll| lm-eval", "agree full_seq", "max|Δll| full_seq", "margins of disagreements",
            "overhead (scoring)", "overhead (process)", "acc")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    for case in args.case or ["arc_easy:0:0:float32"]:
        task, nshot, limit, dtype = case.split(":")
        per_subject = int(limit.removesuffix("/subject")) if limit.endswith("/subject") else None
        nshot, limit = int(nshot), 0 if per_subject else int(limit)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            lm = None
            if not args.skip_lmeval:
                lm = _lmeval(args.lmeval, model_dir, task, nshot, limit, dtype, args.batch_size, data_dir, work,
                             per_subject)
            runs = {s: _repaudit(s, task, nshot, limit, dtype, args.batch_size, data_dir, work, per_subject)
                    for s in ("full_sequence", "shared_prefix")}
        full_lls = [d["loglikelihoods"] for d in runs["full_sequence"][2]["docs"]]
        n = len(full_lls)
        label = f"{task} {nshot}-shot {dtype}"
        rows = []
        if lm is not None:
            agree, dmax, _ = _agreement(lm[2], full_lls) if len(lm[2]) == n else (float("nan"),) * 2 + ([],)
            tokens = runs["full_sequence"][2]["timings"].get("tokens_computed", 0)
            rows.append((label, "lm-eval", n, lm[0], n / lm[0], 1.0, tokens, lm[1], 1.0, 0.0, agree, dmax, "",
                         "", "", ""))
        for s, (wall, rss, rec) in runs.items():
            lls = [d["loglikelihoods"] for d in rec["docs"]]
            t = rec["timings"]
            acc = next(m["value"] for m in rec["metrics"] if m["name"] == "acc")
            a_lm, d_lm, m_lm = _agreement(lm[2], lls) if lm is not None and len(lm[2]) == n else (None, None, [])
            a_fs, d_fs, m_fs = _agreement(full_lls, lls)
            margins = m_fs if s == "shared_prefix" else m_lm
            rows.append((label, f"repaudit {s}", n, wall, n / wall, lm[0] / wall if lm else None,
                         t["tokens_computed"], rss, a_lm, d_lm, a_fs, d_fs,
                         ", ".join(f"{x:.3f}" for x in sorted(margins)) or "–",
                         t["eval_s"] / t["forward_s"] if t.get("forward_s") else None,
                         t["total_s"] / t["forward_s"] if t.get("forward_s") else None, acc))
        for r in rows:
            cells = [r[0], r[1], str(r[2]), f"{r[3]:.1f}", f"{r[4]:.2f}", _f(r[5], "{:.2f}×"), str(r[6]),
                     f"{r[7]:.0f}", _f(r[8], "{:.2%}"), _f(r[9], "{:.2e}"), _f(r[10], "{:.2%}"),
                     _f(r[11], "{:.2e}"), r[12], _f(r[13], "{:.3f}"), _f(r[14], "{:.3f}"), _f(r[15], "{:.4f}")]
            print("| " + " | ".join(cells) + " |", flush=True)


def _f(x, fmt: str) -> str:
    return "–" if x is None or x == "" else fmt.format(x)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"bench wall {time.perf_counter() - t0:.0f} s")
