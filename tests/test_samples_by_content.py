"""lm-eval samples files told by content, not by name (issue 61): the corpus' pairs with samples on both sides, their
samples renamed, give the same flips, scored-answer changes and mechanisms as under lm-eval's names — found in their
folder and passed explicitly — and a folder's samples file that no task takes is said in a note, never dropped
silently."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repaudit.audit.compare import compare, load_run

CASES = Path(__file__).resolve().parent / "realworld" / "cases"


def _paired_cases() -> list[str]:
    out = []
    for p in sorted(CASES.iterdir()) if CASES.is_dir() else []:
        t = json.loads((p / "truth.json").read_text()) if (p / "truth.json").is_file() else {}
        if t.get("kind") == "pair" and t.get("results_a") and t.get("per_doc"):
            out.append(p.name)
    return out


PAIRED = _paired_cases()


def _facts(c) -> dict:
    """What per-doc files give a comparison: flips, scored answers, mechanisms, each row's method and pairing."""
    return {"flips": sorted((f.task, f.metric, f.doc_id, f.direction) for f in c.flips),
            "scored": sorted((s.task, s.filter, s.n_shared, s.changed, s.empty_a, s.empty_b) for s in c.scored),
            "mechanisms": sorted((m.task, m.diagnostic, m.metric, m.n_unaffected) for m in c.mechanisms),
            "rows": sorted((r.task, r.metric, r.method, r.n_paired, r.right_to_wrong, r.wrong_to_right)
                           for r in c.scores)}


def _renamed_copy(src: Path, dst: Path) -> list[Path]:
    """``src`` copied to ``dst`` with every samples file renamed (names that say nothing, in reversed order, so that
    no name or order can give a task away); the renamed files."""
    shutil.copytree(src, dst)
    files = sorted(dst.glob("samples_*.jsonl"))
    out = []
    for i, f in enumerate(reversed(files)):
        new = dst / f"per_doc_rows_{i}.jsonl"
        f.rename(new)
        out.append(new)
    return out


def test_the_corpus_has_renamable_pairs():
    assert len(PAIRED) >= 5, PAIRED  # asdiv, masakhaner ×2, negotiationtom, truthfulqa


@pytest.mark.parametrize("case", PAIRED)
def test_renamed_samples_give_the_same_flips_answers_and_mechanisms(case, tmp_path):
    t = json.loads((CASES / case / "truth.json").read_text())
    a, b = CASES / case / t["results_a"], CASES / case / t["results_b"]
    want = _facts(compare(load_run(a), load_run(b), n_boot=200))
    assert want["scored"] or any(r[2].startswith("paired") for r in want["rows"]), want  # per-doc files were read
    ra = _renamed_copy(a.parent, tmp_path / "a")
    rb = _renamed_copy(b.parent, tmp_path / "b")
    found_a, found_b = load_run(tmp_path / "a"), load_run(tmp_path / "b")
    assert _facts(compare(found_a, found_b, n_boot=200)) == want
    assert any("not lm-eval's name for it" in n for n in found_a.notes)
    given_a = load_run(tmp_path / "a" / a.name, samples=ra)
    given_b = load_run(tmp_path / "b" / b.name, samples=rb)
    assert _facts(compare(given_a, given_b, n_boot=200)) == want


def test_a_folders_samples_file_of_no_task_is_said_in_every_format(tmp_path):
    """A renamed samples file that matches no task of its results file (another run's rows) is not read, and the
    comparison says so — terminal, Markdown, LaTeX, HTML and JSON alike."""
    import io

    from rich.console import Console

    from repaudit.report.compare import render_json, render_latex, render_markdown, render_rich
    from repaudit.report.html import render_compare_html

    case = CASES / "lmeval_negotiationtom_rerun_h100_l40s"
    t = json.loads((case / "truth.json").read_text())
    a = (case / t["results_a"]).parent
    shutil.copytree(a, tmp_path / "a")
    asdiv = next((CASES / "lmeval_asdiv_batch1_vs_batch8" / "a").glob("samples_*.jsonl"))
    shutil.copy(asdiv, tmp_path / "a" / "extra_rows.jsonl")  # rows of another run's task
    run = load_run(tmp_path / "a")
    note = next(n for n in run.notes if "extra_rows.jsonl" in n)
    assert "not read" in note and "TASK=PATH" in note and str(tmp_path) not in note, note
    c = compare(run, load_run(case / t["results_b"]), n_boot=200)
    console = Console(file=io.StringIO(), width=400, color_system=None)
    render_rich(c, console)
    for text in (console.file.getvalue(), render_markdown(c), render_latex(c), render_compare_html(c),
                 render_json(c)):
        assert "extra" in text and "not read" in text
