"""Every Eval Ever: every run compare reads exported and read back as the same run, byte-identical exports valid
against EEE's own schemas, records of EEE's own lm-eval converter compared doc by doc, bad records refused in one
line with nothing written."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from truthcheck import CASES, check_docs, check_scores, check_settings, compare_json, recorded_values_are_in_the_files
from typer.testing import CliRunner

from repaudit import api
from repaudit.cli import app
from repaudit.importers import detect
from repaudit.importers.eee.schema import SCHEMA_DIR, SCHEMA_FILES

FIX = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"
OURS = FIX / "eee" / "repaudit_arc_easy_3docs"
runner = CliRunner()

#: every run of tests/fixtures that compare reads
RUNS = sorted([*(FIX / "repaudit_runs").glob("*.json"), *(FIX / "lmeval").glob("*.json"),
               *(p for p in (FIX / "lmeval_config").iterdir() if p.is_dir()),
               *(p for p in (FIX / "lmeval_gsm8k").iterdir() if p.is_dir()),
               *(p for p in (FIX / "lighteval").iterdir() if p.is_dir()),
               *(FIX / "inspect").glob("*.eval"), FIX / "inspect" / "arc_easy_json.json",
               *(FIX / "lmeval_public_extra").glob("*.json"),
               *(p for p in (FIX / "lmeval_public_extra" / "dam").iterdir() if p.is_dir())])
#: the flips compare of ../shared/lmeval_runs/s1 and s3 finds (repaudit compare … --json)
S1_S3_FLIPS = {("acc", 85), ("acc", 135), ("acc", 178), ("acc", 316), ("acc", 417), ("acc", 431), ("acc", 462),
               ("acc_norm", 27), ("acc_norm", 365)}


def _export(runs, out: Path, *extra: str):
    return runner.invoke(app, ["export", *map(str, runs), "--evaluator-relationship", "third_party", "--model-id",
                               "org/model", "--organization", "repaudit tests", "-o", str(out), *extra])


def _one_error_line(res, code: int = 1) -> str:
    assert res.exit_code == code, res.output
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:"), res.stderr
    return errors[0]


def _validators():
    return {kind: jsonschema.Draft7Validator(json.loads((SCHEMA_DIR / name).read_text()))
            for kind, name in SCHEMA_FILES.items()}


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    """The two folders EEE's own lm-eval converter wrote from ../shared/lmeval_runs/s1 and s3."""
    out = tmp_path_factory.mktemp("converted")
    with tarfile.open(FIX / "eee" / "lmeval_s1_s3.tar.xz") as tar:
        tar.extractall(out, filter="data")
    return out


def test_the_vendored_schemas_are_eees_0_3_0_as_sources_md_says():
    sources = (SCHEMA_DIR / "SOURCES.md").read_text()
    for name in SCHEMA_FILES.values():
        data = (SCHEMA_DIR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() in sources
        assert json.loads(data)["version"] == "0.3.0"
    assert "MIT License" in (SCHEMA_DIR / "LICENSE").read_text()


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(FIX)))
def test_every_fixture_run_comes_back_as_the_same_run(run, tmp_path):
    detect._cache.clear()
    orig = detect.load_source(run)
    res = _export([run], tmp_path / "x", *(["--data-dir", str(SHARED / "data")] if SHARED.exists() else []))
    assert res.exit_code == 0, res.output
    files = sorted(p for p in (tmp_path / "x").rglob("*") if p.is_file())
    assert files and {f.suffix for f in files} <= {".json", ".jsonl"}
    v = _validators()
    for f in files:  # every record and every sidecar row against EEE's own schema files
        objs = [json.loads(f.read_text())] if f.suffix == ".json" else map(json.loads, f.read_text().splitlines())
        for obj in objs:
            assert not list(v["aggregate" if f.suffix == ".json" else "instance"].iter_errors(obj)), f
    back = detect.load_source(tmp_path / "x")
    assert back.adapter.name == "eee"
    # the run as compare sees it, every field: factors, scores, per-doc outcomes, diagnostics, notes
    a, b = orig.run, back.run
    assert (a.source, a.factors, a.tasks, a.notes) == (b.source, b.factors, b.tasks, b.notes)
    if orig.adapter.name == "repaudit":
        assert back.parsed.record.fingerprint_digest == orig.parsed.fingerprint_digest
        assert back.parsed.record.fingerprint.digest() == orig.parsed.fingerprint.digest()
        assert back.parsed.record == orig.parsed
    c = api.compare(a, b, n_boot=200)
    assert not c.flips
    assert all(r.status in ("same", "unknown", "n/a") and r.a == r.b for r in c.factors)
    assert all(r.a == r.b or (r.a != r.a and r.b != r.b) for r in c.scores)  # NaN == NaN too


def test_two_exports_of_a_run_are_byte_identical(tmp_path):
    run = FIX / "lmeval_config" / "openbookqa_3shot"
    for out in ("a", "b"):
        assert _export([run], tmp_path / out).exit_code == 0
    a, b = (sorted(p for p in (tmp_path / d).rglob("*") if p.is_file()) for d in ("a", "b"))
    assert [p.relative_to(tmp_path / "a") for p in a] == [p.relative_to(tmp_path / "b") for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
    before = {p: p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    assert _export([run], tmp_path / "a").exit_code == 0  # again into the same folder: the same files, no others
    assert {p: p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()} == before
    assert _export([tmp_path / "b"], tmp_path / "c").exit_code == 0  # the export of the export: the same bytes
    assert [(p.relative_to(tmp_path / "c"), p.read_bytes()) for p in sorted((tmp_path / "c").rglob("*"))
            if p.is_file()] == [(p.relative_to(tmp_path / "b"), p.read_bytes()) for p in b]
    name = a[0].stem.removesuffix("_samples")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", name)
    # no clock read: the run's own time, lm-eval's `date` in whole seconds as EEE's lm-eval converter writes it
    date = json.loads(next(run.glob("results_*.json")).read_text())["date"]
    record = json.loads(a[0].read_text())
    assert record["retrieved_timestamp"] == record["evaluation_timestamp"] == str(int(date))
    assert {r["evaluation_timestamp"] for r in record["evaluation_results"]} == {str(int(date))}


def test_a_run_without_a_recorded_time_says_0_and_an_eee_record_keeps_its_time(tmp_path, converted):
    assert _export([FIX / "lmeval" / "pythia__160m-5shot_step143000.json"], tmp_path / "p").exit_code == 0
    record = json.loads(next((tmp_path / "p").rglob("*.json")).read_text())
    assert record["retrieved_timestamp"] == "0" and "evaluation_timestamp" not in record
    assert _export([converted / "s1"], tmp_path / "s1").exit_code == 0  # EEE's converter's record: its own time
    theirs = json.loads(next((converted / "s1").rglob("*.json")).read_text())
    ours = json.loads(next((tmp_path / "s1").rglob("*.json")).read_text())
    assert ours["evaluation_timestamp"] == ours["retrieved_timestamp"] == theirs["evaluation_timestamp"]


def test_a_log_likelihood_rows_output_is_its_own_metrics_answer(tmp_path, converted):
    """``output.raw`` of a multiple-choice row: the answer of the row's own metric — acc's the choice with the highest
    log-likelihood (as EEE's converter writes it), acc_norm's the highest per character of the choice (lm-eval's
    rule) — recomputed here from the samples file, never contradicting the row's score (issue 63: acc_norm rows
    carried acc's answer); on lm-eval's s1, acc rows are the very rows EEE's own converter wrote."""
    run = FIX / "lmeval_hellaswag" / "hellaswag_0shot"  # its samples keep the choice texts
    assert _export([run], tmp_path / "hs").exit_code == 0
    picks = {}
    for line in next(run.glob("samples_*.jsonl")).read_text().splitlines():
        s = json.loads(line)
        got = [float(r[0]) for r in s["filtered_resps"]]
        texts = [a["arg_1"].removeprefix(" ") for a in s["arguments"].values()]  # the continuation less " "
        norm = [x / len(t) for x, t in zip(got, texts)]  # lm-eval's acc_norm: per character of the choice
        picks[str(s["doc_id"])] = {"acc": texts[got.index(max(got))].strip(),
                                   "acc_norm": texts[norm.index(max(norm))].strip(),
                                   "gold": texts[int(s["target"])].strip()}
    rows = _rows(tmp_path / "hs")
    for metric in ("acc", "acc_norm"):
        mine = [r for r in rows if r["evaluation_result_id"].endswith(metric)]
        assert mine and all(r["output"]["raw"] == [picks[r["sample_id"]][metric]] for r in mine), metric
        # the answer shown and the row's score agree: right exactly where the answer is the gold choice
        assert all((r["output"]["raw"] == [picks[r["sample_id"]]["gold"]]) == r["evaluation"]["is_correct"]
                   for r in mine), metric
    assert any(picks[k]["acc"] != picks[k]["acc_norm"] for k in picks)  # the two metrics' answers do differ here
    if (SHARED / "lmeval_runs" / "s1").is_dir():
        assert _export([SHARED / "lmeval_runs" / "s1"], tmp_path / "s1").exit_code == 0
        theirs = {(r["sample_id"], r["evaluation_result_id"]): r["output"]["raw"] for r in _rows(converted / "s1")}
        ours = {(r["sample_id"], r["evaluation_result_id"]): r["output"]["raw"] for r in _rows(tmp_path / "s1")}
        assert len(ours) == 1140 and {k: v for k, v in ours.items() if k[1].endswith("acc")} == {
            k: v for k, v in theirs.items() if k[1].endswith("acc")}
        # no row's answer contradicts its score: the gold choice exactly where the row is right (the reference is
        # the gold choice's index)
        rows = _rows(tmp_path / "s1")
        assert all((r["output"]["raw"] == [r["input"]["choices"][int(r["input"]["reference"][0])]])
                   == r["evaluation"]["is_correct"] for r in rows)
        differ = [r for r in rows if r["evaluation_result_id"].endswith("acc_norm")
                  and r["output"]["raw"] != ours[(r["sample_id"], r["evaluation_result_id"][:-5])]]
        assert len(differ) > 100  # acc_norm's own answer on many rows (theirs shows acc's there)


def test_a_run_exported_with_and_without_its_data_gives_two_records_never_one_id(tmp_path, monkeypatch):
    """A repaudit run's prompts are rebuilt from the data where the exporting machine has it: the sidecar then
    differs, and so does the evaluation id (the uuid derives from the prompts shown), never two sidecars under one
    id."""
    import repaudit.audit.doctext as doctext

    run = FIX / "repaudit_runs" / "arc_easy_3docs.json"
    assert _export([run], tmp_path / "with", *(["--data-dir", str(SHARED / "data")] if SHARED.exists() else []))\
        .exit_code == 0
    monkeypatch.setattr(doctext, "rebuild_prompts",
                        lambda *a, **k: doctext.Prompts(note="prompts not rebuilt: no data"))
    assert _export([run], tmp_path / "without").exit_code == 0
    by_id = {}
    for side in ("with", "without"):
        for f in (tmp_path / side).rglob("*.json"):
            rec = json.loads(f.read_text())
            by_id.setdefault(rec["evaluation_id"], set()).add(
                (f.with_name(f.stem + "_samples.jsonl").read_bytes(), rec["eval_library"]["additional_details"][
                    "repaudit.prompts"]))
    shown = {p for pairs in by_id.values() for _, p in pairs}
    if any(p.startswith("0 of") for p in shown) and len(shown) == 2:  # the data was there for one export
        assert len(by_id) == 2 and all(len(v) == 1 for v in by_id.values())
    assert all(len(v) == 1 for v in by_id.values())  # one sidecar per id, whatever the machine had


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(folder.rglob("*.jsonl")) for line in p.read_text().splitlines()]


def _check_predictions(rows: list[dict]) -> int:
    """Every row's prediction is its own metric's argmax and agrees with the row's score; the number of docs whose
    acc and acc_norm predictions differ."""
    shown = {}
    for r in rows:
        (attr,) = r["answer_attribution"]
        choices, gold = r["input"]["choices"], int(r["input"]["reference"][0])
        assert (attr["extracted_value"] == choices[gold]) == (r["evaluation"]["score"] == 1.0)
        lls = json.loads(r["metadata"]["repaudit.loglikelihoods"])
        norm = lls if r["evaluation_result_id"] == "acc" else [x / len(c) for x, c in zip(lls, choices)]
        assert attr["extracted_value"] == choices[norm.index(max(norm))]
        shown[r["sample_id"], r["evaluation_result_id"]] = attr["extracted_value"]
    return sum(shown[s, "acc"] != shown[s, "acc_norm"] for s, m in shown if m == "acc")


def test_an_acc_norm_row_shows_acc_norms_own_prediction(tmp_path):
    """EEE's converter shows acc's argmax on acc_norm rows; an export shows each metric's own, consistent with the
    row's score on every row (or none, saying why, where the file keeps no choice texts)."""
    assert _check_predictions(_rows(OURS)) == 1  # doc 0: acc 'refrigerator', acc_norm 'cellular telephone'
    assert _export([FIX / "lmeval_config" / "openbookqa_0shot"], tmp_path / "obqa").exit_code == 0
    rows = _rows(tmp_path / "obqa")  # samples without their text: acc shows the index, acc_norm nothing
    acc = [r for r in rows if r["evaluation_result_id"] == "acc"]
    norm = [r for r in rows if r["evaluation_result_id"] == "acc_norm"]
    assert len(acc) == len(norm) == 40
    assert all(r["answer_attribution"][0]["extracted_value"].isdigit() for r in acc)
    assert all(not r["answer_attribution"] and "needs the choice texts" in r["metadata"]["repaudit.prediction"]
               for r in norm)
    if (SHARED / "lmeval_runs" / "s1").is_dir():  # all 570 docs of lm-eval's ARC-Easy run
        assert _export([SHARED / "lmeval_runs" / "s1"], tmp_path / "s1").exit_code == 0
        assert _check_predictions(_rows(tmp_path / "s1")) == 268


def test_eees_own_conversions_flip_the_docs_lmeval_flips(converted):
    detect._cache.clear()
    c = api.compare(converted / "s1", converted / "s3", n_boot=200)
    counts = Counter((f.metric, f.direction) for f in c.flips)
    assert counts == {("acc", "right_to_wrong"): 6, ("acc", "wrong_to_right"): 1, ("acc_norm", "right_to_wrong"): 2}
    assert {(f.metric, f.doc_id) for f in c.flips} == S1_S3_FLIPS
    assert [(r.path, r.a.value, r.b.value, r.a.key) for r in c.factors if r.status == "differs"] == [
        ("serving.dtype", "float32", "bfloat16", "model_info.additional_details.dtype")]
    assert {r.path for r in c.factors if r.status == "unknown"} >= {"serving.batch_size", "serving.padding_side"}
    assert c.docs[0].doc_hash_equal == 570 and c.docs[0].prediction_equal == 562


@pytest.mark.skipif(not (SHARED / "lmeval_runs").is_dir(), reason="../shared/lmeval_runs is absent")
def test_eee_conversions_and_the_lmeval_runs_agree(converted):
    direct = api.compare(SHARED / "lmeval_runs" / "s1", SHARED / "lmeval_runs" / "s3", n_boot=200)
    assert {(f.metric, f.doc_id) for f in direct.flips} == S1_S3_FLIPS
    mixed = api.compare(SHARED / "lmeval_runs" / "s1", converted / "s3", n_boot=200)  # one file of each
    assert {(f.metric, f.doc_id) for f in mixed.flips} == S1_S3_FLIPS


def _copy(src: Path, dst: Path) -> tuple[Path, Path]:
    shutil.copytree(src, dst)
    record = next(p for p in dst.rglob("*.json"))
    return record, record.with_name(record.stem + "_samples.jsonl")


def _reseal(record: Path, sidecar: Path) -> None:
    """Record the sidecar's current checksum and row count, as if the edit had been made before."""
    agg = json.loads(record.read_text())
    data = sidecar.read_bytes()
    agg["detailed_evaluation_results"].update(checksum=hashlib.sha256(data).hexdigest(),
                                              total_rows=len(data.decode().splitlines()))
    record.write_text(json.dumps(agg))


def _truncated(record: Path, sidecar: Path) -> None:
    sidecar.write_bytes(sidecar.read_bytes()[:-700])


def _changed(record: Path, sidecar: Path) -> None:
    sidecar.write_text(sidecar.read_text().replace('"score": 0.0', '"score": 1.0', 1))


def _unknown_schema(record: Path, sidecar: Path) -> None:
    record.write_text(record.read_text().replace('"schema_version": "0.3.0"', '"schema_version": "0.9.0"', 1))


def _number_in_metadata(record: Path, sidecar: Path) -> None:
    lines = sidecar.read_text().splitlines()
    row = json.loads(lines[0])
    row["metadata"]["doc_hash"] = 5
    sidecar.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    _reseal(record, sidecar)


def _row_dropped(record: Path, sidecar: Path) -> None:
    sidecar.write_text("".join(sidecar.read_text().splitlines(keepends=True)[:-1]))
    agg = json.loads(record.read_text())
    agg["detailed_evaluation_results"]["checksum"] = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    record.write_text(json.dumps(agg))


def _score_edited(record: Path, sidecar: Path) -> None:
    sidecar.write_text(sidecar.read_text().replace('"score": 0.0', '"score": 1.0', 1))
    _reseal(record, sidecar)


@pytest.mark.parametrize("source", ["eee", "ours"])
@pytest.mark.parametrize("damage,needle", [
    (_truncated, "differs from the record's checksum"),
    (_changed, "differs from the record's checksum"),
    (_unknown_schema, '$.schema_version: is "0.9.0": this repaudit reads records of Every Eval Ever schemas 0.1.x, '
                      '0.2.x and 0.3.0'),
    (_number_in_metadata, "line 1: $.metadata.doc_hash: 5 is not of type 'string'"),
    (_row_dropped, "rows; its record"),
])
def test_a_bad_record_is_one_error_line_and_nothing_is_written(converted, tmp_path, source, damage, needle):
    record, sidecar = _copy(converted / "s1" if source == "eee" else OURS, tmp_path / "bad")
    damage(record, sidecar)
    detect._cache.clear()
    res = _export([tmp_path / "bad"], tmp_path / "out")
    assert needle in _one_error_line(res)
    assert not (tmp_path / "out").exists()
    assert needle in _one_error_line(runner.invoke(app, ["compare", str(tmp_path / "bad"), str(OURS)]))


def test_a_record_edited_after_export_is_refused(tmp_path):
    record, sidecar = _copy(OURS, tmp_path / "bad")
    _score_edited(record, sidecar)
    detect._cache.clear()
    assert "is not the embedded per-doc acc" in _one_error_line(_export([tmp_path / "bad"], tmp_path / "out"))
    record, sidecar = _copy(OURS, tmp_path / "bad2")
    text = record.read_text()
    record.write_text(text.replace('\\"batch_size\\":2', '\\"batch_size\\":4', 1))
    assert text != record.read_text()
    detect._cache.clear()
    assert "it was changed after export" in _one_error_line(_export([tmp_path / "bad2"], tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    # a setting's value stated beside the fingerprint, edited: refused (a provenance note may be worded anew)
    record, sidecar = _copy(OURS, tmp_path / "bad3")
    obj = json.loads(record.read_text())
    key = "repaudit.factor.serving.dtype"
    stated = json.loads(obj["eval_library"]["additional_details"][key])
    assert stated["value"] == "float32" and stated["source"] == "recorded"
    obj["eval_library"]["additional_details"][key] = json.dumps({**stated, "value": "bfloat16"})
    record.write_text(json.dumps(obj))
    detect._cache.clear()
    line = _one_error_line(runner.invoke(app, ["compare", str(tmp_path / "bad3"), str(OURS)]))
    assert key in line and "changed after export" in line


def test_what_export_cannot_know_is_asked_for(tmp_path):
    run = FIX / "repaudit_runs" / "gsm8k_2docs.json"
    res = runner.invoke(app, ["export", str(run), "-o", str(tmp_path / "o")])
    assert "--evaluator-relationship" in _one_error_line(res, 2)
    res = runner.invoke(app, ["export", str(run), "--evaluator-relationship", "other", "-o", str(tmp_path / "o")])
    assert "needs --organization" in _one_error_line(res, 2)  # EEE's source_organization_name: never ""
    for blank in ("", "  "):
        res = runner.invoke(app, ["export", str(run), "--evaluator-relationship", "other", "--organization", blank,
                                  "-o", str(tmp_path / "o")])
        assert "needs --organization" in _one_error_line(res, 2)
    org = ["--evaluator-relationship", "other", "--organization", "repaudit tests"]
    res = runner.invoke(app, ["export", str(run), *org, "-o", str(tmp_path / "o")])
    assert "records 'SmolLM2-135M-Instruct' as its model, not a Hugging Face id: pass --model-id" in \
        _one_error_line(res)
    res = runner.invoke(app, ["export", str(run), *org, "--model-id", "flat", "-o", str(tmp_path / "o")])
    assert "names no organisation: pass --developer" in _one_error_line(res)
    assert not (tmp_path / "o").exists()
    res = runner.invoke(app, ["export", str(run), *org, "--model-id", "flat", "--developer", "someone",
                              "-o", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "data" / "gsm8k" / "someone" / "flat").is_dir()
    record = json.loads(next((tmp_path / "o").rglob("*.json")).read_text())
    assert record["source_metadata"]["source_organization_name"] == "repaudit tests"


def test_a_repaudit_runs_record_replays_as_the_run_and_others_say_why_not(converted):
    from repaudit.audit.replay import load_replay_source
    from repaudit.importers.runfile import config_from_record
    from repaudit.run.records import read_record

    detect._cache.clear()
    replay = load_replay_source(OURS, None, None, None)
    assert replay.config == config_from_record(read_record(FIX / "repaudit_runs" / "arc_easy_3docs.json"), None)
    with pytest.raises(Exception, match="cannot be replayed: it is a record of another converter"):
        load_replay_source(converted / "s1", None, None, None)


def test_what_is_not_a_run_is_named(converted, tmp_path):
    sidecar = next((converted / "s1").rglob("*.jsonl"))
    res = runner.invoke(app, ["compare", str(sidecar), str(OURS)])
    assert "is JSON lines whose first line is one Every Eval Ever sidecar row" in _one_error_line(res)
    both = tmp_path / "both"
    for run in ("s1", "s3"):
        shutil.copytree(converted / run / "data", both / "data", dirs_exist_ok=True)
    res = runner.invoke(app, ["compare", str(both), str(OURS)])
    assert "holds two records of task 'arc_easy'" in _one_error_line(res)


def test_a_folder_of_one_runs_records_is_one_run(tmp_path):
    run = FIX / "lmeval" / "pythia__160m-5shot_step143000.json"
    assert _export([run], tmp_path).exit_code == 0
    detect._cache.clear()
    orig, back = detect.load_run(run), detect.load_run(tmp_path)
    assert len(back.tasks) == len(orig.tasks) > 50 and len(list(tmp_path.rglob("*.json"))) == len(orig.tasks)
    assert dataclasses.asdict(back) == {**dataclasses.asdict(orig), "path": str(tmp_path)}


def test_two_converters_sample_ids_pair_by_doc_hash(converted, tmp_path):
    """Another converter's sample ids ('arc_easy_12', in another order): docs pair by metadata.doc_hash."""
    record, sidecar = _copy(converted / "s3", tmp_path / "s3")
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()][::-1]
    for r in rows:
        r["sample_id"] = f"arc_easy_{r['sample_id']}"
    sidecar.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _reseal(record, sidecar)
    detect._cache.clear()
    c = api.compare(converted / "s1", tmp_path / "s3", n_boot=200)
    assert {(f.metric, f.doc_id) for f in c.flips} == S1_S3_FLIPS
    assert any("paired with A's by doc_hash (570 paired" in n for n in c.notes), c.notes


def test_a_damaged_record_in_a_folder_is_an_error_not_a_missing_task(tmp_path):
    run = FIX / "lmeval_public_extra" / "stabjp__open-calm-1b_result.json"
    assert _export([run], tmp_path / "x").exit_code == 0
    records = sorted((tmp_path / "x").rglob("*.json"))
    assert len(records) == 6
    records[2].write_text(records[2].read_text()[:100])
    detect._cache.clear()
    res = runner.invoke(app, ["compare", str(tmp_path / "x"), str(run)])
    assert f"'{records[2]}': is not valid JSON" in _one_error_line(res)
    for r in records[:2] + records[3:]:
        r.unlink()  # the damaged record alone in its folder: no run there
    detect._cache.clear()
    assert "holds 0 results files" in _one_error_line(runner.invoke(app, ["compare", str(tmp_path / "x"), str(run)]))


def test_a_record_of_eees_converter_comes_back_the_same_and_keeps_its_library(converted, tmp_path):
    detect._cache.clear()
    res = runner.invoke(app, ["export", str(converted / "s3"), "--evaluator-relationship", "third_party",
                              "--organization", "repaudit tests", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "model id 'models/SmolLM2-135M-Instruct' is the run's recorded model name" in res.stderr
    a, b = detect.load_run(converted / "s3"), detect.load_run(tmp_path)
    assert (a.source, a.factors, a.tasks) == (b.source, b.factors, b.tasks)
    record = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert (record["eval_library"]["name"], record["eval_library"]["version"]) == ("lm_eval", "0.4.13")


def test_an_exported_interval_stays_inside_the_metrics_range(tmp_path):
    """On 3 docs the raw normal interval of acc_norm (0.33 ± 0.65) reaches below 0; the export cuts it to the
    metric's range and says so in the method."""
    assert _export([FIX / "repaudit_runs" / "arc_easy_3docs.json"], tmp_path / "x").exit_code == 0
    (record,) = [p for p in (tmp_path / "x").rglob("*.json")]
    cut = 0
    for r in json.loads(record.read_text())["evaluation_results"]:
        ci, cfg = r["score_details"]["uncertainty"]["confidence_interval"], r["metric_config"]
        assert cfg["min_score"] <= ci["lower"] <= r["score_details"]["score"] <= ci["upper"] <= cfg["max_score"]
        cut += "cut to the metric's range" in ci["method"]
    assert cut >= 1


# --- Every Eval Ever 0.1.x and 0.2.x: the records on public GitHub (tests/realworld) ---------------------------
LEGACY_CASES = ["eee010_helm_instruct_claude_vs_gpt35", "eee_010_vs_020_helm_instruct_claude",
                "eee020_hfopenllm_yi34b_32k_vs_chat16k", "eee022_hal_corebench_opus41_default_vs_high",
                "eee020_ai2arc_inspect_qwen_vs_sonnet"]


@pytest.mark.parametrize("case", LEGACY_CASES)
def test_a_legacy_eee_pair_compares_as_its_truth_says(case, tmp_path):
    folder = CASES / case
    truth = json.loads((folder / "truth.json").read_text())
    cmp = compare_json(folder / truth["a"], folder / truth["b"], tmp_path)
    for side in "ab":
        version = (truth.get("harness") or truth[f"harness_{side}"]).removeprefix("Every Eval Ever ")
        assert cmp[side]["source"].startswith(f"EEE {version}: "), cmp[side]
    shared = [t for t, m in truth["scores"].items() if any(v["a"] is not None and v["b"] is not None
                                                              for v in m.values())]
    assert sorted(cmp["tasks"]["shared"]) == sorted(shared)
    assert set(cmp["tasks"]["only_a"]) == {t for t, m in truth["scores"].items()
                                           if all(v["b"] is None for v in m.values())}
    for task in shared:
        check_settings(cmp, task, truth, task)
        check_scores(cmp, task, truth["scores"][task])
        check_docs(cmp, task, None, {})
    files = {s: {"": json.loads((folder / truth[s]).read_text())} for s in "ab"}
    assert recorded_values_are_in_the_files(cmp, files) >= len(shared) * 2
    assert all(r["direction"] == "higher" for r in cmp["scores"])  # metric_config.lower_is_better false


def test_a_declared_range_and_unit_give_an_unknown_metric_its_scale(tmp_path):
    """EEE 0.1.0's helm_instruct scores declare 0–5 (harmlessness) and 0–1 (win rate): the win rate is a proportion
    shown in points, the 0–5 score keeps its range (no 'unit and scale are unknown'), both higher-is-better."""
    folder = CASES / "eee010_helm_instruct_claude_vs_gpt35"
    cmp = compare_json(folder / "a", folder / "b", tmp_path)
    rows = {r["task"]: r for r in cmp["scores"]}
    assert rows["Mean win rate"]["kind"] == "proportion" and rows["Mean win rate"]["a_reported"] == 61.1
    harm = rows["Vicuna - Harmlessness"]
    assert harm["kind"] == "score" and harm["direction"] == "higher" and "declares its range 0–5" in harm["note"]
    assert "unit and scale are unknown" not in harm["note"]


def _legacy_with_sidecar(tmp_path: Path, scores: list[float], reseal: bool = True) -> Path:
    """The 0.2.0 ai2_arc record of the corpus with the 3-row sidecar it names, written (EEE never published it)."""
    src = next((CASES / "eee020_ai2arc_inspect_qwen_vs_sonnet" / "a").glob("*.json"))
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    agg = json.loads(src.read_text())
    rows = [{"schema_version": "0.2.0", "evaluation_id": agg["evaluation_id"], "model_id": "ollama/qwen2.5:0.5b",
             "evaluation_name": "choice", "sample_id": str(i + 1), "interaction_type": "single_turn",
             "input": {"raw": f"question {i}", "reference": "A", "choices": ["x", "y", "z"]},
             "output": {"raw": "A" if s else "B"}, "answer_attribution": [], "evaluation": {"score": s,
                                                                                            "is_correct": s == 1}}
            for i, s in enumerate(scores)]
    det = agg["detailed_evaluation_results"]
    sidecar = folder / det["file_path"]
    sidecar.parent.mkdir(parents=True)
    sidecar.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if reseal:
        det["checksum"] = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    (folder / src.name).write_text(json.dumps(agg))
    return folder / src.name


def test_a_legacy_sidecar_gives_per_doc_values_checked_against_the_aggregate(tmp_path):
    detect._cache.clear()
    run = detect.load_run(_legacy_with_sidecar(tmp_path / "ok", [1.0, 0.0, 0.0]))
    (task,) = run.tasks.values()
    assert sorted(task.docs) == [1, 2, 3] and task.docs[1].metrics == {"score": 1.0} and task.docs[2].key == "2"
    assert not run.warnings and not any("not beside" in n for n in run.notes)
    detect._cache.clear()
    off = detect.load_run(_legacy_with_sidecar(tmp_path / "off", [1.0, 1.0, 0.0]))
    assert len(off.warnings) == 1 and "the mean score of the sidecar's rows (0.666667) is not the reported score " \
                                       "(0.333333)" in off.warnings[0]
    res = runner.invoke(app, ["compare", str(off.path), str(run.path), "--format", "json"])
    assert res.exit_code == 0 and off.warnings[0] in json.loads(res.stdout)["warnings"]
    bad = _legacy_with_sidecar(tmp_path / "bad", [1.0, 0.0, 0.0], reseal=False)
    detect._cache.clear()
    assert "differs from the record's checksum" in _one_error_line(runner.invoke(app, ["compare", str(bad),
                                                                                     str(run.path)]))


def test_an_unknown_legacy_field_type_is_not_recorded_and_a_missing_score_is_one_error_line(tmp_path):
    src = next((CASES / "eee020_hfopenllm_yi34b_32k_vs_chat16k" / "a").glob("*.json"))
    agg = json.loads(src.read_text())
    agg["model_info"]["additional_details"] = ["not", "an", "object"]
    (tmp_path / "a.json").write_text(json.dumps(agg))
    detect._cache.clear()
    run = detect.load_run(tmp_path / "a.json")
    assert run.factors["BBH"]["serving.dtype"].source == "not_recorded"
    assert any("$.model_info.additional_details" in n and "treated as not recorded" in n for n in run.notes)
    del agg["evaluation_results"][2]["score_details"]["score"]
    (tmp_path / "b.json").write_text(json.dumps(agg))
    line = _one_error_line(runner.invoke(app, ["compare", str(tmp_path / "b.json"), str(src)]))
    assert "$.evaluation_results[2].score_details.score" in line and "EEE schema 0.2.0" in line


def _renamed_metric(converted: Path, run: str, dst: Path, declared: bool) -> Path:
    """EEE's conversion of ``run`` with its acc renamed to a metric repaudit does not know (``judge_score``),
    resealed; ``declared``: whether its metric_config keeps metric_unit and the bounds."""
    record, sidecar = _copy(converted / run, dst)
    agg = json.loads(record.read_text())
    for r in agg["evaluation_results"]:
        if r.get("evaluation_result_id") == "acc":
            r["evaluation_result_id"] = "judge_score"
            if not declared:  # the bounds are required (null: not provided), the unit is not
                r["metric_config"].update(min_score=None, max_score=None)
                r["metric_config"].pop("metric_unit", None)
    record.write_text(json.dumps(agg))
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    for r in rows:
        if r.get("evaluation_result_id") == "acc":
            r["evaluation_result_id"] = "judge_score"
    sidecar.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _reseal(record, sidecar)
    return dst


@pytest.mark.parametrize("declared", [True, False])
def test_a_0_3_0_records_metric_config_gives_an_unknown_metric_its_unit_and_range(converted, tmp_path, declared):
    """A metric repaudit's table does not know: with EEE's metric_unit 'proportion' and bounds 0–1 it is a
    proportion (points, a paired 0/1 test, a gate in points); without them its unit and scale are unknown."""
    a = _renamed_metric(converted, "s1", tmp_path / "a", declared)
    b = _renamed_metric(converted, "s3", tmp_path / "b", declared)
    detect._cache.clear()
    c = api.compare(a, b, n_boot=200)
    row = next(r for r in c.scores if r.metric == "judge_score")
    assert row.direction == "higher"  # lower_is_better false
    if declared:
        assert row.kind == "proportion" and row.unit == "pts" and row.method == "paired_score"
        assert "unknown" not in row.note and row.right_to_wrong == 6
        res = runner.invoke(app, ["gate", str(a), str(b), "--max-drop", "5", "--n-boot", "200"])
        assert res.exit_code in (0, 1), res.output  # GO or NO-GO in points, not INCONCLUSIVE on an unknown scale
    else:
        assert row.kind == "score" and "its unit and scale are unknown" in row.note


@pytest.mark.parametrize("run", [
    CASES / "eee010_helm_instruct_claude_vs_gpt35" / "a", CASES / "eee020_hfopenllm_yi34b_32k_vs_chat16k" / "a",
    CASES / "helm_vs_eee010_hellaswag_pythia1b" / "eee",
    next(p for p in (CASES / "helm_simple_safety_v3_claude35_vs_gpt4o").iterdir() if p.is_dir())],
    ids=lambda p: p.parent.name)
def test_a_legacy_record_and_a_helm_run_export_as_0_3_0_and_come_back_the_same(run, tmp_path):
    """0.3.0 stays the export format: records of 0.1.x/0.2.x and HELM runs are written as 0.3.0 records (valid
    against EEE's schemas) and read back as the same run, declared units and ranges included."""
    detect._cache.clear()
    res = runner.invoke(app, ["export", str(run), "--evaluator-relationship", "third_party", "--organization",
                              "repaudit tests", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    v = _validators()
    for f in tmp_path.rglob("*.json"):
        obj = json.loads(f.read_text())
        assert obj["schema_version"] == "0.3.0" and not list(v["aggregate"].iter_errors(obj)), f
    a, b = detect.load_run(run), detect.load_run(tmp_path)
    assert (a.source, a.factors, a.tasks, a.notes) == (b.source, b.factors, b.tasks, b.notes)


def _legacy_pair(tmp_path: Path, ids_a: list[str], ids_b: list[str], row_name: str, uncertainty: dict | None = None):
    """Two EEE 0.2.0 records with JSONL sidecars whose rows name their samples by string ids (and their evaluation by
    the benchmark's name, as EEE's Inspect conversion does, while the result is named by its scorer)."""
    import random

    out = []
    for side, ids, seed in (("a", ids_a, 1), ("b", ids_b, 2)):
        r = random.Random(seed)
        folder = tmp_path / side
        folder.mkdir()
        rows = [{"schema_version": "0.2.0", "evaluation_id": f"ev-{side}", "evaluation_name": row_name,
                 "sample_id": i, "interaction_type": "single_turn",
                 "input": {"raw": f"question {i}", "reference": "A", "choices": ["A", "B"]}, "output": {"raw": "A"},
                 "evaluation": {"score": float(r.random() < 0.6)}} for i in ids]
        data = "".join(json.dumps(x) + "\n" for x in rows)
        (folder / f"{side}_samples.jsonl").write_text(data)
        score = sum(x["evaluation"]["score"] for x in rows) / len(rows)
        details = {"score": score, **({"uncertainty": uncertainty} if uncertainty else {})}
        agg = {"schema_version": "0.2.0", "evaluation_id": f"ev-{side}", "model_info": {"id": f"org/model-{side}"},
               "evaluation_results": [{"evaluation_name": "choice", "metric_config": {
                   "evaluation_description": "accuracy", "lower_is_better": False, "min_score": 0, "max_score": 1},
                   "score_details": details}],
               "detailed_evaluation_results": {"format": "jsonl", "file_path": f"{side}_samples.jsonl",
                                               "hash_algorithm": "sha256", "total_rows": len(rows),
                                               "checksum": hashlib.sha256(data.encode()).hexdigest()}}
        (folder / f"1111111{'1' if side == 'a' else '2'}-1111-1111-1111-111111111111.json").write_text(json.dumps(agg))
        out.append(folder)
    return out


def test_sidecar_rows_on_different_doc_sets_pair_on_their_shared_sample_ids(tmp_path):
    """Two records whose rows cover overlapping sample sets (q1–q30 and q11–q40) and name their evaluation by the
    benchmark: the 20 shared samples are paired by id and their flips listed (named by sample id); the others are
    counted apart — never "the doc sets cannot be told"."""
    a, b = _legacy_pair(tmp_path, [f"q{i}" for i in range(1, 31)], [f"q{i}" for i in range(11, 41)], "ai2_arc")
    c = api.compare(a, b, n_boot=200)
    row = c.scores[0]
    assert row.method == "paired_score" and row.n_paired == 20 and row.subset, row
    (ag,) = c.docs
    assert (ag.n_a, ag.n_b, ag.n_shared, ag.prompt_hash_equal) == (30, 30, 20, 20)
    flipped = {f.key for f in c.flips}
    assert flipped and flipped <= {f"q{i}" for i in range(11, 31)}
    assert row.right_to_wrong + row.wrong_to_right == len(flipped)


def test_an_eee_records_uncertainty_gives_the_unpaired_interval_and_names_how(tmp_path):
    """A record without per-doc values but with its uncertainty: a standard error is used as it is; a confidence
    interval (bounds, or a ± half-width around 0 as EEE's Global MMLU Lite scrape writes it) gives half-width / z at
    its level — 95 % where the record states none, which the row says; a recorded num_samples is the doc count."""
    from repaudit.importers.eee.uncertainty import Stated, stderr_of

    se, how = stderr_of(Stated(score=0.88, lower=-0.0318, upper=0.0318, ci_method="unknown"), "x")
    assert se == pytest.approx(0.0318 / 1.959964, rel=1e-6) and "±0.0318" in how and "95 % assumed" in how
    se, how = stderr_of(Stated(score=0.3333, lower=0.0, upper=0.9867, level=0.9), "x")
    assert se == pytest.approx((0.9867 - 0.3333) / 1.644854, rel=1e-5) and "assumed" not in how and "90 %" in how
    assert stderr_of(Stated(score=0.5, standard_error=0.05), "x") == (0.05, "")
    assert stderr_of(Stated(score=0.5, standard_deviation=0.5, num_samples=100), "x")[0] == pytest.approx(0.05)
    assert stderr_of(Stated(score=0.5, lower=0.6, upper=0.7), "x") == (None, "")  # the score outside its bounds
    unc = {"confidence_interval": {"lower": -0.0877, "upper": 0.0877}, "num_samples": 120}
    a, b = _legacy_pair(tmp_path, [f"q{i}" for i in range(1, 31)], [f"q{i}" for i in range(1, 31)], "choice", unc)
    for side in (a, b):
        for p in side.glob("*_samples.jsonl"):
            p.unlink()  # aggregates only
    c = api.compare(a, b, n_boot=200)
    row = c.scores[0]
    assert row.method in ("unpaired_stderr", "unpaired_newcombe") and row.n_a == row.n_b == 120, row
    assert "confidence interval" in row.note and "95 % assumed" in row.note
