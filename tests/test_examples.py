"""``examples/``: the committed appendix compiles, and every report it inputs is there."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_examples_hold_every_report_the_appendix_inputs():
    tex = (EXAMPLES / "appendix.tex").read_text()
    inputs = re.findall(r"\\input\{([^}]+)\}", tex) + re.findall(r"\\includegraphics(?:\[[^]]*\])?\{([^}]+)\}", tex)
    assert {"compare.tex", "attribution.tex", "sweep.tex", "waterfall.pdf", "sweep.pdf"} <= set(inputs)
    for name in inputs + ["appendix.pdf", "compare.md", "attribution.md", "sweep.md", "waterfall.png", "sweep.png"]:
        assert (EXAMPLES / name).is_file(), f"examples/{name} is missing: run examples/regenerate.py"
    assert (EXAMPLES / "appendix.pdf").read_bytes().startswith(b"%PDF")


def test_appendix_compiles_with_pdflatex(tmp_path):
    exe = shutil.which("pdflatex")
    if exe is None:
        pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    for p in EXAMPLES.iterdir():
        if p.suffix in (".tex", ".pdf", ".png"):
            shutil.copy(p, tmp_path / p.name)
    (tmp_path / "appendix.pdf").unlink()
    for _ in range(2):  # the second pass resolves the table references (\ref) and longtable widths
        res = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "appendix.tex"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout[-2000:]
    assert (tmp_path / "appendix.pdf").read_bytes().startswith(b"%PDF")
    log = (tmp_path / "appendix.log").read_text(errors="replace")
    assert "Missing character" not in log and "undefined" not in log.lower(), log[-2000:]


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
