"""Every bad input gives one clear error line, exit code 1, and no output file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repaudit.cli import app

runner = CliRunner()


def _run(args):
    return runner.invoke(app, args)


def _one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    return errors[0]


def test_run_writes_a_record(tiny_model, shared_data, tmp_path):
    out = tmp_path / "r.json"
    res = _run(["run", "--task", "piqa", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "4",
                "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(out.read_text())
    assert rec["kind"] == "repaudit.run" and len(rec["docs"]) == 4
    assert {m["name"] for m in json.loads(res.stdout)} == {"acc", "acc_norm"}


@pytest.mark.parametrize("args,needle", [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--prompt-format", "weird"], "unknown prompt format 'weird'"),
    (["--task", "winogrande", "--prompt-format", "lettered"], "does not support prompt format"),
    (["--dtype", "float8"], "unknown dtype 'float8'"),
    (["--model", "./no/such/model"], "model path './no/such/model' does not exist"),
    (["--model", "some-org/some-model-that-is-not-here"], "could not be fetched from the Hugging Face hub"),
    (["--data-dir", "/no/such/dir"], "is not a directory"),
    (["--limit", "0"], "--limit must be between 1 and 1e+09, got 0"),
])
def test_bad_input_is_one_clear_line(tiny_model, shared_data, tmp_path, args, needle):
    out = tmp_path / "r.json"
    base = ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "2", "-o", str(out)]
    res = _run(base + args)
    assert needle in _one_error_line(res)
    assert not out.exists()


def test_wrong_schema_data_file(tiny_model, tmp_path):
    (tmp_path / "arc").mkdir()
    (tmp_path / "arc" / "ARC-Easy_validation.jsonl").write_text('{"question": "q"}\n')
    out = tmp_path / "r.json"
    res = _run(["run", "--model", str(tiny_model), "--data-dir", str(tmp_path), "-o", str(out)])
    msg = _one_error_line(res)
    assert "ARC-Easy_validation.jsonl' line 1: lacks field(s) choices, answerKey" in msg
    assert not out.exists()


def test_unreadable_data_file(tiny_model, tmp_path):
    (tmp_path / "arc").mkdir()
    (tmp_path / "arc" / "ARC-Easy_validation.jsonl").write_text("not json\n")
    res = _run(["run", "--model", str(tiny_model), "--data-dir", str(tmp_path)])
    assert "line 1 is not valid JSON" in _one_error_line(res)


def test_every_command_has_help_with_an_example_and_a_readme_section():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    names = [c.name for c in app.registered_commands]
    assert {"run", "compare", "sweep"} <= set(names)
    for name in names:
        res = _run([name, "--help"])
        assert res.exit_code == 0 and "Example:" in res.output, name
        assert f"## `repaudit {name}`" in readme, name
