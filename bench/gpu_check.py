"""The GPU check's runs, comparisons, profiles and table (``bench/gpu_check.sh`` installs what is missing, then runs
this).

Runs ``repaudit run`` on ARC-Easy validation for every dtype × batch size and on the first HellaSwag validation docs,
each as its own process (the wall time a user waits, model load included), with one batch store under ``OUT/cache``
so that ``repaudit attribute`` re-executes its hybrids from the store; then ``repaudit compare`` on each pair that
differs in one factor, ``repaudit attribute`` on the pair that differs in both, and lm-eval's hf backend on the same
model, docs, dtype, batch size and device where lm-eval is importable — at the same batch size and, with
``--auto``, both tools at ``--batch-size auto``. ``--synthetic 1b,1.7b`` builds Llama-architecture models of those
published shapes on the device (``bench/synthetic_model.py``, weights from a fixed seed, cached under
``OUT/cache/synthetic``) and runs ARC-Easy, the first HellaSwag docs and MMLU 5-shot on each, with lm-eval beside them.
``bench/gpu_profile.py`` profiles the ARC runs at the largest batch (top ops by device time after warm-up). Writes
``OUT/gpu_check.md`` (rewritten after every step, so a run cut short keeps what it did; ``bench/gpu_check_report.py``),
the run files, the compare/attribute JSON, the profiles, lm-eval's outputs and every command's log under ``OUT``.

Steps start only while ``--budget-s`` seconds have not passed (each skipped step is named in the table); the order
puts the acceptance points first: the default model's ARC runs at the largest batch, lm-eval on them and their
profiles, then each synthetic model's ARC runs with lm-eval, its profile, its HellaSwag and MMLU with lm-eval, then
the default model's ``auto`` batches (both tools), smaller batch sizes, compare/attribute and HellaSwag.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu_check_report import docs_of, write  # noqa: E402
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
    ap.add_argument("--synthetic", default="", help="synthetic models to build and run: names of "
                    "bench/synthetic_model.py's SHAPES (tiny, 1b, 1.7b, 3b), comma-separated; empty = none")
    ap.add_argument("--synthetic-tasks", default="arc_easy,hellaswag,mmlu", help="tasks run on each synthetic model")
    ap.add_argument("--synthetic-dtypes", default="", help="their ARC-Easy dtypes (default: --dtypes)")
    ap.add_argument("--synthetic-other-dtypes", default="bfloat16", help="their dtypes on the other tasks (default "
                    "bfloat16, the dtype a 1B model is served in: one call of ≤ 8 minutes has no room for both)")
    ap.add_argument("--synthetic-batch-size", type=int, default=0, help="their batch size (default: the largest "
                    "ARC batch size)")
    ap.add_argument("--mmlu-limit", type=int, default=1000, help="first N MMLU test docs (5-shot)")
    ap.add_argument("--auto", action=argparse.BooleanOptionalAction, default=True,
                    help="also run ARC at --batch-size auto in both tools (default on)")
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                    help="profile the ARC runs at the largest batch (bench/gpu_profile.py; default on)")
    ap.add_argument("--profile-batches", type=int, default=3)
    ap.add_argument("--in-process", action="store_true", help="run each repaudit command and bench script in this "
                    "process (no interpreter start and imports per step: the CPU test's speed; the walls then leave "
                    "out the ~3 s of imports a user waits)")
    ap.add_argument("--shared-prefix", action=argparse.BooleanOptionalAction, default=True,
                    help="also run each synthetic model's last task with --scoring-strategy shared_prefix and compare "
                    "it with full_sequence (default on)")
    return ap.parse_args()


#: ``--in-process``: :func:`_sh` runs this interpreter's commands (``python -m MODULE``, ``python SCRIPT``) here
IN_PROCESS = False


def _sh(cmd: list[str], log: Path, env: dict | None = None) -> tuple[int, float]:
    """Run ``cmd`` in the repository with its output in ``log``; (exit code, wall seconds). With
    :data:`IN_PROCESS`, a command of this interpreter runs in this process (:func:`_in_process`)."""
    t = time.perf_counter()
    with log.open("w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        if IN_PROCESS and cmd[0] == sys.executable and len(cmd) > 1:
            rc = _in_process(cmd[1:], f, env)
        else:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=HERE.parent).returncode
    return rc, time.perf_counter() - t


def _in_process(args: list[str], f, env: dict | None) -> int:
    """``python ARGS`` (``-m MODULE ...`` or ``SCRIPT ...``) run by :mod:`runpy` in this process, its output in
    ``f`` and ``env`` set around it; the exit code (a traceback goes to ``f``, exit 1)."""
    import traceback

    saved_env, saved_argv, saved_cwd, saved_path = dict(os.environ), sys.argv, os.getcwd(), list(sys.path)
    try:
        os.environ.clear()
        os.environ.update(env or saved_env)
        sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # as a new process
        os.chdir(HERE.parent)
        with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
            try:
                if args[0] == "-m":
                    sys.argv = [args[1], *args[2:]]
                    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
                else:
                    sys.argv = list(args)
                    runpy.run_path(args[0], run_name="__main__")
                return 0
            except SystemExit as e:
                return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:  # noqa: BLE001  (a step's failure is its log's, as a subprocess's would be)
                traceback.print_exc(file=f)
                return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


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
        self.profiles: dict[str, dict] = {}
        self.synthetic: dict[str, dict] = {}  # name -> {path, parameters, wall, device}
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

    def limit(self, task: str, bs: int | str) -> int:
        n = {"hellaswag": self.a.hellaswag_b1_limit if bs == 1 else self.a.hellaswag_limit,
             "mmlu": self.a.mmlu_limit}.get(task, 0)
        return min(x for x in (n, self.a.limit) if x) if (n or self.a.limit) else 0

    def run(self, task: str, dtype: str, bs: int | str, model: str | None = None, label: str = "",
            strategy: str = "full_sequence") -> str | None:
        """``repaudit run`` of ``task`` on ``model`` (default: ``--model``) with scoring ``strategy``; its name
        (``label`` first, ``-sp`` last for shared_prefix), or None."""
        name = f"{label}{task}-{dtype}-b{bs}" + ("-sp" if strategy == "shared_prefix" else "")
        if not self.in_budget(f"run {name}"):
            return None
        path, n = self.out / f"{name}.json", self.limit(task, bs)
        args = ["run", "--task", task, "--model", model or self.a.model, "--device", self.a.device, "--dtype", dtype,
                "--batch-size", str(bs), "--cache-dir", str(self.cache), "-o", str(path)]
        args += ["--data-dir", str(self.a.data_dir)] if self.a.data_dir else []
        args += ["--limit", str(n)] if n else []
        args += ["--num-fewshot", "5"] if task == "mmlu" else []
        args += ["--scoring-strategy", strategy]
        rc, wall = self.repaudit(args, f"{name}.log")
        if rc:
            self.skipped.append(f"run {name}: exit {rc} (logs/{name}.log)")
            return None
        self.runs[name] = {"task": task, "dtype": dtype, "bs": bs, "limit": n, "wall": wall, "path": path,
                           "model": model or self.a.model}
        return name

    def profile(self, name: str | None) -> None:
        """``bench/gpu_profile.py`` on run ``name``'s settings: top ops after warm-up (``OUT/profile-NAME.json``)."""
        if not self.a.profile or name not in self.runs or not self.in_budget(f"profile {name}"):
            return
        r, out = self.runs[name], self.out / f"profile-{name}.json"
        args = [sys.executable, str(HERE / "gpu_profile.py"), str(out), "--task", r["task"], "--model", r["model"],
                "--device", self.a.device, "--dtype", r["dtype"], "--batch-size", str(r["bs"]),
                "--cache-dir", str(self.cache), "--batches", str(self.a.profile_batches)]
        args += ["--data-dir", str(self.a.data_dir)] if self.a.data_dir else []
        args += ["--limit", str(r["limit"])] if r["limit"] else []
        args += ["--num-fewshot", "5"] if r["task"] == "mmlu" else []
        rc, _ = _sh(args, self.out / "logs" / f"profile-{name}.log", self.env)
        if rc:
            self.skipped.append(f"profile {name}: exit {rc} (logs/profile-{name}.log)")
            return
        self.profiles[name] = json.loads(out.read_text())

    def build_synthetic(self, name: str) -> str | None:
        """Build (or find) synthetic model ``name`` on the device; its folder, or None."""
        if not self.in_budget(f"build synthetic {name}"):
            return None
        cmd = [sys.executable, str(HERE / "synthetic_model.py"), name, str(self.cache / "synthetic"),
               "--device", self.a.device, "--tokenizer", str(self.model_dir())]
        log = self.out / "logs" / f"synthetic-{name}.log"
        rc, wall = _sh(cmd, log, self.env)
        if rc:
            self.skipped.append(f"synthetic {name}: exit {rc} (logs/synthetic-{name}.log)")
            return None
        path = Path(log.read_text().strip().splitlines()[-1])
        info = json.loads((path / "synthetic.json").read_text())
        self.synthetic[name] = {"path": path, "parameters": info["parameters"], "wall": wall, "device": self.a.device}
        return str(path)

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
        da, db = (docs_of(self.runs[x]["path"]) for x in (a, b))
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

    def lm_eval(self, cmd: list[str], name: str | None, batch: str | None = None) -> None:
        """lm-eval's hf backend on run ``name``'s model, docs, dtype and device, at its batch size (or ``batch``:
        ``auto``), its per-doc log-likelihoods compared with the run's."""
        batch = batch or str(self.runs[name]["bs"]) if name in self.runs else batch
        if name not in self.runs or not self.in_budget(f"lm-eval {name} (batch {batch})"):
            return
        r = self.runs[name]
        tag = f"{name}-lm{batch}"
        work = self.out / "lmeval" / tag
        names, lm_limit = write_tasks(r["task"], self.a.data_dir, work / "tasks", r["limit"])
        model = self.model_dir() if r["model"] == self.a.model else r["model"]
        args = cmd + ["--model", "hf", "--model_args", f"pretrained={model},dtype={r['dtype']}",
                      "--tasks", ",".join(names), "--include_path", str(work / "tasks"), "--device", self.a.device,
                      "--batch_size", batch, "--log_samples", "--output_path", str(work / "out")]
        args += ["--limit", str(lm_limit)] if lm_limit else []
        args += ["--num_fewshot", "5"] if r["task"] == "mmlu" else []
        env = {**self.env, "PYTHONPATH": os.pathsep.join([str(work / "tasks"), self.env["PYTHONPATH"]])}
        rc, wall = _sh(args, self.out / "logs" / f"lmeval-{tag}.log", env)
        if rc:
            self.skipped.append(f"lm-eval {tag}: exit {rc} (logs/lmeval-{tag}.log)")
            return
        self.lmeval.append({"run": name, "batch": batch, "wall": wall, **_lmeval_agreement(work / "out", names,
                                                                                           r["path"])})

    def model_dir(self) -> Path:
        """The model's folder, resolved (and the default model converted from its GGUF) once, in the runs' cache."""
        if self.resolved is None:
            from repaudit.backends.model_source import resolve_model

            t = time.perf_counter()
            self.resolved = resolve_model(self.a.model, None, self.cache).path
            self.resolve_s = time.perf_counter() - t
        return self.resolved


def _lmeval_agreement(out: Path, names: list[str], run_path: Path) -> dict:
    """lm-eval's samples (every task of ``names``, in order: MMLU's subjects restart their doc ids) against the run's
    docs in doc order: docs, identical predictions, max |Δ ll|, mean acc, lm-eval's evaluation seconds."""
    lls, accs = [], []
    for task in names:
        samples = sorted((json.loads(line) for line in next(out.rglob(f"samples_{task}_*.jsonl")).open()),
                         key=lambda s: s["doc_id"])
        lls += [[float(x[0][0]) for x in s["resps"]] for s in samples]
        accs += [float(s["acc"]) for s in samples if "acc" in s]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    ours = [d for _, d in sorted(docs_of(run_path).items())]
    same = sum(o["prediction"] == x.index(max(x)) for x, o in zip(lls, ours))
    dmax = max((abs(a - b) for x, o in zip(lls, ours) for a, b in zip(x, o["loglikelihoods"])), default=0.0)
    eval_s = results.get("total_evaluation_time_seconds")
    return {"docs": len(lls), "same": same, "max_dll": dmax, "acc": sum(accs) / len(accs) if accs else None,
            "eval_s": float(eval_s) if eval_s is not None else None}


def _synthetic(check: Check, lm: list[str] | None, name: str, big: int) -> None:
    """One synthetic model: built, then ARC-Easy in every dtype (lm-eval beside each; the last dtype profiled), then
    the other tasks (HellaSwag's first docs, MMLU 5-shot's) in ``--synthetic-other-dtypes`` with lm-eval beside
    them."""
    a = check.a
    folder = check.build_synthetic(name)
    if folder is None:
        return
    dtypes = (a.synthetic_dtypes or a.dtypes).split(",")
    bs = a.synthetic_batch_size or big
    tasks = [t for t in a.synthetic_tasks.split(",") if t]
    for task in tasks[:1]:
        for d in dtypes:
            run = check.run(task, d, bs, folder, f"syn-{name}-")
            if lm:
                check.lm_eval(lm, run)
            write(check, T0)
    check.profile(f"syn-{name}-{tasks[0]}-{dtypes[-1]}-b{bs}" if tasks else None)  # one profile: the time is short
    for task in tasks[1:]:
        for d in a.synthetic_other_dtypes.split(","):
            run = check.run(task, d, bs, folder, f"syn-{name}-")
            if lm:
                check.lm_eval(lm, run)
            write(check, T0)
    if tasks and a.shared_prefix:  # the strategy that should pay most at this size: the last task (MMLU's 5-shot block)
        d = a.synthetic_other_dtypes.split(",")[-1] if len(tasks) > 1 else dtypes[-1]
        full = f"syn-{name}-{tasks[-1]}-{d}-b{bs}"
        check.compare(full, check.run(tasks[-1], d, bs, folder, f"syn-{name}-", "shared_prefix"), "scoring strategy")
        write(check, T0)


def _default_model(check: Check, lm: list[str] | None, dtypes: list[str], sizes: list[int]) -> None:
    """The default model after the acceptance runs: auto batches, the smaller batch sizes, compare, attribute."""
    big, small = max(sizes), min(sizes)
    for d in dtypes if check.a.auto else []:
        run = check.run("arc_easy", d, "auto")
        if lm:
            check.lm_eval(lm, run, "auto")
        write(check, T0)
    for bs in sorted(set(sizes) - {big}, reverse=True):
        for d in dtypes:
            check.run("arc_easy", d, bs)
            write(check, T0)
    for d in dtypes if small != big else []:
        check.compare(f"arc_easy-{d}-b{big}", f"arc_easy-{d}-b{small}", "batch size")
    for bs in sorted(set(sizes)) if len(dtypes) > 1 else []:
        check.compare(f"arc_easy-{dtypes[0]}-b{bs}", f"arc_easy-{dtypes[-1]}-b{bs}", "dtype")
    if len(dtypes) > 1 or small != big:  # the pair that differs most: lm-eval's figures, bf16 b1 → fp32 b64
        check.attribute(f"arc_easy-{dtypes[-1]}-b{small}", f"arc_easy-{dtypes[0]}-b{big}")
    write(check, T0)


def main() -> int:
    global IN_PROCESS
    a = _args()
    IN_PROCESS = a.in_process
    check = Check(a)
    dtypes, sizes = a.dtypes.split(","), [int(x) for x in a.arc_batch_sizes.split(",")]
    h_dtypes, h_sizes = a.hellaswag_dtypes.split(","), [int(x) for x in a.hellaswag_batch_sizes.split(",")]
    big, h_big = max(sizes), max(h_sizes)
    check.model_dir()  # outside every run's timings
    for d in dtypes:
        check.run("arc_easy", d, big)
        write(check, T0)
    lm = check.lmeval_command()
    for d in dtypes if lm else []:
        check.lm_eval(lm, f"arc_easy-{d}-b{big}")
        write(check, T0)
    for d in dtypes:  # what explains bfloat16 against float32
        check.profile(f"arc_easy-{d}-b{big}")
        write(check, T0)
    for name in [n for n in a.synthetic.split(",") if n]:
        _synthetic(check, lm, name, big)
    _default_model(check, lm, dtypes, sizes)
    for bs in [h_big, *sorted(set(h_sizes) - {h_big}, reverse=True)]:
        for d in h_dtypes:
            check.run("hellaswag", d, bs)
            write(check, T0)
    for d in h_dtypes if lm else []:
        check.lm_eval(lm, f"hellaswag-{d}-b{h_big}")
    for d in h_dtypes if min(h_sizes) != h_big else []:
        check.compare(f"hellaswag-{d}-b{h_big}", f"hellaswag-{d}-b{min(h_sizes)}", "batch size (and docs)")
    for name in [n for n in check.runs if a.lmeval_all and lm and n not in {x["run"] for x in check.lmeval}]:
        check.lm_eval(lm, name)
    print(write(check, T0))
    failed = [s for s in check.skipped if "exit" in s]
    return 1 if failed or not check.runs else 0


if __name__ == "__main__":
    sys.exit(main())
