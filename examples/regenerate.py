"""Regenerate everything in ``examples/`` from a fresh install: real runs, reports, figures, the appendix PDF.

    make install                      # .venv with repaudit, the default model and the packaged data
    .venv/bin/python examples/regenerate.py

What it does (default model SmolLM2-135M-Instruct, ARC-Easy validation from the packaged data, all
570 docs, float32, shared-prefix scoring to keep it to ~25 min on 2 CPU cores):

1. two runs that differ in factors that matter — A: lm-eval's cloze-style prompt, 0-shot;
   B: lettered (MCF) prompt, 5-shot — written to ``examples/runs/`` (not committed: they hold the
   benchmark's text);
2. ``repaudit compare A B`` in Markdown and LaTeX;
3. ``repaudit attribute A B`` (4 configurations) in Markdown and LaTeX, with its waterfall (PNG + PDF);
4. ``repaudit sweep`` of the prompt format from A's configuration, in Markdown and LaTeX, with its plot;
5. ``repaudit appendix`` of the two runs with the comparison, the attribution and the sweep (their ``--json``
   reports, ``attribution.json`` and ``sweep.json``): ``appendix.tex`` (a whole article, ``--document``) compiled
   with ``pdflatex`` into ``appendix.pdf`` (skipped with a note when pdflatex or siunitx is missing), and
   ``appendix.md``;
6. ``report.html``, compare's self-contained HTML report, written with ``--no-doc-text`` (the
   benchmark's questions stay out of the repository; ids, flips, margins and log-likelihoods stay), and
   ``report.png``, a screenshot of it in headless Chromium (skipped with a note when chromium is missing);
7. ``README.md`` of this folder: the commands and every Markdown report, as generated.

Every step goes through one batch store, a fresh temporary directory (``$REPAUDIT_CACHE_DIR``), so the
wall times it writes are those of an empty store, and the attribution and sweep reuse the runs' batches.

    .venv/bin/python examples/regenerate.py --appendix

rebuilds only step 5 from the run files in ``examples/runs/`` and the reports beside this script (no model runs).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
COMMON = ["--task", "arc_easy", "--scoring-strategy", "shared_prefix"]
RUN_A = [*COMMON]
RUN_B = [*COMMON, "--prompt-format", "lettered", "--num-fewshot", "5"]
#: what the reports call the runs (the file names a.json and b.json say nothing); the LaTeX labels derive from them
NAMES = ["--name-a", "cloze 0-shot", "--name-b", "lettered 5-shot"]
#: the appendix: both runs under the same names, their comparison, and the attribution and sweep reports
APPENDIX = ["runs/a.json", "runs/b.json", "--names", "cloze 0-shot,lettered 5-shot", "--compare", "1,2",
            "--title", "Appendix A: how much does the prompt protocol move ARC-Easy?"]
REPORTS = [("--attribution", "attribution.json"), ("--sweep", "sweep.json")]
#: the children's environment; main() points its cache at an empty temporary store
ENV = dict(os.environ)
SWEEP = ["--factor", "prompt_format", "--values", "lettered,cloze", *COMMON[:2],
         "--scoring-strategy", "shared_prefix"]


def repaudit(*args: str) -> float:
    """Run ``repaudit ARGS`` in this folder; returns its wall time. Stops the script on failure."""
    t0 = time.perf_counter()
    print("$ repaudit " + " ".join(args), flush=True)
    subprocess.run([sys.executable, "-m", "repaudit", *args], cwd=HERE, check=True, env=ENV)
    return time.perf_counter() - t0


def pdflatex() -> str:
    """Compile appendix.tex (three times: references and longtable widths settle) or say why not."""
    exe = shutil.which("pdflatex")
    if exe is None:
        return "pdflatex not found: appendix.pdf not rebuilt (apt-get install texlive-latex-recommended)"
    if not subprocess.run(["kpsewhich", "siunitx.sty"], capture_output=True, text=True).stdout.strip():
        return "siunitx not found: appendix.pdf not rebuilt (apt-get install texlive-science)"
    for _ in range(3):
        res = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "appendix.tex"], cwd=HERE,
                             capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit("pdflatex failed:\n" + res.stdout[-3000:])
    for suffix in (".aux", ".log", ".out"):
        (HERE / f"appendix{suffix}").unlink(missing_ok=True)
    return "appendix.pdf compiled with pdflatex"


def main() -> None:
    if sys.argv[1:] == ["--appendix"]:
        print(appendix())
        return
    RUNS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="repaudit-examples-") as store:
        ENV["REPAUDIT_CACHE_DIR"] = store
        generate()


def appendix() -> str:
    """Step 5 alone: ``repaudit appendix`` of the runs in ``runs/`` with the reports beside this script (those that
    are there), as LaTeX (compiled) and Markdown; no model runs. Stops the script when a run file is missing."""
    missing = [p for p in ("runs/a.json", "runs/b.json") if not (HERE / p).exists()]
    if missing:
        sys.exit(f"missing {', '.join(missing)}: run the whole script once (python examples/regenerate.py)")
    args = [*APPENDIX, *(x for opt, f in REPORTS if (HERE / f).exists() for x in (opt, f))]
    repaudit("appendix", *args, "--document", "-o", "appendix.tex")
    repaudit("appendix", *args, "-o", "appendix.md")
    return pdflatex()


def generate() -> None:
    walls = {}
    walls["run A"] = repaudit("run", *RUN_A, "-o", "runs/a.json")
    walls["run B"] = repaudit("run", *RUN_B, "-o", "runs/b.json")
    repaudit("compare", "runs/a.json", "runs/b.json", *NAMES, "--format", "markdown", "-o", "compare.md")
    repaudit("compare", "runs/a.json", "runs/b.json", *NAMES, "--format", "latex", "-o", "compare.tex")
    walls["attribute"] = repaudit("attribute", "runs/a.json", "runs/b.json", "-o", "attribution.md",
                                  "--plot", "waterfall")
    repaudit("attribute", "runs/a.json", "runs/b.json", "-o", "attribution.tex")
    repaudit("attribute", "runs/a.json", "runs/b.json", "-o", "attribution.json")
    walls["sweep"] = repaudit("sweep", *SWEEP, "-o", "sweep.md", "--plot", "sweep")
    repaudit("sweep", *SWEEP, "-o", "sweep.tex")
    repaudit("sweep", *SWEEP, "-o", "sweep.json")
    repaudit("compare", "runs/a.json", "runs/b.json", *NAMES, "--no-doc-text", "-o", "report.html")
    latex_note = appendix()
    shot_note = screenshot()
    write_readme(walls, latex_note, shot_note)
    print(latex_note)
    print(shot_note)


def screenshot() -> str:
    """Screenshot report.html in headless Chromium (the page runs its script first) or say why not."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        return "chromium not found: report.png not rebuilt (apt-get install chromium)"
    with tempfile.TemporaryDirectory(prefix="repaudit-chromium-") as profile:
        res = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--window-size=1280,1400", "--virtual-time-budget=5000",
             "--screenshot=" + str(HERE / "report.png"), (HERE / "report.html").as_uri()],
            capture_output=True, text=True, timeout=120)
    if res.returncode != 0 or not (HERE / "report.png").exists():
        sys.exit("chromium failed:\n" + res.stderr[-3000:])
    return "report.png taken with headless Chromium"


def write_readme(walls: dict[str, float], latex_note: str, shot_note: str) -> None:
    cmd = "repaudit "
    names = " ".join(shlex.quote(x) for x in NAMES)
    parts = [
        "# Example: an appendix from real runs",
        "",
        "Generated by `examples/regenerate.py` (do not edit by hand). The default model",
        "(SmolLM2-135M-Instruct) on ARC-Easy validation (all 570 docs, packaged data), float32, on a",
        "2-core CPU. Run A uses lm-eval's prompt (`Question: …\\nAnswer:` scored on each answer text),",
        "0-shot; run B the lettered multiple-choice format (MCF) with 5 random few-shot examples.",
        "",
        "```bash",
        cmd + "run " + " ".join(RUN_A) + " -o runs/a.json",
        cmd + "run " + " ".join(RUN_B) + " -o runs/b.json",
        cmd + f"compare runs/a.json runs/b.json {names} --format markdown -o compare.md",
        cmd + "attribute runs/a.json runs/b.json -o attribution.md --plot waterfall",
        cmd + "sweep " + " ".join(SWEEP) + " -o sweep.md --plot sweep",
        cmd + f"compare runs/a.json runs/b.json {names} --no-doc-text -o report.html",
        "```",
        "",
        "Wall times of this generation, from an empty cache (run A includes converting the packaged GGUF "
        "model; the attribution and the sweep reuse the runs' batches from the store); they vary with what else "
        "the machine runs: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items()) + ".",
        "",
        "The same tables in LaTeX: `compare.tex`, `attribution.tex`, `sweep.tex`. The appendix is written by "
        "`repaudit appendix` from the two run files and the attribution and sweep reports (`attribution.json`, "
        "`sweep.json`): the evaluation setup, the scores with their intervals, what the error bars are, and the "
        f"comparison, attribution and sweep tables — [`appendix.tex`](appendix.tex), compiled into "
        f"[`appendix.pdf`](appendix.pdf) ({latex_note}), and [`appendix.md`](appendix.md):",
        "",
        "```bash",
        cmd + "appendix " + " ".join(shlex.quote(x) for x in [*APPENDIX, *(y for r in REPORTS for y in r)])
        + " --document -o appendix.tex",
        "```",
        "",
        "[`report.html`](report.html) is compare's HTML report of the same pair (open it in a browser; "
        "it loads nothing from the network). Written with `--no-doc-text`, so its doc browser lists ids, "
        f"flips, margins and log-likelihoods without the questions ({shot_note}):",
        "",
        "![compare's HTML report](report.png)",
        "",
        "## compare", "", (HERE / "compare.md").read_text(),
        "## attribute", "", (HERE / "attribution.md").read_text(), "![waterfall](waterfall.png)", "",
        "## sweep", "", (HERE / "sweep.md").read_text(), "![sweep](sweep.png)", "",
    ]
    (HERE / "README.md").write_text("\n".join(parts))


if __name__ == "__main__":
    main()
