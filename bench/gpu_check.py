"""The GPU check's runs, comparisons and table (``bench/gpu_check.sh`` installs what is missing, then runs this).

Runs ``repaudit run`` on ARC-Easy validation for every dtype × batch size and on the first HellaSwag
validation docs, each as its own process (the wall time a user waits, model load included), with one batch
store under ``OUT/cache`` so that ``repaudit attribute`` re-executes its hybrids from the store; then
``repaudit compare`` on each pair that differs in one factor, ``repaudit attribute`` on the pair that differs
in both, and lm-eval's hf backend on the same model, docs, dtype, batch size and device where lm-eval is
importable. Writes ``OUT/gpu_check.md`` (rewritten after every step, so a run cut short keeps what it did),
the run files, the compare/attribute JSON, lm-eval's outputs and every command's log under ``OUT``.

Steps start only while ``--budget-s`` seconds have not passed (each skipped step is named in the table);
the order puts the acceptance points first: ARC at the largest batch size, lm-eval on those runs, the
smaller batch sizes, compare/attribute, HellaSwag.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from lmeval_tasks import write_tasks  # noqa: E402

T0 = time.perf_counter()


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="output folder (created)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="default", help="'default' (SmolLM2-135M-Instruct) or a model folder")
    ap.add_argument("--data-dir", type=Path, help="shared/data layout; without it lm-eval is skipped")
    ap.add_argument("--limit", type=int, default=0, help="at most this many docs per run (0 = the defaults below)")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="ARC-Easy dtypes")
    ap.add_argument("--arc-batch-sizes", default="64,1")
    ap.add_argument("--hellaswag-dtypes", default="bfloat16")
    ap.add_argument("--hellaswag-batch-sizes", default="32,1")
    ap.add_argument("--hellaswag-limit", type=int, default=2000, help="first N HellaSwag validation docs")
    ap.add_argument("--hellaswag-b1-limit", type=int, default=500,
                    help="first N docs for HellaSwag at batch size 1 (latency-bound: ~8 docs/s on an H200)")
    ap.add_argument("--lmeval", default="auto", help="'auto' (python -m lm_eval where importable), 'off', or a "
                    "command such as .venv-lmeval/bin/lm_eval")
    ap.add_argument("--lmeval-all", action="store_true", help="lm-eval on every run, not only the largest batches")
    ap.add_argument("--budget-s", type=float, default=470.0, help="start no step after this many seconds")
    return ap.parse_args()


def _sh(cmd: list[str], log: Path, env: dict | None = None) -> tuple[int, float]:
    """Run ``cmd`` in the repository with its output in ``log``; (exit code, wall seconds)."""
    t = time.perf_counter()
    with log.open("w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=HERE.parent).returncode
    return rc, time.perf_counter() - t


class Check:
    """State of one check: its settings, what ran, what was skipped, and the Markdown it writes."""

    def __init__(self, a: argparse.Namespace):
        # the commands run in the repository (so run files record its commit): paths given relative to here
        for attr in ("out", "data_dir"):
            if getattr(a, attr) is not None:
                setattr(a, attr, getattr(a, attr).resolve())
        if Path(a.model).is_dir():
            a.model = str(Path(a.model).resolve())
        self.a = a
        self.out = a.out
        (self.out / "logs").mkdir(parents=True, exist_ok=True)
        self.cache = self.out / "cache"
        self.runs: dict[str, dict] = {}      # name -> {task, dtype, bs, limit, wall, path}
        self.pairs: list[dict] = []
        self.attributions: list[dict] = []
        self.lmeval: list[dict] = []
        self.skipped: list[str] = []
        self.resolved: Path | None = None
        self.resolve_s = 0.0
        # runs and attribute get --cache-dir OUT/cache (one batch store); a default model already converted in the
        # user cache is reused from there
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "PYTHONPATH": os.pathsep.join(
                        [str(HERE.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}

    def in_budget(self, what: str) -> bool:
        spent = time.perf_counter() - T0
        if spent > self.a.budget_s:
            self.skipped.append(f"{what}: not started, {spent:.0f} s spent of the {self.a.budget_s:.0f} s budget")
            return False
        return True

    def repaudit(self, args: list[str], log: str) -> tuple[int, float]:
        return _sh([sys.executable, "-m", "repaudit", *args], self.out / "logs" / log, self.env)

    def limit(self, task: str, bs: int) -> int:
        n = (self.a.hellaswag_b1_limit if bs == 1 else self.a.hellaswag_limit) if task == "hellaswag" else 0
        return min(x for x in (n, self.a.limit) if x) if (n or self.a.limit) else 0

    def run(self, task: str, dtype: str, bs: int) -> None:
        name = f"{task}-{dtype}-b{bs}"
        if not self.in_budget(f"run {name}"):
            return
        path, n = self.out / f"{name}.json", self.limit(task, bs)
        args = ["run", "--task", task, "--model", self.a.model, "--device", self.a.device, "--dtype", dtype,
                "--batch-size", str(bs), "--cache-dir", str(self.cache), "-o", str(path)]
        args += ["--data-dir", str(self.a.data_dir)] if self.a.data_dir else []
        args += ["--limit", str(n)] if n else []
        rc, wall = self.repaudit(args, f"{name}.log")
        if rc:
            self.skipped.append(f"run {name}: exit {rc} (logs/{name}.log)")
            return
        self.runs[name] = {"task": task, "dtype": dtype, "bs": bs, "limit": n, "wall": wall, "path": path}

    # ------------------------------------------------------------------ comparisons
    def compare(self, a: str, b: str, differs: str) -> None:
        if a not in self.runs or b not in self.runs or not self.in_budget(f"compare {a} {b}"):
            return
        out = self.out / f"compare-{a}-vs-{b}.json"
        rc, wall = self.repaudit(["compare", str(self.runs[a]["path"]), str(self.runs[b]["path"]), "--json",
                                  "-o", str(out)], f"compare-{a}-vs-{b}.log")
        if rc:
            self.skipped.append(f"compare {a} {b}: exit {rc} (logs/compare-{a}-vs-{b}.log)")
            return
        acc = next(s for s in json.loads(out.read_text())["scores"] if s["metric"] == "acc")
        da, db = (_docs(self.runs[x]["path"]) for x in (a, b))
        shared = sorted(set(da) & set(db))
        moved = [max(abs(x - y) for x, y in zip(da[i]["loglikelihoods"], db[i]["loglikelihoods"])) for i in shared]
        self.pairs.append({"a": a, "b": b, "differs": differs, "docs": len(shared), "delta": acc["delta"],
                           "verdict": acc["verdict"], "wall": wall,
                           "flips": sum(da[i]["prediction"] != db[i]["prediction"] for i in shared),
                           "ll_changed": sum(m > 0 for m in moved), "max_dll": max(moved, default=0.0)})

    def attribute(self, a: str, b: str) -> None:
        if a not in self.runs or b not in self.runs or not self.in_budget(f"attribute {a} {b}"):
            return
        out = self.out / f"attribute-{a}-vs-{b}.json"
        args = ["attribute", str(self.runs[a]["path"]), str(self.runs[b]["path"]), "--cache-dir", str(self.cache),
                "--json", "-o", str(out)]
        args += ["--data-dir", str(self.a.data_dir)] if self.a.data_dir else []
        rc, wall = self.repaudit(args, f"attribute-{a}-vs-{b}.log")
        if rc:
            self.skipped.append(f"attribute {a} {b}: exit {rc} (logs/attribute-{a}-vs-{b}.log)")
            return
        self.attributions.append({"a": a, "b": b, "wall": wall, **json.loads(out.read_text())})

    # ------------------------------------------------------------------ lm-eval
    def lmeval_command(self) -> list[str] | None:
        """The lm_eval command, or None with the reason recorded."""
        if self.a.lmeval == "off":
            self.skipped.append("lm-eval: --lmeval off")
            return None
        if self.a.data_dir is None:
            self.skipped.append("lm-eval: needs --data-dir (its offline task files read shared/data's JSON lines)")
            return None
        if self.a.lmeval != "auto":
            return self.a.lmeval.split()
        probe = subprocess.run([sys.executable, "-c", "import lm_eval"], capture_output=True, text=True)
        if probe.returncode:
            why = (probe.stderr.strip().splitlines() or ["import failed"])[-1]
            self.skipped.append(f"lm-eval: not importable by {sys.executable} ({why})")
            return None
        return [sys.executable, "-m", "lm_eval"]

    def lm_eval(self, cmd: list[str], name: str) -> None:
        if name not in self.runs or not self.in_budget(f"lm-eval {name}"):
            return
        r = self.runs[name]
        work = self.out / "lmeval" / name
        names, lm_limit = write_tasks(r["task"], self.a.data_dir, work / "tasks", r["limit"])
        args = cmd + ["--model", "hf", "--model_args", f"pretrained={self.model_dir()},dtype={r['dtype']}",
                      "--tasks", ",".join(names), "--include_path", str(work / "tasks"), "--device", self.a.device,
                      "--batch_size", str(r["bs"]), "--log_samples", "--output_path", str(work / "out")]
        args += ["--limit", str(lm_limit)] if lm_limit else []
        env = {**self.env, "PYTHONPATH": os.pathsep.join([str(work / "tasks"), self.env["PYTHONPATH"]])}
        rc, wall = _sh(args, self.out / "logs" / f"lmeval-{name}.log", env)
        if rc:
            self.skipped.append(f"lm-eval {name}: exit {rc} (logs/lmeval-{name}.log)")
            return
        samples = sorted((json.loads(line) for line in next((work / "out").rglob("samples_*.jsonl")).open()),
                         key=lambda s: s["doc_id"])
        results = json.loads(next((work / "out").rglob("results_*.json")).read_text())["results"][names[0]]
        ours = _docs(r["path"])
        same, dmax = 0, 0.0
        for s in samples:
            lls = [float(x[0][0]) for x in s["resps"]]
            same += ours[s["doc_id"]]["prediction"] == lls.index(max(lls))
            dmax = max(dmax, *(abs(x - y) for x, y in zip(lls, ours[s["doc_id"]]["loglikelihoods"])))
        self.lmeval.append({"run": name, "wall": wall, "acc": results.get("acc,none"), "docs": len(samples),
                            "same": same, "max_dll": dmax})

    def model_dir(self) -> Path:
        """The model's folder, resolved (and the default model converted from its GGUF) once, in the runs' cache."""
        if self.resolved is None:
            from repaudit.backends.model_source import resolve_model

            t = time.perf_counter()
            self.resolved = resolve_model(self.a.model, None, self.cache).path
            self.resolve_s = time.perf_counter() - t
        return self.resolved


def _docs(path: Path) -> dict[int, dict]:
    return {d["doc_id"]: d for d in json.loads(Path(path).read_text())["docs"]}


def _metric(rec: dict, name: str) -> float | None:
    return next((m["value"] for m in rec["metrics"] if m["name"] == name), None)


def _f(x, fmt: str) -> str:
    return "–" if x is None else fmt.format(x)


def _machine(check: Check) -> list[str]:
    """Header lines: the machine as the first run file's fingerprint records it, and the commit."""
    if not check.runs:
        return []
    fp = json.loads(next(iter(check.runs.values()))["path"].read_text())["fingerprint"]
    hw, libs = fp["hardware"], fp["software"]["libraries"]
    gpus = ", ".join(f"{g['name']} ({g['memory_gib']} GiB)" for g in hw["gpus"]) or "none"
    return [f"- machine: {hw['cpu_model']}, {hw['cpu_count']} CPUs, torch threads {hw['torch_threads']}; GPUs: {gpus}; "
            f"driver {hw['gpu_driver']}, CUDA {hw['cuda_version']}; device `{check.a.device}`",
            f"- software: Python {fp['software']['python']}, torch {libs.get('torch')}, transformers "
            f"{libs.get('transformers')}; repaudit commit {fp['git']['commit']} (dirty: {fp['git']['dirty']})",
            f"- model: {fp['model']['name']} (weights sha256 {fp['model']['weights_sha256'][:12]}), resolved "
            f"before the runs in {check.resolve_s:.1f} s (the default model's GGUF is converted there on first use)"]


def _runs_table(check: Check) -> list[str]:
    lines = ["| run | docs | acc | acc_norm | wall s | model load s (parts) | eval s | forward s | docs/s (eval) "
             "| forward tokens/s | peak GPU MiB |", "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for name, r in check.runs.items():
        rec = json.loads(r["path"].read_text())
        t = rec["timings"]
        parts = ", ".join(f"{k} {v:.2f}" for k, v in (t.get("model_load_parts_s") or {}).items())
        tps = t["tokens_computed"] / t["forward_s"] if t.get("forward_s") else None
        lines.append(f"| {name} | {len(rec['docs'])} | {_f(_metric(rec, 'acc'), '{:.2%}')} | "
                     f"{_f(_metric(rec, 'acc_norm'), '{:.2%}')} | {r['wall']:.1f} | "
                     f"{t['model_load_s']:.2f} ({parts}) | "
                     f"{t['eval_s']:.2f} | {t['forward_s']:.2f} | {t['docs_per_s']:.1f} | {_f(tps, '{:,.0f}')} | "
                     f"{_f(t.get('gpu_memory_peak_mib'), '{:,.0f}')} |")
    return lines


def _pairs_table(check: Check) -> list[str]:
    lines = ["| A | B | differs in | docs | Δ acc pts (verdict) | predictions changed | docs whose log-likelihoods "
             "changed | max \\|Δ ll\\| nats |", "|---|---|---|---:|---|---:|---:|---:|"]
    lines += [f"| {p['a']} | {p['b']} | {p['differs']} | {p['docs']} | {p['delta']:+.2f} ({p['verdict']}) | "
              f"{p['flips']} | {p['ll_changed']} | {p['max_dll']:.2e} |" for p in check.pairs]
    return lines


def _attribution_lines(check: Check) -> list[str]:
    lines = []
    for x in check.attributions:
        phis = ", ".join(f"{f} {100 * v:+.2f}" for f, v in zip(x["factors"], x["phi"]))
        lines.append(f"- {x['a']} → {x['b']} ({x['metric']}, {x['n_docs']} docs): {phis} pts; residual "
                     f"{100 * x['residual']:+.2f} pts; fidelity {x['fidelity_a']:.0%} / {x['fidelity_b']:.0%}; "
                     f"{x['configurations']} configurations ({x['computed_batches']} batches computed, "
                     f"{x['cached_batches']} from the store) in {x['wall']:.1f} s wall")
    return lines


def _lmeval_table(check: Check) -> list[str]:
    lines = ["| run | docs | lm-eval wall s | lm-eval acc | repaudit acc | identical predictions "
             "| max \\|Δ ll\\| nats |", "|---|---:|---:|---:|---:|---:|---:|"]
    for x in check.lmeval:
        rec = json.loads(check.runs[x["run"]]["path"].read_text())
        lines.append(f"| {x['run']} | {x['docs']} | {x['wall']:.1f} | {_f(x['acc'], '{:.2%}')} | "
                     f"{_f(_metric(rec, 'acc'), '{:.2%}')} | {x['same']}/{x['docs']} ({x['same'] / x['docs']:.2%}) | "
                     f"{x['max_dll']:.2e} |")
    return lines


def write(check: Check) -> str:
    """Write ``OUT/gpu_check.md`` from what has run so far; returns its text."""
    text = "\n".join([
        "# repaudit GPU check", "", f"- command: `{' '.join(sys.argv)}`",
        f"- written {time.strftime('%Y-%m-%d %H:%M:%S %Z')} after {time.perf_counter() - T0:.0f} s", *_machine(check),
        "- wall s: the whole `repaudit run` process (imports, model load, scoring, writing); eval s: scoring; "
        "forward s: inside the forward passes, read after synchronising the device", "",
        "## Runs", "", *_runs_table(check), "", "## Pairs (repaudit compare)", "", *_pairs_table(check), "",
        "## Attribution (repaudit attribute)", "", *(_attribution_lines(check) or ["- none"]), "",
        "## lm-eval's hf backend on the same runs", "", *(_lmeval_table(check) if check.lmeval else ["- none"]), "",
        "## Not run", "", *([f"- {s}" for s in check.skipped] or ["- nothing"]), ""])
    (check.out / "gpu_check.md").write_text(text)
    return text


def main() -> int:
    a = _args()
    check = Check(a)
    dtypes, sizes = a.dtypes.split(","), [int(x) for x in a.arc_batch_sizes.split(",")]
    h_dtypes, h_sizes = a.hellaswag_dtypes.split(","), [int(x) for x in a.hellaswag_batch_sizes.split(",")]
    big, h_big = max(sizes), max(h_sizes)
    check.model_dir()  # outside every run's timings
    for d in dtypes:
        check.run("arc_easy", d, big)
        write(check)
    lm = check.lmeval_command()
    for d in dtypes if lm else []:
        check.lm_eval(lm, f"arc_easy-{d}-b{big}")
        write(check)
    for bs in sorted(set(sizes) - {big}, reverse=True):
        for d in dtypes:
            check.run("arc_easy", d, bs)
            write(check)
    small = min(sizes)
    for d in dtypes if small != big else []:
        check.compare(f"arc_easy-{d}-b{big}", f"arc_easy-{d}-b{small}", "batch size")
    for bs in sorted(set(sizes)) if len(dtypes) > 1 else []:
        check.compare(f"arc_easy-{dtypes[0]}-b{bs}", f"arc_easy-{dtypes[-1]}-b{bs}", "dtype")
    if len(dtypes) > 1 or small != big:  # the pair that differs most: lm-eval's figures, bf16 b1 → fp32 b64
        check.attribute(f"arc_easy-{dtypes[-1]}-b{small}", f"arc_easy-{dtypes[0]}-b{big}")
    write(check)
    for bs in [h_big, *sorted(set(h_sizes) - {h_big}, reverse=True)]:
        for d in h_dtypes:
            check.run("hellaswag", d, bs)
            write(check)
    for d in h_dtypes if lm else []:
        check.lm_eval(lm, f"hellaswag-{d}-b{h_big}")
    for d in h_dtypes if min(h_sizes) != h_big else []:
        check.compare(f"hellaswag-{d}-b{h_big}", f"hellaswag-{d}-b{min(h_sizes)}", "batch size (and docs)")
    for name in [n for n in check.runs if a.lmeval_all and lm and n not in {x["run"] for x in check.lmeval}]:
        check.lm_eval(lm, name)
    print(write(check))
    failed = [s for s in check.skipped if "exit" in s]
    return 1 if failed or not check.runs else 0


if __name__ == "__main__":
    sys.exit(main())
