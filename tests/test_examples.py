"""``examples/``: the committed appendix compiles, and every report it inputs is there."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_examples_hold_the_appendix_the_command_wrote():
    tex = (EXAMPLES / "appendix.tex").read_text()
    assert tex.startswith(r"\documentclass") and "% repaudit appendix: cloze 0-shot, lettered 5-shot" in tex
    assert not re.findall(r"\\input\{", tex)  # self-contained: nothing assembled by hand
    for name in ("appendix.pdf", "appendix.md", "compare.md", "attribution.md", "sweep.md", "waterfall.png",
                 "sweep.png"):
        assert (EXAMPLES / name).is_file(), f"examples/{name} is missing: run examples/regenerate.py"
    assert (EXAMPLES / "appendix.pdf").read_bytes().startswith(b"%PDF")
    md = (EXAMPLES / "appendix.md").read_text()
    parts = ["### Evaluation setup", "### Scores", "### What the error bars are", "### Comparison 1"]
    parts += [f"### {kind} 1" for kind, f in (("Attribution", "attribution.json"), ("Sweep", "sweep.json"))
              if (EXAMPLES / f).is_file()]  # the reports the whole regeneration writes
    for part in parts:
        assert part in md and part.removeprefix("### ").split(" 1")[0] in tex, part


def test_appendix_compiles_with_pdflatex_without_a_warning(tmp_path):
    for need in ("pdflatex", "kpsewhich"):
        if shutil.which(need) is None:
            pytest.skip(f"{need} is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    if not subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True, text=True).stdout.strip():
        pytest.skip("siunitx is not installed (apt-get install texlive-science)")
    shutil.copy(EXAMPLES / "appendix.tex", tmp_path / "appendix.tex")
    for _ in range(3):  # references and longtable's column widths settle over the passes
        res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "appendix.tex"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout[-2000:]
    assert (tmp_path / "appendix.pdf").read_bytes().startswith(b"%PDF")
    log = (tmp_path / "appendix.log").read_text(errors="replace")
    assert re.findall(r"Warning|Overfull|Underfull|Missing character", log) == [], log[-2000:]


def test_the_examples_setup_table_holds_the_run_files_values():
    """Every value of the appendix's setup table is the run files' own (the runs are regenerated, not committed)."""
    runs = [EXAMPLES / "runs" / "a.json", EXAMPLES / "runs" / "b.json"]
    if not all(p.is_file() for p in runs):
        pytest.skip("examples/runs/ holds no run files (they carry the benchmark's text; examples/regenerate.py "
                    "writes them)")
    import json

    from repaudit.importers.detect import load_run
    from repaudit.report.setup import setup_rows

    rows = {r.setting: [c.text for c in r.cells] for r in setup_rows([load_run(p) for p in runs])}
    md = (EXAMPLES / "appendix.md").read_text()
    for j, path in enumerate(runs):
        fp = json.loads(path.read_text())["fingerprint"]
        st = fp["settings"]
        want = {"model": fp["model"]["name"], "weights sha256": fp["model"]["weights_sha256"][:12] + "…",
                "task": fp["data"]["task"], "docs evaluated": str(fp["data"]["n_docs"]),
                "n-shot": str(st["fewshot"]["num_fewshot"]), "dtype": st["serving"]["dtype"],
                "batch size": str(st["serving"]["batch_size"]), "backend": st["serving"]["backend"],
                "prompt format": st["prompt"]["prompt_format"], "CPU": fp["hardware"]["cpu_model"]}
        for setting, value in want.items():
            assert rows[setting][j] == value, (setting, rows[setting][j], value)
    for setting, cells in rows.items():  # and the committed appendix shows exactly these cells (a note's marker after)
        text = re.escape(cells[0]).replace("_", r"\\?_")
        shown = text + r"( \[\d+\])?" + (r" \(all runs\)" if len(set(cells)) == 1 else "")
        assert re.search(shown, md), setting


def test_examples_html_report_is_safe_and_holds_no_benchmark_text():
    """report.html was written with --no-doc-text: one pinned script, a base64 data block, no question text."""
    import sys

    sys.path.insert(0, str(EXAMPLES.parent / "bench"))
    from fuzzgen import html_static_problem

    from repaudit.report.html import unpack

    page = (EXAMPLES / "report.html").read_text(encoding="utf-8")
    assert html_static_problem(page) == ""
    assert (EXAMPLES / "report.png").read_bytes().startswith(b"\x89PNG")
    data = unpack(re.search(r'id="docdata">([A-Za-z0-9+/=]+)</script>', page).group(1))
    assert len(data["docs"]) == 570 and not data["strings"]
    assert not any(k in d for d in data["docs"] for k in ("pa", "pb", "ch", "ga", "gb"))
