"""Racing in ``reproduce``: the full search against ``--race``, on a planted target.

A planted configuration (default: cloze format, 5-shot — two factors from the default base, lmeval
format and 0-shot) is run first; its acc is handed to ``reproduce`` as the target. Then the same
search runs twice, each with a fresh batch store so that neither reuses the other's forward passes:
once in full (every candidate on every doc) and once with ``--race``. The table gives both wall
times, the doc evaluations, whether the planted configuration matches in both, and whether every
candidate the race kept has the full search's score and interval.

    python bench/reproduce_racing.py --data-dir ../shared/data              # SciQ, 200 docs
    python bench/reproduce_racing.py --task sciq --limit 200 --moves num_fewshot,prompt_format --budget 13

Resumable: each finished phase is kept in ``--work``/state.json (delete it to measure again); an
interrupted phase restarts with its own store (the wall time of a phase is one uninterrupted run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import measured  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "repaudit"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--task", default="sciq")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--planted", default="--prompt-format cloze --num-fewshot 5",
                    help="the planted configuration's options (two factors from the base)")
    ap.add_argument("--planted-label", default="num_fewshot=5, prompt_format=cloze")
    ap.add_argument("--moves", default="num_fewshot,prompt_format")
    ap.add_argument("--budget", type=int, default=9, help="9: the base, the protocol, three n-shots, two formats and "
                                                              "the two 5-shot format moves (the planted one last)")
    ap.add_argument("--scoring-strategy", default="shared_prefix")
    ap.add_argument("--round-docs", type=int, default=20)
    ap.add_argument("--work", type=Path, default=Path("/tmp/repaudit-racing"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    state_path = args.work / "state.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    common = ["--task", args.task, "--limit", str(args.limit), "--data-dir", str(args.data_dir), "--dtype", "float32",
              "--scoring-strategy", args.scoring_strategy]

    def phase(name: str, cmd: list[str]) -> dict:
        if name not in state:
            cache = args.work / f"cache-{name}"
            shutil.rmtree(cache, ignore_errors=True)  # a fresh store: the phase pays for every forward pass
            wall, rss = measured([*cmd, "--cache-dir", str(cache)], ROOT)
            state[name] = {"wall_s": round(wall, 1), "rss_mib": round(rss)}
            state_path.write_text(json.dumps(state, indent=1))
            print(f"{name}: {wall:.0f} s", file=sys.stderr, flush=True)
        return state[name]

    planted_out = args.work / "planted.json"
    phase("planted", [*CLI, "run", *common, *args.planted.split(), "-o", str(planted_out)])
    acc = next(m for m in json.loads(planted_out.read_text())["metrics"] if m["name"] == "acc")["value"]
    search = [*CLI, "reproduce", *common, "--target", f"{100 * acc:.4f}%", "--target-kind", "raw", "--metric", "acc",
              "--moves", args.moves, "--budget", str(args.budget), "--json"]
    outs = {}
    # the race first: a full search costs the same whatever the target (every candidate on every doc), so an
    # interrupted bench has the measurement that is new
    for name, extra in (("race", ["--race", "--round-docs", str(args.round_docs)]), ("full", [])):
        out = args.work / f"{name}.json"
        phase(name, [*search, *extra, "-o", str(out)])
        outs[name] = json.loads(out.read_text())
    full, race = outs["full"], outs["race"]
    kept = {(v["label"], v["metric"], v["form"]): v for v in race["views"] if not v.get("dropped")}
    same = all(v == kept[(v["label"], v["metric"], v["form"])] for v in full["views"]
               if (v["label"], v["metric"], v["form"]) in kept)
    planted = {name: any(v["label"] == args.planted_label and v["contains"] for v in o["views"])
               for name, o in outs.items()}
    r = race["race"]
    print(f"\n{args.task}, {r['docs_available']} docs, target {100 * acc:.2f} (acc of {args.planted_label}), "
          f"moves {args.moves}, rounds of {r['round_docs']}:\n")
    print("| search | configurations | doc evaluations | planted matches | matches | wall | share of full |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, o in sorted(outs.items()):
        evals = r["doc_evaluations"] if name == "race" else r["full_doc_evaluations"]
        n_match = len({v["label"] for v in o["views"] if v["contains"]})
        print(f"| {name} | {o['evaluated']} | {evals:,} | {'yes' if planted[name] else 'NO'} | {n_match} | "
              f"{state[name]['wall_s']:.0f} s | {state[name]['wall_s'] / state['full']['wall_s']:.0%} |")
    print(f"\ndropped by the race: {len(r['dropped'])} ({', '.join(r['dropped'])}); "
          f"survivors' views equal to the full search's: {'yes' if same else 'NO'}; "
          f"planted run {state['planted']['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
