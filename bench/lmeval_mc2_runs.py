"""A real lm-eval 0.4.13 run of a task whose metric is lm-eval's ``process_results`` (TruthfulQA MC2), replayed.

    make install install-lmeval
    .venv-lmeval/bin/python bench/lmeval_mc2_runs.py [--limit 48] [--out out/lmeval_mc2]

(``.venv-lmeval``'s Python: the replay needs the ``lmeval`` extra.)

``truthfulqa_mc2``'s ``acc`` is not an accuracy: lm-eval's ``process_results_mc2`` gives each doc the probability
mass its choices put on the true answers (log-likelihoods → probabilities normalised over the choices → the sum
over the true ones), a number in [0, 1]. A replay that scored it as multiple-choice ``acc`` would be silently
wrong; repaudit resolves the recorded function to the installed lm-eval's own (the ``lmeval`` extra) and calls it.

1. A data root with TruthfulQA v1 (``../shared/data/truthfulqa/v1/mc_task.json``, the file the hub's
   ``truthful_qa`` builds from) as JSON lines in the hub's ``multiple_choice`` form (``question``,
   ``mc1_targets``/``mc2_targets`` as ``{choices, labels}`` in the file's order).
2. A task YAML written at run time that includes the installed lm-eval's own
   ``lm_eval/tasks/truthfulqa/truthfulqa_mc2.yaml`` (nothing of it is copied here) and only points
   ``dataset_path`` at the local file.
3. lm-eval itself (``.venv-lmeval``) on the default model (float32, batch 8), the first ``--limit`` docs, without
   and with ``--system_instruction`` (``--log_samples``).
4. ``repaudit attribute`` of the two runs (``--data-dir`` the data root, ``--model default``), then each doc's
   replayed ``acc`` against the value lm-eval's samples file records.

Prints: docs, lm-eval mean acc (MC2) of both runs, replay agreement (argmax prediction), doc_hash / prompt_hash
equality, max |Δ log-likelihood|, max |Δ per-doc acc| against lm-eval's samples, the Shapley value of the system
instruction, the residual and the attribution's wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmeval_bbh_runs import lmeval_run, lmeval_tasks_dir  # noqa: E402
from lmeval_config_runs import LMEVAL, ROOT, SHARED, replay_row  # noqa: E402

TASK = "truthfulqa_mc2"
SYSTEM = "Answer the question truthfully."
YAML = """# written by bench/lmeval_mc2_runs.py: lm-eval's own task, reading a local copy of its data
include: {include}
task: truthfulqa_mc2
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    validation: truthfulqa/mc.jsonl
"""


def prepare(out: Path) -> tuple[Path, Path]:
    """The data root (``out/data/truthfulqa/mc.jsonl``) and the include folder with the task YAML."""
    data = out / "data"
    (data / "truthfulqa").mkdir(parents=True, exist_ok=True)
    rows = json.loads((SHARED / "data" / "truthfulqa" / "v1" / "mc_task.json").read_text())
    with open(data / "truthfulqa" / "mc.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            hub = {"question": r["question"]}
            for key in ("mc1_targets", "mc2_targets"):
                hub[key] = {"choices": list(r[key]), "labels": list(r[key].values())}
            f.write(json.dumps(hub, ensure_ascii=False) + "\n")
    tasks = out / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    include = lmeval_tasks_dir() / "truthfulqa" / "truthfulqa_mc2.yaml"
    (tasks / "truthfulqa_mc2_local.yaml").write_text(YAML.format(include=include))
    return data, tasks


def lmeval(name: str, extra: list[str], limit: int, data: Path, tasks: Path, model_dir: Path, out: Path) -> Path:
    return lmeval_run(TASK, out / name, extra, limit, data, tasks, model_dir)


def metric_gap(results: Path, data: Path, out: Path) -> tuple[int, float]:
    """Docs and max |replayed acc − lm-eval's recorded acc| over them."""
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source

    src = load_replay_source(results, data, "default", out / "cache")
    rec = LocalExecutor().map([src.config])[0]
    docs = [d for d in rec.docs if d.doc_id in src.docs]
    return len(docs), max(abs(d.metrics["acc"] - src.docs[d.doc_id].metrics["acc"]) for d in docs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lmeval_mc2")
    ap.add_argument("--limit", type=int, default=48)
    args = ap.parse_args()
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from repaudit.backends.model_source import default_cache_dir, resolve_default_model

    out = args.out.resolve()
    data, tasks = prepare(out)
    model_dir = resolve_default_model(default_cache_dir()).path
    plain = lmeval("plain", [], args.limit, data, tasks, model_dir, out)
    system = lmeval("system", ["--system_instruction", SYSTEM], args.limit, data, tasks, model_dir, out)
    r = replay_row(TASK, plain, system, data, out)
    gaps = [metric_gap(p, data, out) for p in (plain, system)]
    ra, rb = r["rows"]["A"], r["rows"]["B"]
    phi = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                    for f, v, c in zip(r["factors"], r["phi"], r["phi_ci"]))
    print("| task | docs | lm-eval acc (MC2) plain (A) | system instruction (B) | replay agreement (A / B) | "
          "doc_hash equal | prompt_hash equal | max \\|Δll\\| vs lm-eval | max \\|Δ per-doc acc\\| vs lm-eval | "
          "system-instruction Shapley (pts) | residual (pts) | attribution wall |")
    print("|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
    print(f"| {TASK} | {r['n']} | {100 * r['acc_a']:.2f} | {100 * r['acc_b']:.2f} | "
          f"{100 * ra['agree']:.1f} % / {100 * rb['agree']:.1f} % | {ra['doc_hash'] + rb['doc_hash']}/{2 * r['n']} | "
          f"{ra['prompt_hash'] + rb['prompt_hash']}/{2 * r['n']} | {max(ra['max_dll'], rb['max_dll']):.1e} | "
          f"{max(g[1] for g in gaps):.1e} | {phi} | {100 * r['residual']:+.2f} | {r['wall']:.0f} s |")
    print(f"\nresults: {plain}, {system}")


if __name__ == "__main__":
    main()
