"""The lm-eval importer misses no factor its files record (real public files, tests/fixtures/lmeval)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repaudit.audit.compare import compare, diff_factors, load_run
from repaudit.boundary import InputError, read_json, validate
from repaudit.importers.lmeval.record import task_record
from repaudit.importers.lmeval.schema import LmevalResults
from repaudit.report.compare import render_latex, render_markdown

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lmeval"
PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"


def _factors(name: str, task: str | None = None):
    path = FIXTURES / name
    res, _ = validate(LmevalResults, read_json(path), path)
    return task_record(res, task or next(iter(res.results)))


def test_lmeval_03_num_fewshot_is_read():
    f = _factors("lm-evaluation-harness__llama-7B_gsm8k_8-shot.json")
    assert f.value("fewshot.num_fewshot") == 8 and f["fewshot.num_fewshot"].key == "config.num_fewshot"
    pythia = load_run(FIXTURES / "pythia__160m-5shot_step143000.json")
    assert {f.value("fewshot.num_fewshot") for f in pythia.factors.values()} == {5}
    assert len(pythia.factors) == 65


def test_every_model_args_key_is_compared():
    base = _factors("lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json")
    peft = _factors("lm-evaluation-harness__asdiv-peft-epoch_20__results_2024-08-21T04-37-55.218014.json")
    assert base.value("model.args") == {} and peft.value("model.args")["peft"].startswith("../prompt-pursuit/")
    rows = {r.path: r for r in diff_factors("asdiv", base, peft)}
    assert rows["model.args"].status == "differs"
    assert rows["model.name"].status == "same"  # same base model: only the adapter differs


def test_model_sha_is_read_and_an_empty_one_is_unknown(tmp_path):
    a = _factors("lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json")
    b = _factors("lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486.json")
    assert a.value("model.sha").startswith("e1945c40cd546c78e41") and b.value("model.sha").startswith("13d1530e")
    rows = {r.path: r.status for r in diff_factors("t", a, b)}
    assert rows["model.sha"] == "differs"
    local = json.loads((FIXTURES / "lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json").read_text())
    local["config"]["model_sha"] = ""  # a local model folder: lm-eval writes ""
    p = tmp_path / "results_2024-08-21T03-44-09.494230.json"
    p.write_text(json.dumps(local))
    c = load_run(p).factors["asdiv"]
    assert c.source("model.sha") == "not_recorded"
    assert {r.path: r.status for r in diff_factors("asdiv", a, c)}["model.sha"] == "unknown"


def test_hardware_an_error_string_does_not_record_is_unknown_not_same():
    f = _factors("lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486.json")
    assert not [p for p in f if p.startswith("hardware.")], [p for p in f if p.startswith("hardware.")]
    rows = [r for r in diff_factors("t", f, f) if r.group == "hardware"]
    assert not rows  # nothing recorded: nothing compared, nothing "same"
    other = _factors("lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json")
    rows = {r.path: r.status for r in diff_factors("t", f, other) if r.group == "hardware"}
    assert rows and set(rows.values()) == {"unknown"}
    assert other.known("hardware.cpu_model") and other.known("hardware.gpus")


def test_zero_shot_runs_with_different_limits_agree_on_fewshot_ids(tiny_model, shared_data, lmeval_runs, tmp_path):
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=5, batch_size=4,
                        cache_dir=tmp_path))
    write_record(rec, tmp_path / "r.json")
    c = compare(load_run(tmp_path / "r.json"), load_run(lmeval_runs / "s1"), n_boot=100)
    assert "fewshot.ids_sha256" not in {f.path for f in c.differing()}
    assert "data.limit" in {f.path for f in c.differing()}  # the limit itself does differ


def test_runs_that_share_no_metric_say_so():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    # lm-eval 0.3's gsm8k 'acc' is 0.4's 'exact_match,strict-match': paired by the rename, said in a note
    old = load_run(FIXTURES / "lm-evaluation-harness__llama-7B_gsm8k_8-shot.json")
    new = load_run(PUBLIC / "model_evals__Meta-Llama-3-8B-Instruct__gsm8k.json")
    c = compare(old, new, n_boot=100)
    assert [r.metric for r in c.scores] == ["exact_match,strict-match"] and c.scores[0].a_name == "gsm8k acc"
    assert any("'acc' compared as 'exact_match,strict-match'" in n for n in c.notes)
    # two 0.4 files whose one task is paired by hand but share no metric: said, without blaming versions
    a = load_run(PUBLIC / "lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json", [])
    b = load_run(PUBLIC / "lm-evaluation-harness__asdiv-peft-epoch_20__results_2024-08-21T04-37-55.218014.json")
    c = compare(a, b, n_boot=100, task_map={"asdiv_cot_llama": "asdiv"})
    assert c.scores == []
    note = next(n for n in c.notes if "no metric is reported by both runs" in n)
    assert "A: acc;" in note and "exact_match,strict-match" in note and "versions" not in note
    assert "No score row" in render_markdown(c)


def test_a_results_file_of_any_name_is_found_in_a_directory(lmeval_runs, tmp_path):
    src = next((lmeval_runs / "s1").rglob("results_*.json"))
    (tmp_path / "out" / "model").mkdir(parents=True)
    shutil.copy(src, tmp_path / "out" / "model" / "result.json")
    (tmp_path / "out" / "notes.json").write_text('{"hello": 1}')  # a JSON file that is not a results file
    run = load_run(tmp_path / "out")
    assert run.path.endswith("result.json") and "arc_easy" in run.tasks


def test_task_less_lighteval_and_report_files_are_refused_by_what_they_are(tmp_path):
    lighteval = tmp_path / "results_2025.json"
    lighteval.write_text(json.dumps({"config_general": {"model_name": "m"}, "results": {"all": {"acc": 0.5}},
                                     "versions": {}, "config_tasks": {}, "summary_tasks": {}}))
    with pytest.raises(InputError, match=r"\$\.results: holds no task, only the 'all' aggregate"):
        load_run(lighteval)
    report = tmp_path / "c.json"
    report.write_text(json.dumps({"a": {}, "b": {}, "factors": [], "scores": [], "flips": [], "docs": []}))
    with pytest.raises(InputError, match="is a repaudit compare report"):
        load_run(report)


def test_latex_caption_names_the_method_of_unpaired_rows(lmeval_runs):
    res = next((lmeval_runs / "s1").rglob("results_*.json"))
    c = compare(load_run(res, []), load_run(res, []), n_boot=100)  # no samples: unpaired rows
    tex = render_latex(c)
    assert "unpaired" in tex and "paired 95\\,\\% bootstrap interval over the shared docs}" not in tex


def test_every_public_results_file_validates_with_at_most_notes():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    unread, read = set(), {}
    for p in sorted(PUBLIC.glob("*.json")):
        run = load_run(p)
        # a note of a value dropped as not recorded, or of a samples file beside it under another name than
        # lm-eval's (this folder holds many runs' files): read as a task's by content, or not read and said so
        assert run.tasks and all("treated as not recorded" in n or "lm-eval samples of no task" in n
                                 or "(not lm-eval's name for it) read as the task's" in n for n in run.notes), p
        unread |= {(p.name, n.split("'")[1]) for n in run.notes if "lm-eval samples of no task" in n}
        assert not any(str(PUBLIC) in n for n in run.notes if "samples" in n)  # files named, not paths
        read.update((p.name, n.split("'")[1]) for n in run.notes if "read as the task's" in n)
    # the two renamed winogrande files of this folder: one is output/w.json's (its 2 docs' mean and stderr are the
    # reported ones), and Qwen2.5's winogrande (1,267 docs) is told that neither is known to be its own
    assert read == {"lm-evaluation-harness__output__w.json": "lm-evaluation-harness__output___winogrande.jsonl"}
    assert {Path(f).name for run, f in unread if "Qwen2.5" in run} == {
        "lm-evaluation-harness__output___winogrande.jsonl",
        "lm-evaluation-harness__output__pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl"}, unread


REALWORLD = Path(__file__).resolve().parent / "realworld" / "cases"


def test_defaults_come_from_the_backend_class_the_run_used():
    """A vLLM run's unrecorded settings are VLLM's defaults (revision None, its own dtype 'auto', no padding side),
    cited from lm_eval/models/vllm_causallms.py — never HFLM's; an HF run keeps HFLM's."""
    vllm = load_run(REALWORLD / "lmeval_vllm_nl2foam_sft_vs_qwen3" / "a")
    rec = next(iter(vllm.factors.values()))
    assert rec.value("serving.backend") == "vllm"
    for path in ("model.revision", "model.trust_remote_code", "serving.dtype", "generation.do_sample"):
        v = rec[path]
        assert v.source == "default" and "vllm_causallms.py VLLM" in v.key and "HFLM" not in v.key, (path, v)
    assert rec["model.revision"].value is None and rec["serving.padding_side"].source != "default"
    hf = load_run(REALWORLD / "lmeval_negotiationtom_rerun_h100_l40s" / "a")
    rec = next(iter(hf.factors.values()))
    assert rec.value("serving.backend") == "hf" and "HFLM.__init__(trust_remote_code=False)" in \
        rec["model.trust_remote_code"].key


def test_tokenizer_special_token_ids_are_recorded_and_compared(tmp_path):
    """tokenizer_*_token's ids and eot_token_id are facts of the run: an id written as a string in one file and an
    int in the other is one value (the Qwen pair), and ids that differ are a difference compare shows."""
    qa = load_run(REALWORLD / "lmeval_qwen25_7b_dir043_vs_dir048" / "a")
    qb = load_run(REALWORLD / "lmeval_qwen25_7b_dir043_vs_dir048" / "b")
    ra, rb = next(iter(qa.factors.values())), next(iter(qb.factors.values()))
    assert ra.value("tokenizer.eos_token_id") == rb.value("tokenizer.eos_token_id") == 151643
    assert ra["tokenizer.eot_token_id"].key == "eot_token_id" and ra.value("tokenizer.bos_token_id") is None
    src = next((REALWORLD / "lmeval_vllm_nl2foam_sft_vs_qwen3" / "a").glob("*.json"))
    obj = json.loads(src.read_text())
    obj.update(tokenizer_eos_token=["<|endoftext|>", "151643"], eot_token_id=151643)
    other = tmp_path / "results_b.json"
    other.write_text(json.dumps(obj))
    c = compare(load_run(src), load_run(other), n_boot=100)
    differ = {f.path for f in c.differing()}
    assert {"tokenizer.eos_token_id", "tokenizer.eot_token_id", "tokenizer.eos_token"} <= differ, differ
