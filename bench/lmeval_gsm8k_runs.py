"""Real lm-eval 0.4.13 GSM8K runs of the default model at two token budgets, and what repaudit's
diagnostics read from their samples.

    make install install-lmeval
    .venv/bin/python bench/lmeval_gsm8k_runs.py [--limit 24] [--out out/lmeval_gsm8k] [--fixtures DIR]

lm-eval itself (``.venv-lmeval``), run in ``../shared/data`` on the default model (the converted
SmolLM2-135M-Instruct folder repaudit caches), float32, batch 8, 5-shot, with the task YAML
``bench/lmeval_configs/gsm8k_local.yaml`` (lm-eval's ``gsm8k.yaml`` on the local test split)::

    cd ../shared/data && lm_eval --model hf --model_args pretrained=<model dir>,dtype=float32 \\
      --tasks gsm8k_local --include_path bench/lmeval_configs --device cpu --batch_size 8 \\
      --gen_kwargs max_gen_toks={32,256} --limit 24 --log_samples --output_path <out>/gsm8k_{32,256}

Then ``repaudit compare`` of the two runs with ``--tokenizer default``: per run, generations at the
budget (re-tokenised), answers each filter could not extract, and the mechanisms compare names.

``--fixtures DIR`` also writes the runs without the dataset text (``doc`` and ``arguments`` dropped
from the samples; generations, filtered answers, targets and metrics kept): the fixtures of
``tests/test_diagnostics.py``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lmeval_config_runs import trimmed_copy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LMEVAL = ROOT / ".venv-lmeval" / "bin" / "lm_eval"


def lmeval(budget: int, limit: int, model_dir: Path, out: Path) -> tuple[Path, float]:
    dest = out / f"gsm8k_{budget}"
    wall = 0.0
    if not list(dest.rglob("results_*.json")):
        cmd = [str(LMEVAL), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32", "--tasks",
               "gsm8k_local", "--include_path", str(ROOT / "bench" / "lmeval_configs"), "--device", "cpu",
               "--batch_size", "8", "--gen_kwargs", f"max_gen_toks={budget}", "--limit", str(limit),
               "--log_samples", "--output_path", str(dest)]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=DATA, env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
                       check=True, capture_output=True)
        wall = time.perf_counter() - t0
    return next(dest.rglob("results_*.json")), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "lmeval_gsm8k")
    ap.add_argument("--limit", type=int, default=24)
    ap.add_argument("--fixtures", type=Path)
    args = ap.parse_args()
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from transformers import AutoTokenizer

    from repaudit.audit.compare import compare
    from repaudit.backends.model_source import resolve_default_model
    from repaudit.importers.detect import load_run
    from repaudit.report.diagnostics import diagnostic_cells, mechanism_line
    from repaudit.run.config import default_cache_dir

    model_dir = resolve_default_model(default_cache_dir()).path
    out = args.out.resolve()
    runs = {b: lmeval(b, args.limit, model_dir, out) for b in (32, 256)}
    if args.fixtures:
        for b, (res, _) in runs.items():
            trimmed_copy(res, args.fixtures / f"gsm8k_{b}", drop=("doc", "arguments"))
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    a, b = (load_run(runs[k][0], tokenizer=tok) for k in (32, 256))
    c = compare(a, b, n_boot=10_000)
    print("| diagnostic | max_gen_toks 32 | max_gen_toks 256 |\n|---|---|---|")
    for r in c.diagnostics:
        cells = diagnostic_cells(r)
        print(f"| {cells[1]} | {cells[2]} | {cells[3]} |")
    print()
    for s in c.scores:
        print(f"{s.metric}: {100 * s.a:.2f} → {100 * s.b:.2f} (Δ {100 * s.delta:+.2f}, {s.verdict})")
    for m in c.mechanisms:
        print("- " + mechanism_line(m))
    print(f"\nlm-eval wall: {', '.join(f'{k}: {w:.0f} s' for k, (_, w) in runs.items())}")


if __name__ == "__main__":
    main()
