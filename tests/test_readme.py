"""The README is a front door (at most 200 lines, nothing a clone lacks), and the exit codes the command-line
reference names (docs/reference/cli/index.md) are the ones real cases exit with. The README's and the docs'
generated outputs and runnable blocks are tests/test_docs.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
OBQA = FIX / "lmeval_config"
PUBLIC = ROOT.parent / "shared" / "lmeval_public"


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "../shared" not in text and "shared/data" not in text
    for section in ("## Install", "## First commands", "## Commands at a glance"):
        assert section in text, section
    links = re.findall(r"\]\(((?:docs|examples|tests)/[^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) > 20 and not [p for p in links if not (ROOT / p).exists()]


def _make_variable(makefile: str, name: str) -> str:
    m = re.search(rf"^{name}\s*[:?]?=\s*(\S+)\s*$", makefile, flags=re.M)
    assert m, f"the Makefile sets no {name}"
    return m.group(1)


def test_the_makefile_readme_and_install_page_install_the_same_cpu_torch():
    """One torch line everywhere: the pin and PyTorch's CPU wheel index (a plain PyPI torch on Linux is a CUDA build),
    and every torch the Makefile installs goes through it."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    torch, index = _make_variable(makefile, "TORCH"), _make_variable(makefile, "TORCH_INDEX")
    assert re.fullmatch(r"torch==\d+\.\d+\.\d+", torch) and index == "https://download.pytorch.org/whl/cpu"
    assert torch in (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # the package pins the same torch
    recipe = [line for line in makefile.splitlines() if line.startswith("\t")]
    torch_lines = [line for line in recipe if "pip install" in line and ("torch" in line.lower())]
    assert len(torch_lines) >= 5 and all("$(TORCH_PIP)" in line and "torch==" not in line for line in torch_lines)
    assert "--index-url $(TORCH_INDEX)" in makefile
    line = f"pip install {torch} --index-url {index}"
    for page in ("README.md", "docs/how-to/install.md", "docs/tutorials/quickstart.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert line in text, page
        commands = [x for x in text.splitlines() if x.lstrip().startswith("pip install torch")]
        assert commands and all(line in x for x in commands), page  # no install of a bare PyPI torch left
    assert "nvidia" in (ROOT / "README.md").read_text(encoding="utf-8")  # and it says why


def _table() -> dict[int, tuple[str, str]]:
    text = (ROOT / "docs" / "reference" / "cli" / "index.md").read_text(encoding="utf-8")
    head = text.index("| code | every command but `gate` | `gate` |")
    rows = {}
    for line in text[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        code, other, gate = (c.strip() for c in line.strip("|").split("|"))
        rows[int(code)] = (other, gate)
    return rows


def _run(args: list[str]):
    return CliRunner().invoke(app, args)


def _interrupted(monkeypatch, args: list[str]):
    import repaudit.audit.compare as cmp

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmp, "load_run", stop)
    return _run(args)


def test_every_exit_code_of_the_table_is_what_a_real_case_exits_with(monkeypatch, tmp_path):
    table = _table()
    assert set(table) == {0, 1, 2, 64, 65, 69, 74, 130}
    a, b = str(OBQA / "openbookqa_0shot"), str(OBQA / "openbookqa_3shot")
    missing = str(tmp_path / "no" / "such" / "x.md")
    compare_cases = {0: [[a, b, "--n-boot", "200"]],
                     1: [[a, str(tmp_path / "absent.json")], [a, b, "--n-boot", "200", "-o", missing]],
                     2: [[a, b, "--n-boot", "0"], [a, b, "--adjust", "foo"], [a, b, "--tie-eps", "-1"],
                         [a, b, "--top", "-3"], [a, b, "--unknown-option"]],
                     64: [[a, b, "--n-boot", "200", "-o", str(tmp_path)]]}  # an output path that is a directory
    for code, cases in compare_cases.items():
        for args in cases:
            res = _run(["compare", *args])
            assert res.exit_code == code, (code, args, res.output)
            if code:
                lines = [x for x in res.stderr.splitlines() if x.strip()]
                assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    for args in (["run", "--task", "arc_easy", "--limit", "0"], ["run", "--task", "nosuch"]):
        res = _run(args)  # a bad value is usage whichever command reads it
        assert res.exit_code == 2 and res.stderr.startswith("error:"), (args, res.output)
    gate_cases = {0: [[a, b, "--max-drop", "50"]], 2: [[a, b, "--margin", "0.1"]],
                  64: [[a, b], [a, b, "--max-drop", "1", "--margin", "1"], [a, b, "--max-drop", "1", "--format",
                                                                          "latex"], [a, b, "--max-drop", "1", "-o",
                                                                                     str(tmp_path)]],
                  65: [[a, str(tmp_path / "absent.json"), "--max-drop", "1"]],
                  74: [[a, b, "--max-drop", "1", "-o", missing]]}
    for code, cases in gate_cases.items():
        for args in cases:
            res = _run(["gate", *args])
            assert res.exit_code == code, (code, args, res.output)
    assert _run(["gate", a, b, "--margin", "0.1", "--strict"]).exit_code == 1
    assert _run(["gate", a, b, "--max-drop", "1", "-o", missing, "--mkdir", "--n-boot", "200"]).exit_code in (0, 2)
    assert Path(missing).is_file()
    for cmd in (["compare", a, b], ["gate", a, b, "--max-drop", "1"]):
        res = _interrupted(monkeypatch, cmd)
        assert res.exit_code == 130, res.output
    import socket

    with socket.socket() as s:  # a port nothing listens on: a served model's endpoint that cannot be reached
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    res = _run(["run", "--backend", "openai", "--base-url", f"http://127.0.0.1:{closed}/v1", "--task", "arc_easy",
                "--limit", "1", "--max-retries", "0"])
    errors = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert res.exit_code == 69 and len(errors) == 1 and "cannot be reached" in errors[0], res.output


def test_the_exit_code_table_is_generated_from_the_code():
    from repaudit.errors import EXIT_CODES, exit_code_table

    text = (ROOT / "docs" / "reference" / "cli" / "index.md").read_text(encoding="utf-8")
    assert "<!-- generated: exit-codes -->\n" + exit_code_table() + "<!-- end generated -->" in text
    assert [c for c, *_ in EXIT_CODES] == sorted(_table())


def test_no_go_exits_1():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    qwen = PUBLIC / "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"
    res = _run(["gate", str(qwen), str(FIX / "lmeval" / "pythia__160m-5shot_step143000.json"), "--max-drop", "1",
                "--n-boot", "200"])
    assert res.exit_code == 1 and res.stdout.startswith("gate: NO-GO"), res.output
    # what failed, in numbers: d, its interval and the margin it lies beyond
    assert re.search(r"arc_easy acc — FAIL \(d > −1\.00\): d = −\d+\.\d\d \[−\d+\.\d\d, −\d+\.\d\d\] pts lies below "
                     r"the margin −1\.00", " ".join(res.stdout.split())), res.stdout
