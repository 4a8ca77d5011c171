"""Size and speed of the HTML report at MMLU scale (14,042 docs), opened in headless Chromium.

    .venv/bin/python bench/html_report.py [--data-dir ../shared/data] [--docs 14042]

The prompts are real: MMLU's test split rendered 5-shot by repaudit's own renderer, lm-eval's format for A
and, in the second case, the lettered format for B (every prompt differs: the largest file). Per-doc outcomes
are simulated (seeded): A's four choice log-likelihoods drawn per doc, B's = A's + N(0, 0.3²) nats, so that
a few percent of docs flip, as a dtype or batch change does; no model runs. For each case the table gives
the time to compare and write the page, the file size (and the JSON it decompresses to), and in Chromium
(Debian's ``chromium`` + ``chromedriver``, Selenium): the time from navigation to a usable browser (data
decompressed, parsed, first page drawn), and the time of a filter (flips only), a full-text search and
opening a doc, measured inside the page with ``performance.now()``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console

from repaudit.audit.compare import compare
from repaudit.hashing import sha256_json, sha256_text
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome
from repaudit.report.docview import browser_data
from repaudit.report.html import render_compare_html
from repaudit.run.config import RunConfig
from repaudit.run.docs import load_docs
from repaudit.run.runner import check_config, render_requests

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def rendered(fmt: str, data_dir: Path, limit: int | None):
    cfg = RunConfig(task="mmlu", num_fewshot=5, data_dir=data_dir, prompt_format=fmt, limit=limit)
    task = check_config(cfg)
    docset = load_docs(task, cfg, Console(stderr=True, quiet=True))
    return render_requests(task, cfg, docset, None, None)


def run(name: str, docs, lls: np.ndarray) -> ComparableRun:
    out = {}
    for rd, ll in zip(docs, lls):
        values = [float(x) for x in ll]
        pred = int(np.argmax(ll))
        out[rd.doc.doc_id] = DocOutcome(
            doc_id=rd.doc.doc_id, doc_hash=sha256_json(rd.doc.row), prompt_hash=sha256_text(rd.requests[0].context),
            target=str(rd.gold), cluster=rd.doc.cluster, metrics={"acc": float(pred == rd.gold)}, prediction=pred,
            loglikelihoods=values, choices_hash=sha256_json(rd.choices), prompt=rd.requests[0].context,
            choices=list(rd.choices))
    mean = float(np.mean([d.metrics["acc"] for d in out.values()]))
    task = TaskOutcome(task="mmlu", reported={"acc": (mean, None)}, docs=out, n_docs=len(out))
    return ComparableRun(path=f"{name}.json", source="simulated outcomes on real MMLU prompts",
                         factors={"mmlu": {}}, tasks={"mmlu": task})


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)


TIMED = """
const t0 = performance.now();
%s
return performance.now() - t0;
"""


def in_browser(d, path: Path) -> dict[str, float]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    t = time.perf_counter()
    d.get(path.as_uri())
    WebDriverWait(d, 120).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") != "0")
    wall = time.perf_counter() - t
    ready = float(d.find_element(By.TAG_NAME, "body").get_attribute("data-ready-ms") or "nan")
    flt = d.execute_script(TIMED % "const s = document.getElementById('f-view'); s.value = 'flips';"
                                   "s.dispatchEvent(new Event('change'));")
    flips = int(d.find_element(By.ID, "doc-count").text)
    search = d.execute_script(TIMED % "document.getElementById('f-search').value = 'which of the following';"
                                      "document.getElementById('f-view').dispatchEvent(new Event('change'));")
    found = int(d.find_element(By.ID, "doc-count").text)
    opened = d.execute_script(TIMED % "document.querySelector('#doc-rows tr.doc').click();")
    return {"wall": wall, "ready": ready / 1000, "filter": flt / 1000, "flips": flips, "search": search / 1000,
            "found": found, "open": opened / 1000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=SHARED)
    ap.add_argument("--docs", type=int, default=None, help="first N docs (default: all 14,042)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    a_docs = rendered("lmeval", args.data_dir, args.docs)
    rng = np.random.default_rng(args.seed)
    lla = rng.normal(-8.0, 1.5, size=(len(a_docs), 4))
    llb = lla + rng.normal(0, 0.3, size=lla.shape)
    cases = [("same prompts (dtype-like change)", a_docs), ("every prompt differs (lmeval vs lettered)",
                                                           rendered("lettered", args.data_dir, args.docs))]
    rows = []
    d = browser()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, b_docs in cases:
                t = time.perf_counter()
                ra, rb = run("A", a_docs, lla), run("B", b_docs, llb)
                c = compare(ra, rb, n_boot=2000)
                data = browser_data(c, ra, rb)
                page = render_compare_html(c, data)
                build = time.perf_counter() - t
                path = Path(tmp) / "report.html"
                path.write_text(page, encoding="utf-8")
                import json

                raw = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
                m = in_browser(d, path)
                rows.append((label, len(data["docs"]), build, path.stat().st_size / 2**20, raw / 2**20, m))
    finally:
        d.quit()
    print(f"MMLU test, 5-shot prompts rendered by repaudit; simulated outcomes (seed {args.seed}); Chromium headless")
    print()
    print("| case | docs | compare + write (s) | file (MiB) | JSON inside (MiB) | open to usable (s) | in page (s) "
          "| filter: flips (s) | flips | search (s) | hits | open a doc (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, n, build, size, raw, m in rows:
        print(f"| {label} | {n:,} | {build:.1f} | {size:.2f} | {raw:.1f} | {m['wall']:.2f} | {m['ready']:.2f} | "
              f"{m['filter']:.3f} | {m['flips']:,} | {m['search']:.3f} | {m['found']:,} | {m['open']:.3f} |")


if __name__ == "__main__":
    main()
