"""Every Eval Ever's own lm-eval converter on the real lm-eval runs, and repaudit's compare of what it wrote.

EEE (``every-eval-ever`` 0.3.0) needs Python >= 3.12 and ~60 packages, so it lives in a side virtual environment
(not a repaudit dependency; PyPI reachable)::

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/eee-venv
    /tmp/eee-venv/bin/pip install every_eval_ever-0.3.0-py3-none-any.whl     # or: pip install every-eval-ever==0.3.0
    .venv/bin/python bench/eee_convert.py --eee /tmp/eee-venv/bin/every_eval_ever [--out out/eee]
        [--fixture tests/fixtures/eee/lmeval_s1_s3.tar.xz]

1. ``every_eval_ever convert lm_eval --log_path ../shared/lmeval_runs/sN --output_dir OUT/sN/data
   --include_samples --evaluator_relationship third_party --source_organization_name repaudit-bench`` for s1
   (ARC-Easy validation, 570 docs, 0-shot, float32, batch 8) and s3 (the same in bfloat16): one aggregate record
   and one sidecar (570 docs × 2 metrics = 1,140 rows) each, in EEE's layout ``data/<task>/<dev>/<model>/``.
2. ``repaudit compare`` of the two conversions and of the two lm-eval runs themselves: the flips (acc and
   acc_norm, right → wrong / wrong → right) must be the same docs; what EEE does not carry (log-likelihoods,
   so near-tie flips; batch size, seeds, …) is counted.
3. How often EEE's converter shows acc's answer on acc_norm rows where acc_norm's own argmax (log-likelihood /
   choice length in characters, lm-eval's rule, from the lm-eval samples) is another choice.
4. ``repaudit export`` of s1 and s3 (``OUT/repaudit``), checked by EEE's own validator (``every_eval_ever validate``)
   and read back: compare of the exports finds the flips compare of the lm-eval runs finds, near ties included.

``--fixture PATH`` packs the two conversions, unmodified, into a ``.tar.xz`` (``tests/fixtures/eee/``: the
test of EEE-converted records reads it). Each conversion has a random uuid and the conversion time in it, so a
new run of this script writes other bytes (EEE's converter is not repeatable; repaudit's export is).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "lmeval_runs"
sys.path.insert(0, str(ROOT))


def convert(eee: Path, run: str, out: Path) -> float:
    """EEE's lm-eval converter on ``../shared/lmeval_runs/<run>`` into ``out/<run>/data``; wall seconds."""
    t0 = time.perf_counter()
    subprocess.run([str(eee), "convert", "lm_eval", "--log_path", str(SHARED / run), "--output_dir",
                    str(out / run / "data"), "--include_samples", "--evaluator_relationship", "third_party",
                    "--source_organization_name", "repaudit-bench"], check=True, capture_output=True)
    return time.perf_counter() - t0


def flips(a: Path, b: Path) -> tuple[Counter, set, int]:
    """(metric, direction) counts, the flipped (metric, doc) pairs, and near-tie flips of ``compare a b``."""
    from repaudit import api

    c = api.compare(a, b, n_boot=1000)
    fl = c.flips
    return (Counter((f.metric, f.direction) for f in fl), {(f.metric, f.doc_id) for f in fl},
            sum(f.near_tie for f in fl))


def acc_norm_answers(run: str) -> tuple[int, int, int]:
    """Of one conversion's acc_norm rows: (those whose shown answer is not acc_norm's own argmax, those whose shown
    answer contradicts the row's own score — right answer scored 0 or wrong answer scored 1 —, all of them);
    acc_norm's argmax computed from the lm-eval samples (log-likelihood / choice length in characters)."""
    samples = next((SHARED / run).glob("*/samples_*.jsonl"))
    own, gold = {}, {}
    for line in samples.read_text().splitlines():
        s = json.loads(line)
        lls = [float(r[0][0]) for r in s["resps"]]
        conts = [a["arg_1"] for a in s["arguments"].values()]
        norm = [ll / len(c.removeprefix(" ")) for ll, c in zip(lls, conts)]
        own[str(s["doc_id"])] = conts[max(range(len(norm)), key=lambda i: (norm[i], -i))].strip()
        gold[str(s["doc_id"])] = conts[int(s["target"])].strip()
    sidecar = next((OUT / run).rglob("*_samples.jsonl"))
    wrong = contradicts = total = 0
    for line in sidecar.read_text().splitlines():
        row = json.loads(line)
        if row["evaluation_result_id"] == "acc_norm":
            total += 1
            shown = row["answer_attribution"][0]["extracted_value"]
            wrong += shown != own[row["sample_id"]]
            contradicts += (shown == gold[row["sample_id"]]) != (row["evaluation"]["score"] == 1.0)
    return wrong, contradicts, total


def main() -> None:
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eee", type=Path, required=True, help="the every_eval_ever script of the side venv")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "eee")
    ap.add_argument("--fixture", type=Path, default=None, help="pack the two conversions into this .tar.xz")
    args = ap.parse_args()
    OUT = args.out
    if OUT.exists() and any(OUT.iterdir()):
        sys.exit(f"{OUT} is not empty: EEE's converter would add a second record beside the first")
    secs = {run: convert(args.eee, run, OUT) for run in ("s1", "s3")}
    direct, d_ids, d_near = flips(SHARED / "s1", SHARED / "s3")
    conv, c_ids, c_near = flips(OUT / "s1", OUT / "s3")
    print("| compare of | acc ↓ | acc ↑ | acc_norm ↓ | acc_norm ↑ | near-tie flips | same flipped docs |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, c, near in (("lm-eval s1 vs s3", direct, d_near), ("EEE conversions of s1 vs s3", conv, c_near)):
        print(f"| {name} | {c['acc', 'right_to_wrong']} | {c['acc', 'wrong_to_right']} | "
              f"{c['acc_norm', 'right_to_wrong']} | {c['acc_norm', 'wrong_to_right']} | {near} | "
              f"{'yes' if c_ids == d_ids else 'NO'} |")
    for run in ("s1", "s3"):
        wrong, contradicts, total = acc_norm_answers(run)
        print(f"{run}: converted in {secs[run]:.1f} s; of {total} acc_norm rows, {wrong} show another choice than "
              f"acc_norm's own argmax, {contradicts} an answer that contradicts the row's own score")
    from repaudit import api

    files = []
    (OUT / "repaudit").mkdir()
    for run in ("s1", "s3"):
        files += api.export([SHARED / run], OUT / "repaudit" / run, evaluator_relationship="third_party",
                            model_id="HuggingFaceTB/SmolLM2-135M-Instruct", organization="repaudit-bench")
    check = subprocess.run([str(args.eee), "validate", *map(str, files)], capture_output=True, text=True)
    summary = [line.strip("│ ") for line in check.stdout.splitlines() if "passed" in line and "failed" in line]
    print(f"repaudit export of s1 and s3: {len(files)} files; EEE's validator: {summary[0] if summary else '?'} "
          f"(exit {check.returncode})")
    exp, e_ids, e_near = flips(OUT / "repaudit" / "s1", OUT / "repaudit" / "s3")
    print(f"compare of the two exports: acc {exp['acc', 'right_to_wrong']}↓ {exp['acc', 'wrong_to_right']}↑, "
          f"acc_norm {exp['acc_norm', 'right_to_wrong']}↓ {exp['acc_norm', 'wrong_to_right']}↑, near ties {e_near}, "
          f"same flipped docs as lm-eval's: {'yes' if e_ids == d_ids else 'NO'}")
    if args.fixture is not None:
        args.fixture.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(args.fixture, "w:xz", preset=9) as tar:
            for run in ("s1", "s3"):
                tar.add(OUT / run, arcname=run)
        print(f"wrote {args.fixture} ({args.fixture.stat().st_size:,} bytes)")


OUT = Path()

if __name__ == "__main__":
    main()
