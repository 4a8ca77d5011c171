"""Every bad option, data row and damaged store of ``repaudit run``: one error line (or a clean rebuild),
checked before any work, never a traceback and never a partial output file."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from repaudit.cli import app

runner = CliRunner()


def _one_error_line(res, code: int = 1) -> str:
    assert res.exit_code == code, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    assert "Traceback" not in res.output
    return errors[0]


def _arc_dir(tmp_path, rows):
    (tmp_path / "data" / "arc").mkdir(parents=True)
    path = tmp_path / "data" / "arc" / "ARC-Easy_validation.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data"


_GOOD = {"id": "q1", "question": "Which is a gas?", "choices": {"text": ["rock", "air"], "label": ["A", "B"]},
         "answerKey": "B"}


@pytest.mark.parametrize("row,needle", [
    ({**_GOOD, "answerKey": "E"}, "field 'answerKey' is 'E', expected one of 'A', 'B'"),
    ({**_GOOD, "choices": {"text": [], "label": []}}, "field 'choices.text' has 0 entries, expected at least 2"),
    ({**_GOOD, "choices": "A or B"}, "field 'choices' is not an object with 'text' and 'label' lists"),
    ({**_GOOD, "question": None}, "field 'question' is missing (null), expected a string"),
    ({**_GOOD, "choices": {"text": ["a", "b"], "label": ["A"]}}, "field 'choices.label' has 1 entries, expected 2"),
])
def test_data_rows_are_checked_against_the_task_schema(tiny_model, tmp_path, row, needle):
    data = _arc_dir(tmp_path, [_GOOD, row])
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(data), "-o", str(out)])
    msg = _one_error_line(res)
    assert "ARC-Easy_validation.jsonl' line 2: " + needle in msg
    assert not out.exists()


def test_utf8_bom_in_a_data_file_is_accepted(tiny_model, tmp_path):
    data = _arc_dir(tmp_path, [_GOOD, _GOOD])
    path = data / "arc" / "ARC-Easy_validation.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(data),
                              "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("args,needle,code", [
    (["--device", "cuda"], "--device cuda: no CUDA GPU is visible", 1),
    (["--device", "bogus"], "unknown device 'bogus'", 1),
    (["--numpy-seed", "-1"], "--numpy-seed must be between 0 and 4.29497e+09, got -1", 2),  # out of range: usage
    (["--max-gen-toks", "-1"], "--max-gen-toks must be between 1", 2),
    (["--num-fewshot", "-1"], "--num-fewshot must be between 0 and 10000, got -1", 2),
    (["--batch-size", "0"], "--batch-size must be between 1", 2),
    (["--batch-size", "zero"], "--batch-size: cannot read 'zero' (expected a whole number or 'auto')", 2),
    (["--top-p", "0"], "--top-p must be between", 2),
    (["--fewshot-ids", "1,-2"], "has a negative doc id", 2),
    (["--doc-ids", "0,abc"], "--doc-ids '0,abc' is not a comma-separated list of doc ids", 2),
])
def test_options_are_range_checked_before_any_work(tiny_model, shared_data, tmp_path, args, needle, code):
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "2",
                              "-o", str(out), *args])
    assert needle in _one_error_line(res, code)
    assert not out.exists()


@pytest.mark.parametrize("where,needle,code", [
    (lambda t: "/proc/repaudit-run.json", "cannot be written in '/proc'", 1),
    (lambda t: str(t), "is a directory: give a file name", 64),  # not a regular file: refused, exit 64 (issue 63)
    (lambda t: str(t / "file.txt" / "r.json"), "is a file, not a folder", 1),
    (lambda t: str(t / ("x" * 300)), "has a file name over 255 bytes", 1),
])
def test_output_path_is_checked_before_the_evaluation(tiny_model, shared_data, tmp_path, where, needle, code):
    (tmp_path / "file.txt").write_text("x")
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "2",
                              "-o", where(tmp_path)])
    msg = _one_error_line(res, code)
    assert needle in msg
    assert "docs" not in res.stderr  # nothing was evaluated: the check came first


def test_cache_dir_that_is_a_file(tiny_model, shared_data, tmp_path, monkeypatch):
    blocker = tmp_path / "cache-file"
    blocker.write_text("x")
    monkeypatch.setenv("REPAUDIT_CACHE_DIR", str(blocker))
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "2"])
    assert "cache directory" in _one_error_line(res) and "is a file" in res.stderr


def _run_json(tiny_model, shared_data, cache, out):
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "6",
                              "--batch-size", "4", "--cache-dir", str(cache), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text()), res


@pytest.mark.parametrize("damage", ["truncate", "garbage_header", "garbage_page", "bad_payload"])
def test_a_damaged_batch_store_is_set_aside_and_rebuilt(tiny_model, shared_data, tmp_path, damage):
    cache = tmp_path / "cache"
    first, _ = _run_json(tiny_model, shared_data, cache, tmp_path / "a.json")
    store = cache / "batches.sqlite"
    db = sqlite3.connect(store)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if damage == "bad_payload":
        db.execute("UPDATE batches SET payload = '[[[1, 2], \"x\"' WHERE rowid = 1")
        db.execute("UPDATE batches SET payload = '[[[[5], \"nan\", 7]]]' WHERE rowid = 2")
        db.commit()
    db.close()
    data = store.read_bytes()
    if damage == "truncate":
        store.write_bytes(data[: len(data) // 2])
    elif damage == "garbage_header":
        store.write_bytes(b"this is not sqlite!!" + data[20:])
    elif damage == "garbage_page":
        store.write_bytes(data[:4096] + b"\xde\xad\xbe\xef" * 1024 + data[8192:])
    second, res = _run_json(tiny_model, shared_data, cache, tmp_path / "b.json")
    assert [d["loglikelihoods"] for d in second["docs"]] == [d["loglikelihoods"] for d in first["docs"]]
    if damage != "bad_payload":
        warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: batch store")]
        assert len(warnings) == 1 and "is damaged" in warnings[0], res.stderr
        assert list(cache.glob("batches.sqlite.damaged-*"))
    assert second["timings"]["computed_batches"] > 0  # recomputed, never trusted
    third, _ = _run_json(tiny_model, shared_data, cache, tmp_path / "c.json")
    assert third["timings"]["computed_batches"] == 0  # the rebuilt store serves the next run


def test_compare_n_boot_zero_is_an_error(lmeval_runs):
    res = runner.invoke(app, ["compare", str(lmeval_runs / "s1"), str(lmeval_runs / "s2"), "--n-boot", "0"])
    assert "--n-boot must be an integer between 100 and 1000000, got 0" in _one_error_line(res, 2)  # usage


def test_progress_lines_without_a_terminal(tiny_model, shared_data, tmp_path, monkeypatch):
    import repaudit.run.progress as progress

    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.0)
    res = runner.invoke(app, ["run", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "8",
                              "--batch-size", "2", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("arc_easy: ")]
    assert len(lines) >= 3 and lines[-1].startswith("arc_easy: 8/8 docs (100 %)"), res.stderr


def test_few_shot_examples_from_the_evaluated_split_are_said_and_recorded(tiny_model, shared_data, tmp_path):
    """HellaSwag's few-shot split (train) is not in the shared data: the examples come from the validation split
    being scored. The run says so before any work and in its summary (with the docs among their own examples), and
    the fingerprint records why; a 0-shot run records nothing (issue 63: it was silent)."""
    out, zero = tmp_path / "r.json", tmp_path / "z.json"
    args = ["run", "--task", "hellaswag", "--model", str(tiny_model), "--data-dir", str(shared_data), "--limit", "6",
            "--cache-dir", str(tmp_path / "c")]
    res = runner.invoke(app, [*args, "--num-fewshot", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert ("note: hellaswag's few-shot split 'train' is not in --data-dir" in err
            and "few-shot examples are drawn from the evaluated split 'validation'" in err)
    rec = json.loads(out.read_text())
    leaked = rec["diagnostics"]["fewshot_leaked"]
    assert (f"note: few-shot examples drawn from the evaluated split 'validation': {len(leaked)} of 6 docs among "
            "their own examples") in err
    assert rec["fingerprint"]["fewshot"]["pool_fallback"].startswith("hellaswag's few-shot split 'train' is not in")
    assert rec["diagnostics"]["fewshot_from_eval_split"] is True
    res = runner.invoke(app, [*args, "-o", str(zero)])
    assert res.exit_code == 0 and "few-shot" not in res.stderr
    assert "pool_fallback" not in json.loads(zero.read_text())["fingerprint"]["fewshot"] or \
        json.loads(zero.read_text())["fingerprint"]["fewshot"]["pool_fallback"] is None
