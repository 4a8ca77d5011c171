"""A value a report has to cut keeps what differs visible (issue 55, item 3): a list — an inspect solver plan, the
GPUs of a run — is cut element by element, never in the middle of the text before the first difference; a GPU list
keeps its counts in compare's headline and factor lines, gate's "why" and the JUnit message."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.console import Console

from repaudit.audit.compare import compare, load_run
from repaudit.audit.gate import gate, inline_policy
from repaudit.report.compare import render_markdown, render_rich
from repaudit.report.compare_text import factor_lines, headline
from repaudit.report.gate import render_rich as gate_rich
from repaudit.report.gate import why_lines, write_junit
from repaudit.report.values import list_diff, value_diff

FIX = Path(__file__).resolve().parent / "fixtures"
CASES = Path(__file__).resolve().parent / "realworld" / "cases"
L40S, RTX = "NVIDIA L40S", "NVIDIA RTX 6000 Ada Generation"


def _rich(obj, render, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    render(obj, console)
    return console.file.getvalue()


def test_a_plan_missing_a_step_shows_the_step_and_what_the_other_plan_holds():
    mc = "multiple_choice(template='" + "Answer the following multiple choice question. " * 3 + "')"
    plan_a, plan_b = ["system_message()", "fewshot(k=3)", mc], ["system_message()", mc]
    for width in (24, 30, 60):
        a, b = value_diff(plan_a, plan_b, width)
        assert '"fewshot(k=3)"' in a and "fewshot" not in b
        # each side still shows where its steps are: two shared steps, cut, on both sides
        assert a.startswith('["system_m') and b.startswith('["system_m') and '"multiple' in a and '"multiple' in b


def test_a_gpu_list_keeps_its_counts():
    a, b = value_diff([L40S] * 8, [RTX] * 2, 24)
    assert a == '[8 × "NVIDIA L40S"]' and b.startswith('[2 × "NVIDIA RTX')
    assert value_diff([L40S] * 8, [L40S] * 4, 10) == ('[8 × "NVIDIA L40S"]', '[4 × "NVIDIA L40S"]')
    assert list_diff([L40S, RTX], [RTX, RTX], 100) == ('["NVIDIA L40S", "NVIDIA RTX 6000 Ada Generation"]',
                                                      '[2 × "NVIDIA RTX 6000 Ada Generation"]')


def test_lists_inside_a_dict_and_a_long_shared_list():
    a, b = value_diff({"ids": list(range(15)), "x": 1}, {"ids": list(range(14)) + [99], "x": 1}, 30)
    assert a.startswith("ids=[") and a.endswith("14]") and b.endswith("99]") and "x=" not in a
    a, b = value_diff(list(range(40)), list(range(20)) + [99] + list(range(20, 40)), 30)
    assert "99" in b and "99" not in a and len(b) <= 30


def test_the_inspect_plan_without_a_system_step_shows_both_plans_steps():
    c = compare(load_run(FIX / "inspect" / "arc_easy_a.eval"), load_run(FIX / "inspect" / "arc_easy_b.eval"),
                n_boot=200)
    line = next(f for f in factor_lines(c) if f.label.endswith("solver_plan"))
    assert line.a.startswith('["multiple_choice(') and line.b.startswith('["system_message()", "multiple_choice(')
    summary = headline(c)[2]
    plan = summary[summary.index("solver_plan: "):].split(";")[0]
    assert plan.startswith('solver_plan: ["multiple') and '→ ["system_message()", "multiple' in plan


def _with_gpus(src: Path, dst: Path, gpus: list[str]) -> Path:
    shutil.copytree(src, dst)
    results = next(dst.glob("results_*.json"))
    raw = json.loads(results.read_text())
    env = raw["pretty_env_info"]
    old = next(line for line in env.splitlines() if line.startswith("GPU models and configuration"))
    raw["pretty_env_info"] = env.replace(old, "GPU models and configuration: \n" + "\n".join(
        f"GPU {i}: {g}" for i, g in enumerate(gpus)))
    results.write_text(json.dumps(raw))
    return dst


def test_gpu_counts_in_compare_gate_and_junit(tmp_path):
    case = CASES / "lmeval_negotiationtom_rerun_h100_l40s"
    a = _with_gpus(case / "a", tmp_path / "a", [L40S] * 8)
    b = _with_gpus(case / "b", tmp_path / "b", [RTX] * 2)
    c = compare(load_run(a), load_run(b), n_boot=200)
    want_a, want_b = '8 × "NVIDIA L40S"', "2 × "
    texts = {"headline": headline(c)[2], "terminal": _rich(c, render_rich, 80), "markdown": render_markdown(c)}
    for name, text in texts.items():
        gpu = text[text.index("gpus"):]
        assert want_a in gpu and want_b in gpu.split("→", 1)[1][:12], name
    g = gate(c, inline_policy(1.0, None))
    row = next(r for r in g.rows if r.decision != "PASS")
    why = " ".join(why_lines(row))
    assert want_a in why and f"→ [{want_b}" in why
    assert want_a in _rich(g, gate_rich, 80).replace("\n", " ")
    write_junit(g, tmp_path / "gate.xml")
    assert want_a.replace('"', "&quot;") in (tmp_path / "gate.xml").read_text() or want_a in (
        tmp_path / "gate.xml").read_text()


def test_a_value_that_is_the_others_end_shows_its_start_not_a_bare_ellipsis():
    """Issue 63: a model path and its folder name (the same text without the leading folders) showed as ``…``."""
    from repaudit.report.values import text_diff

    a, b = "/home/u/models/" + "m" * 50, "m" * 50
    ta, tb = text_diff(a, b, 30)
    assert tb == "m" * 29 + "…" and ta.startswith("/home/u/models/") and len(ta) <= 30
    assert text_diff(b, a, 30) == (tb, ta)


def test_a_count_one_side_lacks_is_zero_not_unset():
    """Issue 63: ``batch_sizes_used: 8=246; 2 (not set)`` read oddly: batch size 2 ran 0 batches in A."""
    from repaudit.report.values import value_diff

    assert value_diff({"8": 246}, {"8": 71, "2": 1}) == ("8=246; 2=0", "8=71; 2=1")
    assert value_diff({"load_in_8bit": True}, {}) == ("load_in_8bit=true", "load_in_8bit (not set)")
