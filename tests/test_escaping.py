"""Strings from files are shown literally in every output language; non-finite numbers get no verdict."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import pytest
from markdown_it import MarkdownIt
from rich.console import Console
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.cli import app
from repaudit.escape import latex, md, rich_text, visible_controls
from repaudit.report.compare import render_latex, render_markdown, render_rich

HOSTILE = "t\\{}$&%#_^~[]|\x00\x07name"
MARKUP = ["[/]", "[bold red]x[/]", "[red]unclosed", "[link=https://example.com]click[/link]"]


def _results(task: str, model: str, metric: str, acc: float, se: float = 0.02, batch: str = "8") -> dict:
    return {"results": {task: {f"{metric},none": acc, f"{metric}_stderr,none": se, "alias": task}},
            "versions": {task: 1.0}, "n-shot": {task: 0},
            "configs": {task: {"task": task, "output_type": "multiple_choice", "metric_list": [{"metric": metric}]}},
            "config": {"model": "hf", "model_args": f"pretrained={model}", "batch_size": batch, "limit": None}}


def _pair(tmp_path, task, model_a, model_b, metric="acc", acc_b=0.55, se=0.02):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_results(task, model_a, metric, 0.5, se)))
    b.write_text(json.dumps(_results(task, model_b, metric, acc_b, se, batch="16")))
    return compare(load_run(a), load_run(b), n_boot=100)


def _rich(c) -> str:
    console = Console(file=io.StringIO(), width=300, force_terminal=False)
    render_rich(c, console)
    return console.file.getvalue()


@pytest.mark.parametrize("text", MARKUP)
def test_rich_markup_in_names_is_shown_literally(tmp_path, text):
    c = _pair(tmp_path, text + "task", text + "model", "acc")
    out = _rich(c)
    assert text + "task" in out and text + "model" in out


@pytest.mark.parametrize("text", ["nul\x00byte", "esc\x1b[31mred", "cr\rhere", "new\nline"])
def test_terminal_report_shows_control_bytes_in_names_visibly(tmp_path, text):
    """The score table's task row and the agreement line print a name from the file with its control bytes made
    visible (a NUL in a task name reached the terminal raw; found by bench/fuzz.py, seed 0, case 1091)."""
    c = _pair(tmp_path, text + "task", "m", "m2", metric="acc" + text)
    out = _rich(c)
    assert not any(ch in out for ch in "\x00\x1b\r"), out
    assert visible_controls(text).replace("\n", "\\n") + "task" in out


@pytest.mark.parametrize("text", MARKUP + ["\x1b[31mred", "cr\rhere"])
def test_error_lines_show_file_text_literally(tmp_path, text):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_results(text, "m", "acc", 0.5)))
    b.write_text(json.dumps(_results("other", "m", "acc", 0.5)))
    res = CliRunner().invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 1 and res.exception is None or isinstance(res.exception, SystemExit)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and visible_controls(text) in errors[0], res.stderr
    assert "\x1b" not in res.stderr and "\r" not in res.stderr


def test_markdown_keeps_rows_whole_and_text_literal(tmp_path):
    task = "a|b\rc<script>`x`"
    c = _pair(tmp_path, task, "m|1", "m|2")
    text = render_markdown(c)
    assert "\r" not in text
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count("<table>") == 2  # factors and scores: no row was split into a new table or paragraph
    assert md(task) in text


def test_latex_brackets_pipes_and_control_bytes(tmp_path):
    c = _pair(tmp_path, "[opt]|t\x00", "m", "m2")
    tex = render_latex(c)
    assert "\x00" not in tex and tex.isascii()
    assert "\\\\\n[" not in tex and "\\midrule\n[" not in tex  # no row starts with a bare [
    assert latex("[opt]|t\x00") in tex and "{[}opt{]}\\textbar{}t" in tex


def test_non_finite_scores_get_no_verdict(tmp_path):
    c = _pair(tmp_path, "arc", "m", "m", acc_b=float("nan"))
    assert [r.verdict for r in c.scores] == ["no verdict"] and "not finite" in c.scores[0].note
    c = _pair(tmp_path, "arc", "m", "m", se=float("inf"))
    assert c.scores[0].verdict == "no verdict"
    text = render_markdown(c)
    assert "1 without a verdict" in text and "| — [1] |" in text and "noise |" not in text


def test_pdflatex_compiles_a_report_with_hostile_names(tmp_path):
    exe = shutil.which("pdflatex")
    if exe is None:
        pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    c = _pair(tmp_path, HOSTILE + "\u0394é→", "mod" + HOSTILE, "other" + HOSTILE,
              metric="acc" + HOSTILE.replace(",", ""))
    from repaudit.audit.attribution import AttributionReport
    from repaudit.report.audit import attribution_latex

    att = AttributionReport(task=HOSTILE, metric="m" + HOSTILE, factors=["dtype"], not_replayable=[], phi=[0.01],
                            phi_ci=[[0.0, 0.02]], interactions=[], recorded_a=0.5, recorded_b=0.51,
                            recorded_delta=0.01, reexecuted_delta=0.01, residual=0.0, fidelity_a=1.0, fidelity_b=1.0,
                            configurations=2, computed_batches=0, cached_batches=2, minimal_flip_sets={})
    body = render_latex(c) + attribution_latex(att)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs,longtable,array}\n"
                                      "\\begin{document}\n" + body + "\\end{document}\n")
    res = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert "Missing character" not in log


def test_each_escaper_on_its_own():
    assert rich_text("[bold]x[/]") == "\\[bold]x\\[/]"
    console = Console(file=io.StringIO(), force_terminal=True)
    console.print(rich_text("a\x1b[31m [b]x[/b]"), highlight=False)
    assert console.file.getvalue().rstrip() == "a\\x1b[31m [b]x[/b]"  # shown, not obeyed
    assert md("| # x") == "\\| # x" and md("# x").startswith("\\#")
    assert latex("a_b & [c]") == "a\\_b \\& {[}c{]}" and latex("Δ") == "$\\Delta$"
    assert latex("\x00") == "\\textbackslash{}x00"
