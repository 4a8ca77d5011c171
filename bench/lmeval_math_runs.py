"""A real lm-eval 0.4.13 run of a generative task scored by lm-eval's ``process_results`` (MATH-500), replayed.

    make install install-lmeval
    .venv-lmeval/bin/python bench/lmeval_math_runs.py [--limit 48] [--out out/lmeval_math]

(``.venv-lmeval``'s Python: the replay needs the ``lmeval`` extra.)

1. lm-eval's own ``hendrycks_math500`` YAML (``Problem: …\\nAnswer:``, until ``Problem:``, greedy; its
   ``process_docs`` extracts the boxed answer and its ``process_results`` compares the ``$…$`` span of the
   generation with it by ``is_equiv``), included by a YAML written at run time that points ``dataset_path`` at
   ``../shared/data/math500/test.jsonl`` (the file the hub's ``HuggingFaceH4/MATH-500`` is).
2. lm-eval itself on the default model (float32, batch 8), the first ``--limit`` docs, with its default
   ``max_gen_toks`` (256) and with ``--gen_kwargs max_gen_toks=32`` (``--log_samples``).
3. ``repaudit attribute`` of the two runs: each rebuilt from the configuration its results file records (lm-eval's
   functions from the installed lm-eval), re-executed with the exact generation strategy, compared doc by doc.

Prints: docs, lm-eval exact_match of both runs, generations equal to lm-eval's, per-doc exact_match equal, the
Shapley value of max_gen_toks, the residual and the attribution's wall time.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmeval_bbh_runs import lmeval_run, lmeval_tasks_dir  # noqa: E402
from lmeval_config_runs import LMEVAL, ROOT, SHARED  # noqa: E402

TASK = "hendrycks_math500"
YAML = """# written by bench/lmeval_math_runs.py: lm-eval's own task, reading a local copy of its data
include: {include}
task: hendrycks_math500
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: math500/test.jsonl
"""


def prepare(out: Path) -> tuple[Path, Path]:
    data = out / "data"
    (data / "math500").mkdir(parents=True, exist_ok=True)
    shutil.copy(SHARED / "data" / "math500" / "test.jsonl", data / "math500" / "test.jsonl")
    tasks = out / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    (tasks / "hendrycks_math500_local.yaml").write_text(
        YAML.format(include=lmeval_tasks_dir() / "hendrycks_math" / "hendrycks_math500.yaml"))
    return data, tasks


def lmeval(name: str, extra: list[str], limit: int, data: Path, tasks: Path, model_dir: Path, out: Path) -> Path:
    return lmeval_run(TASK, out / name, extra, limit, data, tasks, model_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lmeval_math")
    ap.add_argument("--limit", type=int, default=48)
    args = ap.parse_args()
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source
    from repaudit.backends.model_source import default_cache_dir, resolve_default_model

    out = args.out.resolve()
    data, tasks = prepare(out)
    model_dir = resolve_default_model(default_cache_dir()).path
    long = lmeval("gen256", [], args.limit, data, tasks, model_dir, out)
    short = lmeval("gen32", ["--gen_kwargs", "max_gen_toks=32"], args.limit, data, tasks, model_dir, out)
    srcs = [load_replay_source(p, data, "default", out / "cache") for p in (long, short)]
    ex = LocalExecutor()
    att = run_attribution(srcs[0], srcs[1], ex, n_boot=2000)
    cells = []
    for src in srcs:
        rec = ex.map([src.config])[0]
        docs = [d for d in rec.docs if d.doc_id in src.docs]
        text = sum(d.generation == src.docs[d.doc_id].generation for d in docs)
        em = sum(d.metrics[att.metric] == src.docs[d.doc_id].metrics[att.metric] for d in docs)
        cells.append(f"{text}/{len(docs)} · {em}/{len(docs)}")
    phi = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                    for f, v, c in zip(att.factors, att.phi, att.phi_ci))
    print(f"| task | docs | lm-eval {att.metric} 256 / 32 tokens | generations · per-doc {att.metric} equal to "
          "lm-eval's (256 / 32) | Shapley (pts) | residual (pts) | attribution wall |")
    print("|---|---:|---|---|---|---:|---:|")
    print(f"| {TASK} | {att.n_docs} | {100 * att.recorded_a:.2f} / {100 * att.recorded_b:.2f} | {cells[0]} / "
          f"{cells[1]} | {phi} | {100 * att.residual:+.2f} | {att.wall_s:.0f} s |")
    print(f"\nresults: {long}, {short}")


if __name__ == "__main__":
    main()
