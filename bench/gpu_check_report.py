"""The GPU check's Markdown (``OUT/gpu_check.md``): machine, runs with their time split and FLOP utilisation, pairs,
attribution, lm-eval side by side, top kernels, what did not run. Read by ``bench/gpu_check.py``; state comes from
its ``Check`` object and the run files.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

#: dense peak TFLOP/s by card (a substring of torch's device name) and dtype: bfloat16/float16 on the tensor cores,
#: float32 without TF32 (torch's default for matmul, ``torch.backends.cuda.matmul.allow_tf32 = False``). NVIDIA's
#: data sheets (SXM parts where both exist); a card not listed reads "unknown".
PEAK_TFLOPS = {
    "H200": {"bfloat16": 989.4, "float16": 989.4, "float32": 66.9},
    "H100 PCIe": {"bfloat16": 756.0, "float16": 756.0, "float32": 51.2},
    "H100": {"bfloat16": 989.4, "float16": 989.4, "float32": 66.9},
    "A100": {"bfloat16": 312.0, "float16": 312.0, "float32": 19.5},
    "L40S": {"bfloat16": 362.1, "float16": 362.1, "float32": 91.6},
    "L4": {"bfloat16": 121.0, "float16": 121.0, "float32": 30.3},
    "A10": {"bfloat16": 125.0, "float16": 125.0, "float32": 31.2},
    "RTX 4090": {"bfloat16": 165.2, "float16": 165.2, "float32": 82.6},
}


def docs_of(path: Path) -> dict[int, dict]:
    """A run file's docs by doc id."""
    return {d["doc_id"]: d for d in json.loads(Path(path).read_text())["docs"]}


def metric(rec: dict, name: str) -> float | None:
    """A run record's metric value, or None."""
    return next((m["value"] for m in rec["metrics"] if m["name"] == name), None)


def _f(x, fmt: str) -> str:
    return "–" if x is None else fmt.format(x)


def peak_tflops(gpu_name: str | None, dtype: str) -> float | None:
    """The card's dense peak for ``dtype`` (:data:`PEAK_TFLOPS`), or None (no GPU, or a card not listed)."""
    if not gpu_name:
        return None
    for card, peaks in PEAK_TFLOPS.items():  # listed most specific first (H100 PCIe before H100)
        if card in gpu_name:
            return peaks.get(dtype)
    return None


def flop_utilisation(rec: dict) -> tuple[float | None, float | None]:
    """(achieved forward TFLOP/s, share of the card's peak): FLOPs = 2 × parameters × tokens computed (the decoder's
    and embedding's weights once per token; attention's own products and the output layer's saving at unscored
    positions left out), over ``forward_s``; the share is None on a CPU or an unlisted card."""
    t, fp = rec["timings"], rec["fingerprint"]
    if not t.get("forward_s") or not t.get("tokens_computed"):
        return None, None
    achieved = 2 * fp["model"]["num_parameters"] * t["tokens_computed"] / t["forward_s"] / 1e12
    gpus = fp["hardware"].get("gpus") or []
    peak = peak_tflops(gpus[0]["name"] if gpus and fp["settings"]["serving"]["device"] != "cpu" else None,
                       fp["settings"]["serving"]["dtype"])
    return achieved, (achieved / peak if peak else None)


def _machine(check) -> list[str]:
    """Header lines: the machine as the first run file's fingerprint records it, and the commit."""
    if not check.runs:
        return []
    fp = json.loads(next(iter(check.runs.values()))["path"].read_text())["fingerprint"]
    hw, libs = fp["hardware"], fp["software"]["libraries"]
    gpus = ", ".join(f"{g['name']} ({g['memory_gib']} GiB)" for g in hw["gpus"]) or "none"
    lines = [f"- machine: {hw['cpu_model']}, {hw['cpu_count']} CPUs, torch threads {hw['torch_threads']}; GPUs: "
             f"{gpus}; driver {hw['gpu_driver']}, CUDA {hw['cuda_version']}; device `{check.a.device}`",
             f"- software: Python {fp['software']['python']}, torch {libs.get('torch')}, transformers "
             f"{libs.get('transformers')}; repaudit commit {fp['git']['commit']} (dirty: {fp['git']['dirty']})",
             f"- model: {fp['model']['name']} (weights sha256 {fp['model']['weights_sha256'][:12]}), resolved "
             f"before the runs in {check.resolve_s:.1f} s (the default model's GGUF is converted there on first use)"]
    lines += [f"- synthetic model `{name}`: {info['parameters']:,} parameters, built in {info['wall']:.1f} s "
              f"on `{info['device']}` ({info['path']})" for name, info in check.synthetic.items()]
    return lines


def _parts(parts: dict | None, keys: tuple[str, ...]) -> str:
    return " / ".join(f"{parts.get(k, 0):.2f}" for k in keys) if parts else "–"


def _runs_table(check) -> list[str]:
    lines = ["| run | docs | acc | wall s | model load s (imports / tokenizer / weights / other) | eval s | "
             "tokenise / batch / forward / log-softmax / transfer s | docs/s (eval) | forward tokens/s | "
             "forward TFLOP/s (util) | batches (sizes) | peak GPU MiB |",
             "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---|---:|"]
    for name, r in check.runs.items():
        rec = json.loads(r["path"].read_text())
        t = rec["timings"]
        tps = t["tokens_computed"] / t["forward_s"] if t.get("forward_s") else None
        tflops, util = flop_utilisation(rec)
        sizes = rec["fingerprint"]["backend"]["batch_sizes_used"]
        budget = (rec["fingerprint"]["backend"].get("engine") or {}).get("batch_tokens")
        load = _parts(t.get("model_load_parts_s"), ("imports", "tokenizer", "weights", "other"))
        split = _parts(t.get("eval_parts_s"), ("tokenise", "batch", "forward", "logsoftmax", "transfer"))
        shown = ", ".join(f"{k}×{v}" for k, v in list(sizes.items())[:4]) + (", …" if len(sizes) > 4 else "")
        lines.append(
            f"| {name} | {len(rec['docs'])} | {_f(metric(rec, 'acc'), '{:.2%}')} | {r['wall']:.1f} | "
            f"{t['model_load_s']:.2f} ({load}) | {t['eval_s']:.2f} | {split} | {t['docs_per_s']:.1f} | "
            f"{_f(tps, '{:,.0f}')} | {_f(tflops, '{:.2f}')} ({'unknown' if util is None else f'{util:.1%}'}) | "
            f"{sum(sizes.values())} ({shown}{f'; budget {budget:,} tokens' if budget else ''}) | "
            f"{_f(t.get('gpu_memory_peak_mib'), '{:,.0f}')} |")
    return lines


def _pairs_table(check) -> list[str]:
    lines = ["| A | B | differs in | docs | Δ acc pts (verdict) | predictions changed | docs whose log-likelihoods "
             "changed | max \\|Δ ll\\| nats |", "|---|---|---|---:|---|---:|---:|---:|"]
    lines += [f"| {p['a']} | {p['b']} | {p['differs']} | {p['docs']} | {p['delta']:+.2f} ({p['verdict']}) | "
              f"{p['flips']} | {p['ll_changed']} | {p['max_dll']:.2e} |" for p in check.pairs]
    return lines


def _attribution_lines(check) -> list[str]:
    lines = []
    for x in check.attributions:
        phis = ", ".join(f"{f} {100 * v:+.2f}" for f, v in zip(x["factors"], x["phi"]))
        lines.append(f"- {x['a']} → {x['b']} ({x['metric']}, {x['n_docs']} docs): {phis} pts; residual "
                     f"{100 * x['residual']:+.2f} pts; fidelity {x['fidelity_a']:.0%} / {x['fidelity_b']:.0%}; "
                     f"{x['configurations']} configurations ({x['computed_batches']} batches computed, "
                     f"{x['cached_batches']} from the store) in {x['wall']:.1f} s wall")
    return lines


def _lmeval_table(check) -> list[str]:
    lines = ["| run | lm-eval batch size | docs | lm-eval wall s | lm-eval eval s | repaudit wall s | repaudit eval s "
             "| × lm-eval (eval) | lm-eval acc | repaudit acc | identical predictions | max \\|Δ ll\\| nats |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in check.lmeval:
        r = check.runs[x["run"]]
        rec = json.loads(r["path"].read_text())
        eval_s = rec["timings"]["eval_s"]
        ratio = x["eval_s"] / eval_s if x.get("eval_s") and eval_s else None
        lines.append(f"| {x['run']} | {x['batch']} | {x['docs']} | {x['wall']:.1f} | {_f(x.get('eval_s'), '{:.2f}')} "
                     f"| {r['wall']:.1f} | {eval_s:.2f} | {_f(ratio, '{:.2f}×')} | {_f(x['acc'], '{:.2%}')} | "
                     f"{_f(metric(rec, 'acc'), '{:.2%}')} | {x['same']}/{x['docs']} ({x['same'] / x['docs']:.2%}) | "
                     f"{x['max_dll']:.2e} |")
    return lines


def _profile_lines(check) -> list[str]:
    lines = []
    for name, prof in check.profiles.items():
        parts = ", ".join(f"{k} {v:.3f}" for k, v in prof["eval_parts"].items())
        lines += [f"### {name}", "",
                  f"{prof['batches']} batches ({', '.join(map(str, prof['rows']))} requests) after warm-up, "
                  f"{prof['wall_s']:.3f} s wall, {prof['device_time_ms']:.1f} ms of {prof['kind']} time; "
                  f"seconds by part: {parts}", "", "| op | calls | ms | share |", "|---|---:|---:|---:|"]
        lines += [f"| `{t['op']}` | {t['calls']} | {t['ms']:.2f} | {t['share']:.1%} |" for t in prof["top"]]
        lines.append("")
    return lines


def write(check, t0: float) -> str:
    """Write ``OUT/gpu_check.md`` from what has run so far; returns its text."""
    text = "\n".join([
        "# repaudit GPU check", "", f"- command: `{' '.join(sys.argv)}`",
        f"- written {time.strftime('%Y-%m-%d %H:%M:%S %Z')} after {time.perf_counter() - t0:.0f} s", *_machine(check),
        "- wall s: the whole `repaudit run` process (imports, model load, scoring, writing); eval s: scoring, split "
        "into tokenising, batching (planning, tensors, the batch store), the decoder's forward pass, the output layer "
        "with log-softmax and gather at the scored positions, and the host transfer (each ended by a synchronised "
        "clock); forward TFLOP/s: 2 × parameters × tokens computed over forward + log-softmax seconds, and its share "
        "of the card's dense peak for the dtype (float32 without TF32)", "",
        "## Runs", "", *_runs_table(check), "", "## Pairs (repaudit compare)", "", *_pairs_table(check), "",
        "## Attribution (repaudit attribute)", "", *(_attribution_lines(check) or ["- none"]), "",
        "## lm-eval's hf backend on the same runs", "", *(_lmeval_table(check) if check.lmeval else ["- none"]), "",
        "lm-eval eval s: its `total_evaluation_time_seconds` (requests built, log-likelihoods computed, metrics); "
        "× lm-eval (eval): lm-eval's eval s over repaudit's", "",
        "## Top ops by time (torch.profiler)", "", *(_profile_lines(check) or ["- none"]), "",
        "## Not run", "", *([f"- {s}" for s in check.skipped] or ["- nothing"]), ""])
    (check.out / "gpu_check.md").write_text(text)
    return text
