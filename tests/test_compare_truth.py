"""`compare` tells the truth on real files made elsewhere (../shared/lmeval_public): units and directions,
doc sets, task sets and renames, every recorded setting, paste-ready reports, the first screen."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from repaudit.audit.compare import compare, load_run
from repaudit.report.compare import render_latex, render_markdown, render_rich

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
#: real files from other public repositories, copied with their sources (fixtures/lmeval_public_extra/SOURCES.md)
EXTRA = Path(__file__).resolve().parent / "fixtures" / "lmeval_public_extra"
PYTHIA = "pythia__160m-5shot_step143000.json"
QWEN = "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"
LLAMA13_MMLU = "lm-evaluation-harness__llama-13B_mmlu_5-shot.json"
TQA_03 = "model_evals__Orpomis-Prime-7B-it__nous__truthfulqa.json"
TQA_04 = "model_evals__Meta-Llama-3-8B-Instruct__truthfulqa.json"
W_LIMIT2 = "lm-evaluation-harness__output__w.json"
WINO = "model_evals__Meta-Llama-3-8B-Instruct__winogrande.json"
RWKV = "lm-evaluation-harness__rwkv7-1.5B-world__results_2025-02-24T22-03-50.422486.json"
TGPRED = "lm-evaluation-harness__tgpred__results_2025-06-30T19-40-09.461247.json"
GSM_04 = "model_evals__Meta-Llama-3-8B-Instruct__gsm8k.json"
MAGICPIG = "MagicPiG__Hashllama3_gsm_K4L25__results.json"
ASDIV = "lm-evaluation-harness__asdiv__results_2024-08-21T03-44-09.494230.json"


@pytest.fixture(scope="module")
def public() -> Path:
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    return PUBLIC


def _cmp(public: Path, a: str, b: str, **kw):
    return compare(load_run(public / a), load_run(public / b), n_boot=500, **kw)


def _row(c, task, metric):
    return next(r for r in c.scores if r.task == task and r.metric == metric)


def _rich(c, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=False)
    render_rich(c, console)
    return console.file.getvalue()


# --- units and directions -------------------------------------------------------------------------------

def test_a_percentage_metric_is_not_multiplied_and_a_proportion_is(public):
    c = _cmp(public, TQA_04, TQA_04)
    rouge = _row(c, "truthfulqa_gen", "rouge2_max")
    assert rouge.kind == "percentage" and rouge.unit == "pts" and rouge.a == pytest.approx(27.5316, abs=1e-3)
    acc = _row(c, "truthfulqa_gen", "rouge2_acc")
    assert acc.kind == "proportion" and acc.a == pytest.approx(36.4749, abs=1e-3)
    diff = _row(c, "truthfulqa_gen", "rouge2_diff")
    assert diff.a == pytest.approx(-1.6711, abs=1e-3)  # a signed difference in ROUGE points, not ×100
    assert "2753" not in render_markdown(c)


def test_perplexity_keeps_its_unit_and_lower_is_better(public):
    c = _cmp(public, RWKV, QWEN)
    ppl = _row(c, "lambada_openai", "perplexity")
    assert (ppl.unit, ppl.direction, ppl.kind) == ("perplexity", "lower", "unbounded")
    assert ppl.a == pytest.approx(4.263, abs=1e-3) and ppl.b == pytest.approx(5.678, abs=1e-3)
    # the perplexity went up: that is worse, and the report says so in the metric's own unit
    assert ppl.verdict == "significant" and ppl.moved == "worse"
    text = _rich(c, 120)
    assert "perplexity↓" in text and "426" not in text
    assert json.loads(c.model_dump_json())["scores"][0]["unit"] in ("perplexity", "pts")


def test_an_error_metric_reads_lower_is_better_from_the_file(public):
    c = _cmp(public, TGPRED, TGPRED)
    mae = _row(c, "polymer_tg_prediction", "mae")
    assert mae.direction == "lower" and mae.kind == "error" and mae.verdict == "no verdict"  # mae is inf


def test_wikitext_perplexities_keep_their_units(tmp_path):
    c = _cmp(EXTRA, "ljal__stablelm2-zephyr-1_6b_wikitext_fp16.json", "ljal__stablelm2-zephyr-1_6b_wikitext_nf4.json")
    word, bpb = _row(c, "wikitext", "word_perplexity"), _row(c, "wikitext", "bits_per_byte")
    assert (word.a, word.b, word.unit) == (pytest.approx(16.848, abs=1e-3), pytest.approx(19.774, abs=1e-3),
                                           "perplexity")
    assert bpb.unit == "bits/byte" and bpb.a == pytest.approx(0.762, abs=1e-3) and bpb.direction == "lower"
    # corpus-level metrics without per-doc values or stderrs: no verdict, and the reason
    assert all(r.verdict == "no verdict" and "stderr" in r.note for r in c.scores)
    text = render_markdown(c)
    assert "1684" not in text and "76.20" not in text and "16.85" in text and "perplexity↓" in text


def test_a_fork_percentage_is_shown_as_reported(tmp_path):
    c = _cmp(EXTRA, "stabjp__open-calm-1b_result.json", "stabjp__open-calm-3b_result.json")
    em = _row(c, "jsquad-1.1-0.2", "exact_match")
    assert em.kind == "percentage" and em.a == pytest.approx(37.12, abs=0.01) and em.unit == "pts"
    mcc = _row(_cmp(EXTRA, "lmeval__llama-7B_glue_0-shot.json", "lmeval__llama-13B_glue_0-shot.json"), "cola", "mcc")
    assert mcc.unit == "correlation" and mcc.kind == "correlation"
    jcola = _row(_cmp(EXTRA, "kumapo__llama2-7b_result.jcola.json", "kumapo__llama2-7b-chat_result.jcola.json"),
                 "jcola-0.1-0.3", "mcc")
    assert jcola.a == pytest.approx(-0.0236, abs=1e-3)  # a negative correlation, not −2.36 "points"


# --- doc sets ---------------------------------------------------------------------------------------------

def test_a_limit_2_run_against_a_full_run_is_not_comparable(public):
    c = _cmp(public, W_LIMIT2, WINO)
    row = _row(c, "winogrande", "acc")
    assert row.verdict == "not comparable" and row.ci_low is None
    assert "limit 2" in row.note and "whole split" in row.note
    assert c.summary.not_comparable == 1 and c.summary.within_noise == 0


def test_a_limit_2_run_with_stderr_0_gets_no_verdict():
    c = _cmp(EXTRA, "ljal__Mixtral-8x7B_mrpc_limit2_r0.000.json", "lmeval__llama-7B_glue_0-shot.json")
    f1 = _row(c, "mrpc", "f1")
    assert (f1.a, f1.verdict) == (0.0, "not comparable") and "limit 2" in f1.note and f1.ci_low is None
    c = _cmp(EXTRA, "ljal__Mixtral-8x7B_mrpc_limit2_r0.000.json", "ljal__Mixtral-8x7B_mrpc_limit2_r0.125.json")
    assert all(r.verdict == "no verdict" and "stderr of 0" in r.note for r in c.scores)


def test_a_subset_score_is_labelled_next_to_the_files_own(tiny_model, shared_data, lmeval_runs, tmp_path):
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=10, batch_size=4,
                        cache_dir=tmp_path))
    write_record(rec, tmp_path / "r.json")
    c = compare(load_run(tmp_path / "r.json"), load_run(lmeval_runs / "s1"), n_boot=200)
    acc = _row(c, "arc_easy", "acc")
    assert acc.subset and acc.n_paired == 10 and acc.n_b == 570
    assert acc.b_reported == pytest.approx(52.28, abs=0.01) and acc.b != pytest.approx(acc.b_reported)
    assert acc.verdict == "no verdict" and "floor" in acc.note  # 10 docs: below the documented floor
    text = render_markdown(c)
    assert "B 52.28 (570 docs)" in text and "on the 10 docs both runs have" in text


# --- task sets and renames --------------------------------------------------------------------------------

def test_tasks_on_one_side_are_listed_in_every_format(public):
    c = _cmp(public, PYTHIA, QWEN)
    assert set(c.tasks.only_a) == {"wsc", "logiqa"}
    assert "hellaswag" in c.tasks.only_b and set(c.tasks.groups_only_b) >= {"mmlu", "mmlu_stem"}
    data = json.loads(c.model_dump_json())
    assert data["tasks"]["only_a"] and data["tasks"]["groups_only_b"]
    for text in (render_markdown(c), render_latex(c), _rich(c, 120)):
        assert "only in A (2)" in text and "logiqa" in text


def test_mmlu_0_3_and_0_4_pair_in_one_command(public):
    c = _cmp(public, LLAMA13_MMLU, QWEN)
    assert len({r.task for r in c.scores}) == 57 and all(r.task.startswith("mmlu_") for r in c.scores)
    assert _row(c, "mmlu_anatomy", "acc").a_name == "hendrycksTest-anatomy acc"
    assert any("57 task(s) of A paired by lm-eval's rename" in n for n in c.notes)
    assert not c.tasks.only_a and c.summary.adjust == "holm"
    assert all(r.p_adjusted is not None and r.p_adjusted >= r.p_value for r in c.scores)
    # group rows of B are listed apart, never counted with the subtasks they aggregate
    assert "mmlu" in c.tasks.groups_only_b and c.summary.rows == 57


def test_truthfulqa_mc_0_3_splits_into_the_0_4_tasks(public):
    c = _cmp(public, TQA_03, TQA_04)
    assert {(r.task, r.metric) for r in c.scores} == {("truthfulqa_mc1", "acc"), ("truthfulqa_mc2", "acc")}
    assert _row(c, "truthfulqa_mc1", "acc").a == pytest.approx(29.62, abs=0.01)  # 0.3's mc1, in points
    assert _row(c, "truthfulqa_mc1", "acc").a_name == "truthfulqa_mc mc1"


def test_versioned_fork_names_pair_with_plain_ones_and_the_prompt_version_is_a_factor():
    c = _cmp(EXTRA, "stabjp__stablelm-jp-3b_result_template-0.1.json",
             "stabjp__stablelm-jp-3b_result_template-0.2.json")
    tasks = {r.task for r in c.scores}
    assert {"jnli", "jcommonsenseqa", "jsquad"} <= tasks  # 'jnli' ↔ 'jnli-1.1-0.2', both versioned ↔ each other
    pv = {f.task: (f.a.value, f.b.value) for f in c.factors if f.path == "prompt.prompt_version"
          and f.status != "same"}
    assert pv["jcommonsenseqa"] == ("0.1", "0.2")
    assert any("versioned lm-eval 0.3-fork name" in n for n in c.notes)
    assert _row(c, "jcommonsenseqa", "acc").moved == "worse"  # the template moved it 23 points


def test_pair_tasks_takes_patterns(public):
    a, b = load_run(public / QWEN), load_run(public / LLAMA13_MMLU)
    c = compare(a, b, n_boot=200, task_map={"hendrycksTest-*": "mmlu_*"})  # B pattern = A pattern
    assert len({r.task for r in c.scores}) == 57
    assert any("--pair-tasks hendrycksTest-*=mmlu_*: 57 task(s)" in n for n in c.notes)


# --- what the files record ---------------------------------------------------------------------------------

def test_backend_aliases_and_function_spellings_compare_equal_with_a_note(public):
    c = _cmp(public, PYTHIA, QWEN)
    name = next(f for f in c.factors if f.path == "serving.backend")
    assert (name.a.value, name.b.value, name.status) == ("hf-causal", "hf", "same") and "one backend" in name.note
    few = next(f for f in c.factors if f.path == "fewshot.num_fewshot")
    assert (few.a.value, few.status) == (5, "differs")  # 0.3's config.num_fewshot is read
    c = _cmp(public, W_LIMIT2, WINO)
    text = next(f for f in c.factors if f.path == "prompt.doc_to_text")
    assert text.a.value == "<function doc_to_text>" and text.b.value.startswith("def doc_to_text(")
    assert text.status == "same" and "by name" in text.note
    # --device not given in either file: B's environment shows GPUs (lm-eval then takes cuda: derived), A records
    # neither a device nor an environment nor its lm-eval version: not recorded
    device = next(f for f in c.factors if f.path == "serving.device")
    assert (device.b.value, device.b.source, device.status) == ("cuda", "derived", "unknown")
    assert "cuda when it is available" in device.b.key and device.a.source != "recorded"
    # a 0.3 fork's per-task n-shot list, in the order of its results
    run = load_run(EXTRA / "stabjp__open-calm-1b_result.json")
    assert [run.factors[t].value("fewshot.num_fewshot") for t in run.tasks] == [2, 3, 3, 3, 1, 0]


def test_model_args_show_the_keys_that_differ(public):
    c = _cmp(public, MAGICPIG, GSM_04)
    md = render_markdown(c)
    assert "K=4" in md and "K (not set)" in md
    assert "\n".join(_rich(c, 80).splitlines()[:12]).count("model: args") <= 1


def test_load_in_8bit_is_a_quantisation_factor():
    c = _cmp(EXTRA, "jlmfin__rinna-3.6b-ppo_8bit_result.json", "jlmfin__rinna-3.6b-ppo_fullbit_result.json")
    q = next(f for f in c.factors if f.path == "serving.quantization")
    assert (q.a.value, q.b.value, q.status) == ("bitsandbytes 8-bit", "none", "differs")
    assert q.a.source == "recorded" and q.b.source == "derived"  # none: derived from model_args having no such key
    assert "serving" in c.summary.differing and "quantization: bitsandbytes 8-bit" in render_markdown(c)
    assert "load_in_8bit" not in json.dumps([f.a.value for f in c.factors if f.path == "model.args"])  # not twice


def test_int_tokenizer_ids_of_lmeval_0_4_3_are_read():
    run = load_run(EXTRA / "czechfork__CSTinyLlama-1.2B_results_2024-07-15.json")
    assert run.factors["benczechmark_essay"].value("tokenizer.pad_token") == "[EOS]" and not run.notes
    assert run.tasks["benczechmark_essay"].higher_is_better == {"word_perplexity": False}


def test_int_tokenizer_ids_are_read(public, tmp_path):
    obj = json.loads((public / ASDIV).read_text())
    obj["tokenizer_pad_token"] = ["<|eot_id|>", 128009]  # the lm-eval 0.4.3-0.4.4 shape
    obj["tokenizer_eos_token"] = ["<|eot_id|>", 128009]
    (tmp_path / "r.json").write_text(json.dumps(obj))
    run = load_run(tmp_path / "r.json", [])
    assert run.factors["asdiv"].value("tokenizer.pad_token") == "<|eot_id|>" and not run.notes


def test_until_has_no_synthetic_element(public):
    run = load_run(public / GSM_04)  # 0.4.2: no tokenizer_* keys, so the EOS lm-eval appends is not recorded
    until = run.factors["gsm8k"].value("generation.until")
    assert until == ["Question:", "</s>", "<|im_end|>"]
    assert run.factors["gsm8k"]["generation.until"].key == "configs.gsm8k.generation_kwargs.until"


def test_other_recorded_settings_that_differ_are_shown(public):
    c = _cmp(public, PYTHIA, QWEN)
    other = {f.field: f for f in c.factors if f.group == "other"}
    assert other["config.bootstrap_iters"].a.value == 100000


# --- paste-ready reports and the first screen -----------------------------------------------------------

def test_reports_name_files_not_paths_and_use_human_labels(public):
    c = _cmp(public, PYTHIA, QWEN)
    for text in (render_markdown(c), render_latex(c)):
        assert str(PUBLIC) not in text and "paired_bootstrap" not in text and "unpaired_stderr" not in text
        assert "1\\.0" not in text
    assert "fewshot_from_eval_split" not in render_markdown(_cmp(public, ASDIV, ASDIV))


@pytest.mark.parametrize("width", [80, 120])
def test_the_first_screen_has_the_verdict_and_no_cut_cell(public, width):
    c = _cmp(public, PYTHIA, QWEN)
    lines = _rich(c, width).splitlines()
    assert any(line.startswith("Verdict:") for line in lines[:10])
    start = lines.index("Scores")
    table = lines[start + 1:lines.index(next(x for x in lines[start:] if x.startswith("[1]")))]
    table = [t for t in table if not t.startswith("Δ = B − A") and "percentage points" not in t]
    assert all(len(t) <= width for t in table)
    metrics = {r.metric for r in c.scores}
    cells = {w for t in table for w in t.split()}
    assert "…" not in "".join(table)
    assert metrics <= cells  # every metric name is whole
    for r in c.scores:  # every number of every row is whole
        assert f"{r.a:.2f}" in cells or f"{r.a:.4g}" in cells


def test_latex_of_a_multi_task_pair_compiles_inside_the_text_width(public, tmp_path):
    exe = shutil.which("pdflatex")
    if exe is None:
        pytest.skip("pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    c = _cmp(public, PYTHIA, QWEN)  # 63 tasks, long names (mmlu_high_school_government_and_politics)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs,longtable,array}\n"
                                      "\\begin{document}\n" + render_latex(c) + "\\end{document}\n")
    res = subprocess.run([exe, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout[-2000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert not re.findall(r"Overfull \\hbox \((\d+\.\d+)pt", log), re.findall(r"Overfull.*", log)[:5]


def test_another_prompt_format_is_a_factor_not_other_docs(tiny_model, shared_data, tmp_path):
    """Lettered prompts score " A" where lm-eval's score the answer text: the continuations differ, the docs
    (doc_hash) do not — the rows are compared, and the format is named."""
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=24, batch_size=8,
                  cache_dir=tmp_path)
    write_record(run(RunConfig(**common)), tmp_path / "a.json")
    write_record(run(RunConfig(prompt_format="lettered", **common)), tmp_path / "b.json")
    c = compare(load_run(tmp_path / "a.json"), load_run(tmp_path / "b.json"), n_boot=200)
    assert c.docs[0].doc_hash_equal == 24 and c.docs[0].choices_equal == 0
    assert all(r.verdict in ("within noise", "significant") for r in c.scores)
    assert "prompt.prompt_format" in {f.path for f in c.differing()}


def test_counts_take_the_plural_they_need():
    from repaudit.report.glossary import plural

    assert [plural(1, "batch"), plural(2, "batch"), plural(0, "doc"), plural(1, "doc")] == \
        ["1 batch", "2 batches", "0 docs", "1 doc"]
