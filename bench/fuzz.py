"""Fuzz ``repaudit compare`` with ≥ 2,000 seeded mutations of real files and print a table of outcomes.

    .venv/bin/python bench/fuzz.py [--cases 2400] [--eval-cases 500] [--format-cases 500] [--seed 0]
                                   [--run-file run.json]

Inputs: a repaudit run file of the default model (made here, 20 ARC-Easy docs, unless ``--run-file``
is given), lm-eval 0.4.13's own run ``../shared/lmeval_runs/s1`` (results + 570 samples), and public
lm-eval files of versions 0.3 to 0.4.8 from ``../shared/lmeval_public`` (with samples where they exist).
Every case mutates one side (see ``bench/fuzzgen.py`` for the categories) and runs ``compare`` in one
of the five report formats. A case passes when it exits 0 with a sane report, or exits 1 with exactly
one ``error:`` line and no output file; injected strings must be shown literally. Every HTML report that
was written is then opened in headless Chromium (Selenium; skipped with the reason where absent): it must
finish loading, open no alert, keep its title, hold no ``img``/``iframe`` and log no console error
(``script_ran`` / ``broken_page`` otherwise). Failures are listed with their first lines.

``--format-cases`` more cases mutate the formats people publish (``bench/fuzzformats.py``): HELM run folders of
``tests/realworld`` (one file mutated, or removed) and Every Eval Ever 0.1.x/0.2.x records, half each.

``--eval-cases`` more cases mutate a real inspect_ai ``.eval`` log (``tests/fixtures/inspect/arc_easy_a.eval``):
truncated ZIPs, flipped bytes, wrong types and injections inside members, bombs (a declared size over the
limit; a member larger than its declared size), path-traversal entry names, other compression methods, no
header, a sample written twice (``EVAL_CATEGORIES`` in ``bench/fuzzgen.py``).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzzformats import HELM_CATEGORIES, HelmGenerator, eee_bases  # noqa: E402
from fuzzgen import (  # noqa: E402
    CATEGORIES,
    EVAL_CATEGORIES,
    FORMATS,
    EvalGenerator,
    Generator,
    check_in_browser,
    headless_chromium,
    run_case,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def bases(run_file: Path) -> list[tuple[str, Path, Path | None]]:
    """The real files cases are derived from."""
    s1 = next((SHARED / "lmeval_runs" / "s1").rglob("results_*.json"))
    pub = SHARED / "lmeval_public"
    out = [("repaudit", run_file, None), ("lmeval", s1, next(s1.parent.glob("samples_*.jsonl")))]
    for stem, samples in [("lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230",
                           "lm-evaluation-harness__asdiv__samples_asdiv_2024-08-21T03-44-09.494230.jsonl"),
                          ("lm-evaluation-harness__tgpred__results_2025-06-30T19-40-09.461247",
                           "lm-evaluation-harness__samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl"),
                          ("pythia__160m-5shot_step143000", None),
                          ("lm-evaluation-harness__llama-7B_gsm8k_8-shot", None),
                          ("lm_eval_results__results_2025-01-25T04-48-43.622918", None),
                          ("lm-evaluation-harness__negotiationtom__results_2026-07-08T16-04-34.219874", None)]:
        out.append(("lmeval", pub / f"{stem}.json", pub / samples if samples else None))
    return out


def _paired_copies(workdir: Path, base: list[tuple[str, Path, Path | None]]) -> list[tuple[str, Path, Path | None]]:
    """lm-eval finds samples by the results file's timestamp: copy each pair under matching names."""
    out = []
    for i, (kind, p, sp) in enumerate(base):
        if sp is None:
            out.append((kind, p, sp))
            continue
        d = workdir / f"base{i}"
        d.mkdir(parents=True, exist_ok=True)
        ts = "2026-01-01T00-00-00.000000"
        task = sp.name.split("samples_", 1)[1].rsplit("_", 1)[0]
        rp, spp = d / f"results_{ts}.json", d / f"samples_{task}_{ts}.jsonl"
        rp.write_bytes(p.read_bytes())
        spp.write_bytes(sp.read_bytes())
        out.append((kind, rp, spp))
    return out


def browse(pages: list[tuple[int, str, Path]], table, failures) -> str:
    """Open every HTML report written in headless Chromium and count its outcome; returns a note."""
    driver, why = headless_chromium()
    if driver is None:
        for _, category, _ in pages:
            table[category]["ok"] += 1
        return f"{len(pages)} HTML reports checked as text only: {why}"
    try:
        for i, category, path in pages:
            outcome = check_in_browser(driver, path)
            table[category][outcome.status] += 1
            if outcome.status != "ok":
                failures.append((i, category, "html", outcome))
    finally:
        driver.quit()
    return f"{len(pages)} HTML reports opened in headless Chromium"


def formats(args, work: Path, table, failures, examples, pages) -> None:
    """The ``--format-cases``: HELM run folders and Every Eval Ever 0.1/0.2 records, alternating."""
    helm = HelmGenerator(work / "helm-cases", seed=args.seed)
    eee = Generator(eee_bases(), work / "eee-cases", seed=args.seed)
    for i in range(args.format_cases):
        gen, cats = (helm, HELM_CATEGORIES) if i % 2 == 0 else (eee, CATEGORIES)
        category = cats[(i // 2) % len(cats)]
        label = f"{'helm' if gen is helm else 'eee01/02'}:{category}"
        fmt = FORMATS[(i // 26) % len(FORMATS)]
        out_dir = work / "format-out" / f"{i}"
        out_dir.mkdir(parents=True)
        outcome = run_case(gen.case(i, category), fmt, out_dir)
        n = args.cases + args.eval_cases + i
        if fmt == "html" and outcome.status == "ok":
            pages.append((n, label, out_dir / "report.html"))
        else:
            table[label][outcome.status] += 1
        if outcome.status == "refused" and label not in examples:
            examples[label] = outcome.detail.split(str(work))[-1][:160]
        if outcome.status not in ("ok", "refused"):
            failures.append((n, label, fmt, outcome))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2400)
    ap.add_argument("--eval-cases", type=int, default=500, help="cases that mutate an inspect_ai .eval log")
    ap.add_argument("--format-cases", type=int, default=500, help="cases that mutate HELM run folders and Every "
                                                                    "Eval Ever 0.1/0.2 records")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-file", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run_file = args.run_file
        if run_file is None:
            run_file = work / "run.json"
            subprocess.run([sys.executable, "-m", "repaudit", "run", "--task", "arc_easy", "--limit", "20",
                            "-o", str(run_file)], check=True, capture_output=True)
        gen = Generator(_paired_copies(work, bases(run_file)), work / "cases", seed=args.seed)
        table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        failures = []
        examples: dict[str, str] = {}
        pages: list[tuple[int, str, Path]] = []
        t0 = time.perf_counter()
        for i in range(args.cases):
            category = CATEGORIES[i % len(CATEGORIES)]
            fmt = FORMATS[(i // len(CATEGORIES)) % len(FORMATS)]
            case = gen.case(i, category)
            out_dir = work / "out" / f"{i}"
            out_dir.mkdir(parents=True)
            outcome = run_case(case, fmt, out_dir)
            if fmt == "html" and outcome.status == "ok":
                pages.append((i, category, out_dir / "report.html"))  # judged in the browser below
            else:
                table[category][outcome.status] += 1
            if outcome.status == "refused" and category not in examples:
                examples[category] = outcome.detail.split(str(work))[-1][:160]
            if outcome.status not in ("ok", "refused"):
                failures.append((i, category, fmt, outcome))
            if (i + 1) % 200 == 0:
                print(f"{i + 1}/{args.cases} cases, {len(failures)} failures, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
        gen_eval = EvalGenerator(ROOT / "tests" / "fixtures" / "inspect" / "arc_easy_a.eval", work / "eval-cases",
                                 seed=args.seed)
        for i in range(args.eval_cases):
            category = EVAL_CATEGORIES[i % len(EVAL_CATEGORIES)]
            fmt = FORMATS[(i // len(EVAL_CATEGORIES)) % len(FORMATS)]
            out_dir = work / "eval-out" / f"{i}"
            out_dir.mkdir(parents=True)
            outcome = run_case(gen_eval.case(i, category), fmt, out_dir)
            if fmt == "html" and outcome.status == "ok":
                pages.append((args.cases + i, category, out_dir / "report.html"))
            else:
                table[category][outcome.status] += 1
            if outcome.status == "refused" and category not in examples:
                examples[category] = outcome.detail.split(str(work))[-1][:160]
            if outcome.status not in ("ok", "refused"):
                failures.append((args.cases + i, category, fmt, outcome))
        formats(args, work, table, failures, examples, pages)
        t_cases = time.perf_counter() - t0
        browser_note = browse(pages, table, failures)
    statuses = ["ok", "refused", "traceback", "partial_output", "bad_error", "bad_output", "not_literal",
                "script_ran", "broken_page"]
    print(f"| category | cases | {' | '.join(statuses)} |")
    print("|---|---:|" + "---:|" * len(statuses))
    total: collections.Counter = collections.Counter()
    for cat in CATEGORIES + EVAL_CATEGORIES + [f"helm:{c}" for c in HELM_CATEGORIES] + [f"eee01/02:{c}" for c in
                                                                                         CATEGORIES]:
        c = table[cat]
        total.update(c)
        print(f"| {cat} | {sum(c.values())} | " + " | ".join(str(c[s]) for s in statuses) + " |")
    print(f"| **all** | {sum(total.values())} | " + " | ".join(str(total[s]) for s in statuses) + " |")
    print(f"\n{args.cases} + {args.eval_cases} + {args.format_cases} cases in {time.perf_counter() - t0:.0f} s "
          f"({t_cases:.0f} s compare, "
          "the rest in the "
          f"browser), seed {args.seed}; {len(failures)} failures; {browser_note}")
    print("\nOne refusal per category (paths shortened):")
    for cat, line in examples.items():
        print(f"- {cat}: {line!r}")
    for i, cat, fmt, o in failures[:30]:
        print(f"- case {i} ({cat}, {fmt}): {o.status}: {o.detail[:300]!r}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
