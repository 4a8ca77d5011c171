"""Seeded fuzzing of ``repaudit compare`` on mutations of real files (the long run is ``bench/fuzz.py``).

Every case must exit 0 with a sane report, or exit 1 with exactly one ``error:`` line and no output
file; never a traceback; injected strings are shown literally.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
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

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lmeval"
LIGHTEVAL = Path(__file__).resolve().parent / "fixtures" / "lighteval" / "arc_easy_0shot"
INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect" / "arc_easy_a.eval"
CASES_PER_CATEGORY = 20


@pytest.fixture(scope="module")
def bases(tiny_model, shared_data, lmeval_runs, tmp_path_factory):
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    work = tmp_path_factory.mktemp("fuzz-bases")
    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=8, batch_size=4,
                        cache_dir=work / "cache"))
    write_record(rec, work / "run.json")
    s1 = next((lmeval_runs / "s1").rglob("results_*.json"))
    # 60 samples of s1 with the results' means recomputed on them, so the pair stays consistent
    import json

    lines = next(s1.parent.glob("samples_*.jsonl")).read_text().splitlines()[:60]
    res = json.loads(s1.read_text())
    for m in ("acc", "acc_norm"):
        res["results"]["arc_easy"][f"{m},none"] = sum(json.loads(x)[m] for x in lines) / len(lines)
    d = work / "s1"
    d.mkdir()
    (d / s1.name).write_text(json.dumps(res))
    samples = d / next(s1.parent.glob("samples_*.jsonl")).name
    samples.write_text("\n".join(lines) + "\n")
    return [("repaudit", work / "run.json", None), ("lmeval", d / s1.name, samples),
            ("lmeval", FIXTURES / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json", None),
            ("lmeval", FIXTURES / "lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486.json",
             None),
            ("lighteval", next(LIGHTEVAL.rglob("results_*.json")), None)]


def test_compare_survives_mutated_inputs(bases, tmp_path):
    gen = Generator(bases, tmp_path / "cases", seed=1234)
    failures = []
    n = CASES_PER_CATEGORY * len(CATEGORIES)
    statuses: dict[str, int] = {}
    pages = []
    for i in range(n):
        category = CATEGORIES[i % len(CATEGORIES)]
        fmt = FORMATS[(i // len(CATEGORIES)) % len(FORMATS)]
        case = gen.case(i, category)
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(case, fmt, out_dir)
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
        elif fmt == "html" and outcome.status == "ok":
            pages.append((i, category, out_dir / "report.html"))
    driver, why = headless_chromium()
    if driver is not None:  # the same pages in a real browser: nothing runs, every page finishes
        try:
            for i, category, page in pages:
                outcome = check_in_browser(driver, page)
                if outcome.status != "ok":
                    failures.append((i, category, "html", outcome.status, outcome.detail[:400]))
        finally:
            driver.quit()
    assert not failures, failures[:5]
    assert pages  # HTML reports were written and judged
    assert statuses.get("ok", 0) > 20 and statuses.get("refused", 0) > 20, statuses  # both paths exercised


def test_compare_survives_mutated_eval_logs(tmp_path):
    """inspect_ai .eval logs: truncated ZIPs, flipped bytes, bombs (declared and lying sizes), path-traversal
    entry names, other compression methods, wrong types inside members, injections: no traceback, no
    partial output, every refusal one line."""
    gen = EvalGenerator(INSPECT, tmp_path / "cases", seed=7)
    failures, statuses = [], {}
    for i in range(3 * len(EVAL_CATEGORIES) * 2):
        category = EVAL_CATEGORIES[i % len(EVAL_CATEGORIES)]
        fmt = FORMATS[(i // len(EVAL_CATEGORIES)) % len(FORMATS)]
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(gen.case(i, category), fmt, out_dir)
        statuses[(category, outcome.status)] = statuses.get((category, outcome.status), 0) + 1
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
    assert not failures, failures[:5]
    # the archive-level attacks are refused every time; an injected task name is reported literally
    for category in ("zip_truncate", "zip_declared_bomb", "zip_lying_size", "zip_traversal", "zip_method",
                     "zip_duplicate_sample"):
        assert statuses.get((category, "refused"), 0) == 6, (category, statuses)
    assert statuses.get(("zip_injection", "ok"), 0) == 6, statuses


def test_compare_survives_mutated_helm_folders_and_legacy_eee_records(tmp_path):
    """The formats people publish: HELM run folders with one file mutated or removed, Every Eval Ever 0.1/0.2
    records mutated like any run file — one error line or a sane report in every format, never a traceback or a
    partial output file; an injected task name is shown literally."""
    helm = HelmGenerator(tmp_path / "helm", seed=11)
    eee = Generator(eee_bases(), tmp_path / "eee", seed=13)
    failures, statuses = [], {}
    cases = [(helm, HELM_CATEGORIES[i % len(HELM_CATEGORIES)]) for i in range(4 * len(HELM_CATEGORIES))]
    cases += [(eee, CATEGORIES[i % len(CATEGORIES)]) for i in range(4 * len(CATEGORIES))]
    for i, (gen, category) in enumerate(cases):
        fmt = FORMATS[(i // 13) % len(FORMATS)]
        out_dir = tmp_path / "out" / str(i)
        out_dir.mkdir(parents=True)
        outcome = run_case(gen.case(i, category), fmt, out_dir)
        key = ("helm" if gen is helm else "eee", outcome.status)
        statuses[key] = statuses.get(key, 0) + 1
        if outcome.status not in ("ok", "refused"):
            failures.append((i, category, fmt, outcome.status, outcome.detail[:400]))
    assert not failures, failures[:5]
    for kind in ("helm", "eee"):  # both paths exercised for both formats
        assert statuses.get((kind, "ok"), 0) >= 8 and statuses.get((kind, "refused"), 0) >= 8, statuses
