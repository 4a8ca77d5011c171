"""A real lm-eval 0.4.13 run of an Open LLM Leaderboard v2 task (BBH), replayed by repaudit from its own file.

    make install install-lmeval
    .venv/bin/python bench/lmeval_bbh_runs.py [--subtask navigate] [--limit 48] [--out out/lmeval_bbh]

1. A data root with the BBH subtask's 250 examples as JSON lines (``../shared/data/bbh/bbh/<subtask>.json``,
   suzgunmirac/BIG-Bench-Hard, the rows the leaderboard's ``SaylorTwift/bbh`` copy holds).
2. A task YAML written at run time that includes the installed lm-eval's own
   ``lm_eval/tasks/leaderboard/bbh_mc/<subtask>.yaml`` (nothing of it is copied here) and only points
   ``dataset_path`` at the local file: ``leaderboard_bbh_<subtask>`` as the leaderboard runs it (3 fixed
   few-shot examples, ``Q: …\\nA:``, multiple choice, acc_norm).
3. lm-eval itself (``.venv-lmeval``) on the default model (float32, batch 8), the first ``--limit`` docs, at its
   3 shots and at 0 shots (``--log_samples``).
4. ``repaudit attribute`` of the two runs (``--data-dir`` the data root, ``--model default``): both rebuilt from
   the configuration their results file records, re-executed, compared doc by doc with lm-eval's samples.

Prints the row of ``bench/lmeval_config_runs.py``: docs, lm-eval acc_norm at 3 and 0 shots, replay agreement,
doc_hash / prompt_hash equality, max |Δ log-likelihood|, the Shapley value of n-shot, the residual, the
float32 noise and the attribution's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmeval_config_runs import LMEVAL, ROOT, SHARED, replay_row  # noqa: E402

YAML = """# written by bench/lmeval_bbh_runs.py: lm-eval's own leaderboard task, reading a local copy of its data
include: {include}
task: leaderboard_bbh_{subtask}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: bbh/{subtask}.jsonl
"""


def lmeval_tasks_dir() -> Path:
    out = subprocess.run([str(LMEVAL.parent / "python"), "-c", "import lm_eval, os; print(os.path.dirname("
                          "lm_eval.__file__))"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip()) / "tasks"


def prepare(out: Path, subtask: str) -> tuple[Path, Path]:
    """The data root (``out/data/bbh/<subtask>.jsonl``) and the include folder with the task YAML."""
    data = out / "data"
    (data / "bbh").mkdir(parents=True, exist_ok=True)
    rows = json.loads((SHARED / "data" / "bbh" / "bbh" / f"{subtask}.json").read_text())["examples"]
    with open(data / "bbh" / f"{subtask}.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"input": r["input"], "target": r["target"]}, ensure_ascii=False) + "\n")
    tasks = out / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    include = lmeval_tasks_dir() / "leaderboard" / "bbh_mc" / f"{subtask}.yaml"
    (tasks / f"leaderboard_bbh_{subtask}_local.yaml").write_text(YAML.format(include=include, subtask=subtask))
    return data, tasks


def lmeval_run(task: str, dest: Path, extra: list[str], limit: int, data: Path, tasks: Path, model_dir: Path) -> Path:
    """One lm-eval run of ``task`` (the YAMLs under ``tasks``) from ``data``, into ``dest`` unless a results file is
    already there; the default model folder, float32, batch 8, the first ``limit`` docs, offline."""
    if not list(dest.rglob("results_*.json")):
        cmd = [str(LMEVAL), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32", "--tasks", task,
               "--include_path", str(tasks), "--device", "cpu", "--batch_size", "8", "--limit", str(limit),
               "--log_samples", "--output_path", str(dest), *extra]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        proc = subprocess.run(cmd, cwd=data, env=env, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"lm-eval failed:\n{proc.stderr[-3000:]}")
    return next(dest.rglob("results_*.json"))


def lmeval(task: str, shots: int, limit: int, data: Path, tasks: Path, model_dir: Path, out: Path) -> Path:
    return lmeval_run(task, out / f"{task}_{shots}shot", ["--num_fewshot", str(shots)], limit, data, tasks, model_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lmeval_bbh")
    ap.add_argument("--subtask", default="navigate")
    ap.add_argument("--limit", type=int, default=48)
    args = ap.parse_args()
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from repaudit.backends.model_source import default_cache_dir, resolve_default_model

    out = args.out.resolve()
    data, tasks = prepare(out, args.subtask)
    model_dir = resolve_default_model(default_cache_dir()).path
    task = f"leaderboard_bbh_{args.subtask}"
    three = lmeval(task, 3, args.limit, data, tasks, model_dir, out)
    zero = lmeval(task, 0, args.limit, data, tasks, model_dir, out)
    r = replay_row(task, three, zero, data, out)
    ra, rb = r["rows"]["A"], r["rows"]["B"]
    phi = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                    for f, v, c in zip(r["factors"], r["phi"], r["phi_ci"]))
    print("| task | docs | lm-eval acc 3-shot (A) | 0-shot (B) | replay agreement (A / B) | doc_hash equal | "
          "prompt_hash equal | max \\|Δll\\| vs lm-eval | n-shot Shapley (pts) | residual (pts) | float32 noise "
          "(max \\|Δll\\|) | attribution wall |")
    print("|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|")
    print(f"| {task} | {r['n']} | {100 * r['acc_a']:.2f} | {100 * r['acc_b']:.2f} | "
          f"{100 * ra['agree']:.1f} % / {100 * rb['agree']:.1f} % | {ra['doc_hash'] + rb['doc_hash']}/{2 * r['n']} | "
          f"{ra['prompt_hash'] + rb['prompt_hash']}/{2 * r['n']} | {max(ra['max_dll'], rb['max_dll']):.1e} | {phi} | "
          f"{100 * r['residual']:+.2f} | {r['noise']:.1e} | {r['wall']:.0f} s |")
    print(f"\nresults: {three}, {zero}")


if __name__ == "__main__":
    main()
