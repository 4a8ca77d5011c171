"""generate_until speed: lm-evaluation-harness 0.4.13 vs repaudit's two generation strategies, same docs.

    make install-lmeval
    .venv/bin/python bench/generation_speed.py [--limit 100] [--batch-size 8] [--out out/generation_speed]
        [--chat-template] [--resume]

One invocation, one process at a time (time it on an idle machine):

1. lm-eval itself on GSM8K 5-shot (``bench/lmeval_configs/gsm8k_local.yaml``: lm-eval's ``gsm8k.yaml`` on the
   local test split; few-shot examples drawn per doc, so prompts share little beyond ``Question:``), float32,
   ``--batch_size B``, the default SmolLM2-135M-Instruct (the converted folder repaudit caches);
2. repaudit replaying that run from its recorded configuration with ``--generation-strategy exact`` and with
   ``prefix_cache`` (same prompts, docs, stop sequences and budget);
3. the same three rows with lm-eval's ``first_n`` sampler (``gsm8k_local_first_n.yaml``: the same 5 examples
   for every doc, as in ``gsm8k-cot`` and MMLU): all but 5 prompts start with the same ~700 tokens.

Per row: docs/s and wall time of the whole process (imports, model load, generation, writing; a fresh
launcher measures peak RSS of the process tree), tokens prefilled (positions run before decoding, padding
included) and decoded (rows × decode steps), the share of docs whose generated text equals lm-eval's in the same
setting, and the share of those docs whose extracted answers (both of lm-eval's filters) are equal too.

``--chat-template``: lm-eval with ``--apply_chat_template`` (the model's chat template, the 5 examples and the
question in one user turn), replayed by repaudit from that run's recorded configuration.

Each finished row is kept in ``OUT/rows.json``; ``--resume`` measures only the rows not there yet (an interrupted
bench loses at most the row it was in).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measure import measured  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LMEVAL = ROOT / ".venv-lmeval" / "bin" / "lm_eval"
SETTINGS = {"per-doc random": "gsm8k_local", "first_n": "gsm8k_local_first_n"}


def child(results: Path, strategy: str, out: Path) -> None:
    """Replay the lm-eval run ``results`` with ``strategy`` and write the run file and the backend's generation
    token counts beside it."""
    from repaudit.audit.replay import load_replay_source
    from repaudit.run.records import write_record
    from repaudit.run.runner import BackendPool, run

    src = load_replay_source(results, DATA, "default")
    update = {"generation_strategy": strategy, "use_batch_cache": False}
    pool = BackendPool()
    rec = run(src.config.model_copy(update=update), backends=pool)
    write_record(rec, out)
    backend = next(iter(pool._loaded.values()))
    out.with_suffix(".tokens.json").write_text(json.dumps(dict(backend.gen_tokens)))


def _lmeval(task: str, limit: int, bs: int, model_dir: Path, out: Path, chat: bool) -> tuple[Path, float, float]:
    dest = out / f"lmeval-{task}"
    cmd = [str(LMEVAL), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32", "--tasks",
           task, "--include_path", str(ROOT / "bench" / "lmeval_configs"), "--device", "cpu",
           "--batch_size", str(bs), "--limit", str(limit), "--log_samples", "--output_path", str(dest)]
    cmd += ["--apply_chat_template"] if chat else []
    wall, rss = measured(cmd, DATA, {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    return next(dest.rglob("results_*.json")), wall, rss


def _lmeval_docs(results: Path) -> dict[int, tuple[str, dict[str, str]]]:
    """lm-eval's samples: doc_id → (generated text, {filter: extracted answer})."""
    docs: dict[int, tuple[str, dict[str, str]]] = {}
    for path in results.parent.glob("samples_*.jsonl"):
        for line in path.open():
            s = json.loads(line)
            text, ext = docs.get(s["doc_id"], (s["resps"][0][0], {}))
            ext[s["filter"]] = s["filtered_resps"][0]
            docs[s["doc_id"]] = (text, ext)
    return docs


def _repaudit_docs(path: Path) -> dict[int, tuple[str, dict[str, str]]]:
    rec = json.loads(path.read_text())
    return {d["doc_id"]: (d["generation"], d["extracted"]) for d in rec["docs"]}


def _agreement(ref: dict, got: dict) -> tuple[float, float, int]:
    """(share of docs with equal text, share of those with equal extracted answers, docs)."""
    same = [i for i in ref if ref[i][0] == got[i][0]]
    answers = sum(all(ref[i][1].get(k) == got[i][1].get(k) for k in ref[i][1]) for i in same)
    return len(same) / len(ref), (answers / len(same) if same else float("nan")), len(ref)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "generation_speed")
    ap.add_argument("--chat-template", action="store_true", help="lm-eval's --apply_chat_template (replayed)")
    ap.add_argument("--resume", action="store_true", help="keep the rows already measured in OUT/rows.json")
    ap.add_argument("--child", nargs=3, metavar=("RESULTS", "STRATEGY", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        results, strategy, out = args.child
        child(Path(results), strategy, Path(out))
        return
    if not LMEVAL.exists():
        sys.exit("lm-eval is not installed: make install-lmeval")
    from repaudit.backends.model_source import resolve_default_model
    from repaudit.run.config import default_cache_dir

    model_dir = resolve_default_model(default_cache_dir()).path
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = out / "rows.json"
    done = json.loads(store.read_text()) if args.resume and store.exists() else {}
    setup = [args.limit, args.batch_size, args.chat_template]
    if done.get("setup") != setup:
        done = {"setup": setup}

    def keep(key: str, value: list) -> None:
        done[key] = value
        store.write_text(json.dumps(done))

    rows = []
    for shots, task in SETTINGS.items():
        if task not in done:
            results, wall, rss = _lmeval(task, args.limit, args.batch_size, model_dir, out, args.chat_template)
            keep(task, [str(results), wall, rss])
            print(f"lm-eval {task}: {wall:.0f} s", file=sys.stderr, flush=True)
        results, wall, rss = Path(done[task][0]), done[task][1], done[task][2]
        ref = _lmeval_docs(results)
        rows.append(("lm-eval 0.4.13", shots, wall, rss, None, 1.0, 1.0, wall))
        for strategy in ("exact", "prefix_cache"):
            path = out / f"repaudit-{task}-{strategy}.json"
            if path.name not in done:
                w, r = measured([sys.executable, str(Path(__file__).resolve()), "--child", str(results), strategy,
                                  str(path)], ROOT)
                keep(path.name, [w, r])
                print(f"{path.name}: {w:.0f} s", file=sys.stderr, flush=True)
            w, r = done[path.name]
            same, answers, _ = _agreement(ref, _repaudit_docs(path))
            tokens = json.loads(path.with_suffix(".tokens.json").read_text())
            rows.append((f"repaudit {strategy}", shots + " (replayed)", w, r, tokens, same, answers, wall))
    n = len(ref)
    print(f"GSM8K 5-shot, {n} docs, float32, batch {args.batch_size}, max_gen_toks 256 (the task's), "
          f"SmolLM2-135M-Instruct, {os.cpu_count()} cores\n")
    print("| tool | few-shot | docs/s | wall (s) | × lm-eval | tokens prefilled | tokens decoded | peak RSS (MiB) "
          "| same text as lm-eval | same answers (of those) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, shots, w, r, tok, same, answers, lm_wall in rows:
        pre = f"{tok['prefilled']:,}" if tok else "n/a"
        dec = f"{tok['decoded']:,}" if tok else "n/a"
        print(f"| {name} | {shots} | {n / w:.3f} | {w:.0f} | {lm_wall / w:.2f} | {pre} | {dec} | {r:.0f} | "
              f"{100 * same:.1f} % | {100 * answers:.1f} % |")


if __name__ == "__main__":
    main()
