"""`repaudit run` end to end on a tiny model and real ARC-Easy docs."""

from __future__ import annotations

import json

import pytest
from deepdiff import DeepDiff

from repaudit.run.records import read_record, write_record
from repaudit.run.runner import RunConfig, run


def _cfg(tiny_model, shared_data, tmp_path, **kw):
    base = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=12, batch_size=4,
                cache_dir=tmp_path / "cache")
    base.update(kw)
    return RunConfig(**base)


def test_run_record_is_complete_and_round_trips(tiny_model, shared_data, tmp_path):
    rec = run(_cfg(tiny_model, shared_data, tmp_path))
    assert rec.fingerprint.data.n_docs == 12 and len(rec.docs) == 12
    assert rec.fingerprint.settings.data.split == "validation"
    d = rec.docs[0]
    assert len(d.loglikelihoods) == len(d.choices) == len(d.is_greedy) == len(d.continuation_tokens)
    assert d.prediction == max(range(len(d.loglikelihoods)), key=lambda i: d.loglikelihoods[i])
    acc = [m for m in rec.metrics if m.name == "acc"][0]
    assert acc.value == pytest.approx(sum(x.metrics["acc"] for x in rec.docs) / 12)
    assert rec.fingerprint.backend.batch_sizes_used  # the sizes actually run are recorded
    path = tmp_path / "run.json"
    write_record(rec, path)
    again = read_record(path)
    assert again.fingerprint.digest() == rec.fingerprint_digest


def test_same_configuration_twice_is_bit_identical(tiny_model, shared_data, tmp_path):
    # separate caches, so the second run really recomputes
    a = run(_cfg(tiny_model, shared_data, tmp_path / "a"))
    b = run(_cfg(tiny_model, shared_data, tmp_path / "b"))
    assert b.timings.cached_batches == 0
    assert [d.loglikelihoods for d in a.docs] == [d.loglikelihoods for d in b.docs]
    assert a.fingerprint_digest == b.fingerprint_digest


def test_second_run_comes_from_the_cache(tiny_model, shared_data, tmp_path):
    a = run(_cfg(tiny_model, shared_data, tmp_path))
    b = run(_cfg(tiny_model, shared_data, tmp_path))
    assert a.timings.computed_batches > 0
    assert b.timings.computed_batches == 0 and b.timings.cached_batches == a.timings.computed_batches
    assert [d.loglikelihoods for d in a.docs] == [d.loglikelihoods for d in b.docs]


def test_float32_and_bfloat16_fingerprints_differ_only_in_dtype(tiny_model, shared_data, tmp_path):
    a = run(_cfg(tiny_model, shared_data, tmp_path, dtype="float32"))
    b = run(_cfg(tiny_model, shared_data, tmp_path, dtype="bfloat16"))
    diff = DeepDiff(a.fingerprint.canonical(), b.fingerprint.canonical())
    assert set(diff) == {"values_changed"}
    # the dtype asked, and the weights as run in it ("safetensors float32 loaded as bfloat16"): nothing else
    assert set(diff["values_changed"]) == {"root['settings']['serving']['dtype']",
                                           "root['model']['weights_format']['dtype']",
                                           "root['model']['weights_format']['summary']"}
    assert b.fingerprint.model.weights_format.dtype == "bfloat16"


def test_fewshot_ids_are_recorded_in_order_and_replayable(tiny_model, shared_data, tmp_path):
    a = run(_cfg(tiny_model, shared_data, tmp_path, num_fewshot=3, limit=6))
    for d in a.docs:
        assert len(d.fewshot_ids) == 3 and d.doc_id not in d.fewshot_ids
    assert len({tuple(d.fewshot_ids) for d in a.docs}) > 1  # random sampler: per-doc examples
    path = tmp_path / "a.json"
    write_record(a, path)
    b = run(_cfg(tiny_model, shared_data, tmp_path, fewshot_from=path, limit=6))
    assert [d.fewshot_ids for d in b.docs] == [d.fewshot_ids for d in a.docs]
    assert [d.prompt_hash for d in b.docs] == [d.prompt_hash for d in a.docs]
    c = run(_cfg(tiny_model, shared_data, tmp_path, fewshot_ids=[7, 3], limit=4))
    assert all(d.fewshot_ids == [7, 3] for d in c.docs)
    assert c.fingerprint.fewshot.sampler == "explicit" and c.fingerprint.settings.fewshot.num_fewshot == 2


def test_fewshot_seed_changes_selection_and_fingerprint(tiny_model, shared_data, tmp_path):
    a = run(_cfg(tiny_model, shared_data, tmp_path, num_fewshot=2, limit=5))
    b = run(_cfg(tiny_model, shared_data, tmp_path, num_fewshot=2, limit=5, fewshot_seed=7))
    assert [d.fewshot_ids for d in a.docs] != [d.fewshot_ids for d in b.docs]
    diff = DeepDiff(a.fingerprint.canonical(), b.fingerprint.canonical())
    assert set(diff["values_changed"]) == {"root['settings']['seeds']['fewshot_seed']",
                                           "root['fewshot']['ids_sha256']"}


@pytest.mark.parametrize("fmt", ["lettered", "cloze"])
def test_other_formats_change_prompt_and_template_hash(tiny_model, shared_data, tmp_path, fmt):
    a = run(_cfg(tiny_model, shared_data, tmp_path, limit=3))
    b = run(_cfg(tiny_model, shared_data, tmp_path, limit=3, prompt_format=fmt))
    assert a.fingerprint.prompt.template_sha256 != b.fingerprint.prompt.template_sha256
    assert all(x.prompt_hash != y.prompt_hash for x, y in zip(a.docs, b.docs))
    if fmt == "lettered":
        assert b.docs[0].choices[:2] == ["A", "B"]


def test_system_prompt_without_a_chat_template_is_lmevals(tiny_model, shared_data, lmeval_runs, tmp_path):
    """lm-eval 0.4.13 without a chat template: the system instruction and the task's description joined by
    maybe_delimit, then the prompt with no delimiter (ARC-Easy has no description, so "Be brief.Question: …"), as an
    lm-eval run with --system_instruction shows (bench/lmeval_mc2_runs.py). The contexts are lm-eval's own (s1)."""
    from repaudit.hashing import sha256_text

    rec = run(_cfg(tiny_model, shared_data, tmp_path, limit=2, system_prompt="Be brief."))
    contexts = {s["doc_id"]: s["arguments"]["gen_args_0"]["arg_0"]
                for s in map(json.loads, next((lmeval_runs / "s1").rglob("samples_*.jsonl")).open())}
    assert [d.prompt_hash for d in rec.docs] == [sha256_text("Be brief." + contexts[d.doc_id]) for d in rec.docs]


def test_chat_template_is_applied_and_recorded(tiny_model, shared_data, tmp_path):
    rec = run(_cfg(tiny_model, shared_data, tmp_path, limit=2, chat_template=True, system_prompt="Be brief."))
    assert rec.fingerprint.settings.prompt.chat_template and rec.fingerprint.prompt.chat_template_sha256
    assert rec.fingerprint.settings.prompt.system_prompt == "Be brief."


def test_mmlu_reports_subject_macro_and_micro(tiny_model, shared_data, tmp_path):
    rec = run(_cfg(tiny_model, shared_data, tmp_path, task="mmlu", limit=None, num_fewshot=1,
                   split="test", batch_size=8) .model_copy(update={"limit": 4}))
    variants = {m.variant for m in rec.metrics}
    assert variants == {"micro", "subject_macro"}
    assert rec.fingerprint.settings.fewshot.fewshot_split == "dev" and rec.fingerprint.fewshot.sampler == "first_n"
    assert rec.docs[0].fewshot_ids == [0]  # first dev doc of abstract_algebra


def test_gsm8k_generates_and_extracts(tiny_model, shared_data, tmp_path):
    rec = run(_cfg(tiny_model, shared_data, tmp_path, task="gsm8k", limit=2, num_fewshot=1, max_gen_toks=8))
    d = rec.docs[0]
    assert d.generation is not None and set(d.extracted) == {"strict-match", "flexible-extract"}
    assert {m.name for m in rec.metrics} == {"exact_match,strict-match", "exact_match,flexible-extract"}
    g, facts = rec.fingerprint.settings.generation, rec.fingerprint.generation
    assert g.max_gen_toks == 8 and "Question:" in g.until and facts.eos_token in g.until
    assert list(g.until) == facts.stops
    assert json.loads(rec.model_dump_json())["docs"][0]["generation"] == d.generation


def test_scoring_strategy_is_recorded_and_keeps_predictions(tiny_model, shared_data, tmp_path):
    a = run(_cfg(tiny_model, shared_data, tmp_path))
    b = run(_cfg(tiny_model, shared_data, tmp_path, scoring_strategy="shared_prefix"))
    assert b.fingerprint.settings.serving.scoring_strategy == "shared_prefix"
    assert a.fingerprint.settings.serving.scoring_strategy == "full_sequence"
    diff = DeepDiff(a.fingerprint.canonical(), b.fingerprint.canonical())
    # the batches actually run differ too: shared_prefix has one row per doc, not per request
    assert {k for k in diff["values_changed"] if "batch_sizes_used" not in k} == {
        "root['settings']['serving']['scoring_strategy']"}
    assert [d.prediction for d in a.docs] == [d.prediction for d in b.docs]
    assert 0 < b.timings.tokens_computed < a.timings.tokens_computed


def test_timings_say_what_loading_cost_and_hold_no_gpu_memory_on_the_cpu(tiny_model, shared_data, tmp_path):
    from pathlib import Path

    from repaudit.run.runner import BackendPool

    pool = BackendPool()
    a = run(_cfg(tiny_model, shared_data, tmp_path, limit=4), backends=pool)
    b = run(_cfg(tiny_model, shared_data, tmp_path, limit=4, batch_size=2), backends=pool)
    parts = a.timings.model_load_parts_s
    assert set(parts) == {"imports", "device_init", "tokenizer", "weights", "tokenizer_hash", "parameters",
                          "attention_probe", "other"} and min(parts.values()) >= 0
    assert sum(parts.values()) <= a.timings.model_load_s + 0.01  # parts of the load, rounded to ms
    # scoring by part: the parts add up to the backend's time, within the stage's, and forward_s is two of them
    from repaudit.backends.base import EVAL_PARTS

    ev = a.timings.eval_parts_s
    assert set(ev) == set(EVAL_PARTS) and min(ev.values()) >= 0 and sum(ev.values()) <= a.timings.eval_s + 0.01
    assert abs(ev["forward"] + ev["logsoftmax"] - a.timings.forward_s) <= 0.002
    assert b.timings.model_load_parts_s is None  # reused from the pool: this run loaded nothing
    assert a.timings.gpu_memory_peak_mib is None and b.timings.gpu_memory_peak_mib is None  # no GPU counter
    # a file written before these fields reads with them unset
    old = read_record(Path(__file__).parent / "fixtures" / "repaudit_runs" / "arc_easy_3docs.json")
    assert (old.timings.model_load_parts_s, old.timings.gpu_memory_peak_mib) == (None, None)
