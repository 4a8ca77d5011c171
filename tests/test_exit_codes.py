"""Exit codes equal the table of repaudit/errors.py for the cases issue 63 found wrong: a bad value is a usage error
(2; gate 64) in every command, checked before any file is read, and a refusal lists only what the command accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.errors import EX_USAGE, EXIT_CODES, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]
A = str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_0shot")
B = str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_3shot")

#: (arguments, the table's code, a phrase of the one error line)
CASES = [
    (["gate", A, B, "--max-drop", "20", "-o", "gate.tex"], EX_USAGE, "this command writes no LaTeX"),
    (["gate", A, B, "--max-drop", "20", "-o", "gate.csv"], EX_USAGE, "CSV is written by compare"),
    (["gate", A, B, "--max-drop", "20", "-o", "gate.pdf"], EX_USAGE,
     "(suffixes: .json, .md, .markdown, .txt, .text, .log, .html, .htm;"),
    (["compare", A, B, "-o", "compare.pdf"], EXIT_USAGE, ".tex, .latex, .txt, .text, .log, .csv, .html"),
    (["run", "--task", "arc_easy", "--doc-ids", "0,abc"], EXIT_USAGE,
     "--doc-ids '0,abc' is not a comma-separated list of doc ids"),
    (["sweep", "--factor", "nosuch", "--values", "1,2", "--task", "arc_easy"], EXIT_USAGE, "unknown factor 'nosuch'"),
    (["sweep", "--factor", "seed", "--values", "1,abc", "--task", "arc_easy"], EXIT_USAGE,
     "--values '1,abc' do not parse as values of seed"),
    (["variance", "--across", "checkpoint"], EXIT_USAGE, "--across checkpoint needs two or more run files, got 0"),
    (["variance", A, "--across", "checkpoint"], EXIT_USAGE, "needs two or more run files, got 1"),
    (["variance", A, B, "--across", "checkpoint", "--last", "1"], EXIT_USAGE, "--last must be between 2 and 10000"),
]


@pytest.mark.parametrize("args,code,needle", CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _, _ in CASES])
def test_usage_errors_exit_with_the_tables_code(tmp_path, monkeypatch, args, code, needle):
    monkeypatch.chdir(tmp_path)  # a report written by mistake would land here, and is checked for below
    res = CliRunner().invoke(app, args)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.exit_code == code, res.output
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.stderr
    assert list(tmp_path.iterdir()) == []
    # the code is the table's: the usage row of every command but gate, or gate's
    row = {c: (other, gate) for c, other, gate in EXIT_CODES}[code]
    assert "usage error" in row[1 if args[0] == "gate" else 0]


def test_a_gate_refusal_lists_no_suffix_gate_refuses():
    res = CliRunner().invoke(app, ["gate", A, B, "--max-drop", "20", "-o", "gate.pdf"])
    listed = res.stderr.split("(suffixes: ", 1)[1].split(";", 1)[0].split(", ")
    for suffix in listed:  # every suffix the refusal offers is one gate accepts (it is refused for another reason)
        again = CliRunner().invoke(app, ["gate", A, B, "--max-drop", "20", "-o", f"/nonexistent-dir/gate{suffix}"])
        assert again.exit_code != EX_USAGE and "cannot be written" in again.stderr, (suffix, again.stderr)


def test_the_same_file_twice_is_said_or_refused(tmp_path):
    """Issue 63: the same file given twice was accepted silently. compare and gate say so (a check of compare
    itself is allowed); appendix and variance --across refuse it (one run would count as two)."""
    res = CliRunner().invoke(app, ["compare", A, str(Path(A) / ".." / Path(A).name)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "WARNING: A and B are the same file" in res.stdout
    gate = CliRunner().invoke(app, ["gate", A, A, "--max-drop", "1", "--json"])
    assert "A and B are the same file" in gate.stdout
    for args in (["appendix", A, A], ["variance", A, A, "--across", "seed"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == EXIT_USAGE and "are the same" in res.stderr and res.stderr.count("error:") == 1
