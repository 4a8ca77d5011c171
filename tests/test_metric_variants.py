"""Scoring-only factors (``--acc-norm``): named by compare, replayed by attribute, swept with no new batch."""

from __future__ import annotations

import pytest

from repaudit.audit.compare import compare, load_run
from repaudit.errors import RepauditError
from repaudit.run.metrics import multiple_choice_metrics
from repaudit.run.records import write_record
from repaudit.run.runner import BackendPool, RunConfig, run


def test_acc_norm_normalisations_pick_different_choices():
    lls, choices = [-6.0, -9.0], ["cat", "elephants"]
    # per char: -2.0 vs -1.0 (picks 1); per token (3 vs 1 tokens): -2.0 vs -9.0 (picks 0)
    assert multiple_choice_metrics(lls, choices, 1, acc_norm="char_length")["acc_norm"] == 1.0
    assert multiple_choice_metrics(lls, choices, 0, acc_norm="token_length", n_tokens=[3, 1])["acc_norm"] == 1.0
    # "é" is 1 character but 2 bytes: per char -4.0 vs -2.5 (picks 1), per byte -2.0 vs -2.5 (picks 0)
    assert multiple_choice_metrics([-4.0, -2.5], ["é", "e"], 1, acc_norm="char_length")["acc_norm"] == 1.0
    assert multiple_choice_metrics([-4.0, -2.5], ["é", "e"], 1, acc_norm="byte_length")["acc_norm"] == 0.0
    with pytest.raises(ValueError):
        multiple_choice_metrics(lls, choices, 0, acc_norm="token_length")


def test_runs_differing_only_in_acc_norm_share_batches_compare_names_it_and_attribute_replays_it(
        tiny_model, shared_data, tmp_path):
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source
    from repaudit.audit.sweep import sweep

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=30, cache_dir=tmp_path / "c")
    a = run(RunConfig(**common))
    b = run(RunConfig(**common, acc_norm="token_length"))
    assert b.timings.computed_batches == 0 and b.timings.cached_batches > 0  # scoring only: no forward pass
    assert b.fingerprint.settings.scoring.acc_norm == "token_length"
    assert [d.loglikelihoods for d in a.docs] == [d.loglikelihoods for d in b.docs]
    assert any(da.metrics["acc_norm"] != db.metrics["acc_norm"] for da, db in zip(a.docs, b.docs))
    write_record(a, tmp_path / "a.json")
    write_record(b, tmp_path / "b.json")
    c = compare(load_run(tmp_path / "a.json"), load_run(tmp_path / "b.json"), n_boot=200)
    assert {f.path for f in c.differing()} == {"scoring.acc_norm"}
    assert "acc_norm" in {s.metric for s in c.scores}  # still compared as the same metric
    srcs = [load_replay_source(tmp_path / f, shared_data, str(tiny_model), tmp_path / "c")
            for f in ("a.json", "b.json")]
    pool = BackendPool()
    att = run_attribution(*srcs, lambda cfg: run(cfg, backends=pool), metric="acc_norm", n_boot=200)
    assert att.factors == ["acc_norm"] and att.residual == pytest.approx(0.0, abs=1e-12)
    assert att.computed_batches == 0 and att.phi[0] == pytest.approx(att.recorded_delta)
    res = sweep(RunConfig(**common), "acc_norm", ["token_length", "byte_length"], run, metric="acc_norm")
    assert [p.value for p in res.points] == ["token_length", "byte_length"]
    assert res.computed_batches == 0 and res.cached_batches > 0  # the values reused the base's inference
    with pytest.raises(RepauditError, match="unknown acc_norm normalisation 'words'"):
        run(RunConfig(**common, acc_norm="words"))


# --- every prompt and metric factor of issue 14: recorded, named alone by compare, replayed exactly ---

_ARC = dict(task="arc_easy", limit=12)
_GSM = dict(task="gsm8k", limit=4, num_fewshot=1, max_gen_toks=12)
#: factor -> (common settings, A's, B's, the vocabulary paths compare must name, attribution factor(s): lm-eval's
#: exact_match options are one setting each, and the resolved options a fact beside them)
FACTORS = {
    "label_style": ({**_ARC, "prompt_format": "lettered"}, {}, {"label_style": "(A)"},
                    {"prompt.label_style"}, "label_style"),
    "label_style_none": ({**_ARC, "prompt_format": "lettered"}, {"label_style": "A:"}, {"label_style": "none"},
                         {"prompt.label_style"}, "label_style"),
    "choice_separator": ({**_ARC, "prompt_format": "lettered"}, {}, {"choice_separator": "\nOptions:\n"},
                         {"prompt.choice_separator"}, "choice_separator"),
    "description": ({**_ARC, "num_fewshot": 1}, {}, {"description": "Answer the science question.\n\n"},
                    {"prompt.description"}, "description"),
    "fewshot_as_multiturn": ({**_ARC, "num_fewshot": 2, "chat_template": True, "limit": 6}, {},
                             {"fewshot_as_multiturn": True}, {"prompt.fewshot_as_multiturn"},
                             "fewshot_as_multiturn"),
    "acc_norm_pmi": (_ARC, {}, {"acc_norm": "pmi"}, {"scoring.acc_norm"}, "acc_norm"),
    "answer_match": (_GSM, {}, {"answer_match": "quasi_exact"}, {"scoring.answer_match"}, "answer_match"),
    "exact_match_options": (_GSM, {}, {"ignore_case": False, "regexes_to_ignore": []},
                            {"scoring.ignore_case", "scoring.regexes_to_ignore", "metric.exact_match_options"},
                            ["ignore_case", "regexes_to_ignore"]),
}


@pytest.mark.parametrize("name", list(FACTORS))
def test_each_factor_is_recorded_named_alone_by_compare_and_replayed_with_residual_zero(
        name, tiny_model, shared_data, tmp_path):
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source

    common, over_a, over_b, field, factor = FACTORS[name]
    base = dict(model=str(tiny_model), data_dir=shared_data, cache_dir=tmp_path / "c", **common)
    a, b = run(RunConfig(**base, **over_a)), run(RunConfig(**base, **over_b))
    scoring_only = name in ("answer_match", "exact_match_options")
    if scoring_only:
        assert b.timings.computed_batches == 0  # the same generations, matched another way
    elif name == "acc_norm_pmi":
        assert [d.loglikelihoods for d in a.docs] == [d.loglikelihoods for d in b.docs]
        assert all(len(d.unconditional_loglikelihoods) == len(d.choices) for d in b.docs)
    else:
        assert all(x.prompt_hash != y.prompt_hash for x, y in zip(a.docs, b.docs))  # the factor reached the prompt
    write_record(a, tmp_path / "a.json")
    write_record(b, tmp_path / "b.json")
    c = compare(load_run(tmp_path / "a.json"), load_run(tmp_path / "b.json"), n_boot=100)
    # batch_sizes_used is a consequence, not a setting: " (A)" is several tokens where " A" is one, so
    # lm-eval's grouping of one-token continuations batches the requests differently
    assert {f.path for f in c.differing()} - {"engine.batch_sizes_used"} == field
    srcs = [load_replay_source(tmp_path / f, shared_data, str(tiny_model), tmp_path / "c")
            for f in ("a.json", "b.json")]
    pool = BackendPool()
    metric = "exact_match,strict-match" if common["task"] == "gsm8k" else "acc_norm" if "pmi" in name else "acc"
    att = run_attribution(*srcs, lambda cfg: run(cfg, backends=pool), metric=metric, n_boot=100)
    assert att.factors == (factor if isinstance(factor, list) else [factor])
    assert att.residual == pytest.approx(0.0, abs=1e-12)
    assert att.computed_batches == 0  # both replays are the recorded runs: every batch is in the store


def test_label_styles_and_separator_render_as_documented():
    from repaudit.tasks.base import Doc
    from repaudit.tasks.definitions import TASKS
    from repaudit.tasks.prompts import PromptOptions, render

    task = TASKS["arc_easy"]
    row = {"id": "x", "question": "Which is a gas?", "choices": {"text": ["ice", "steam"], "label": ["A", "B"]},
           "answerKey": "B"}
    doc = Doc(0, task.process(row))
    ctx = {s: render(task, doc, [], "lettered", None, None, PromptOptions(label_style=s)) for s in
           ("A.", "(A)", "A)", "A:", "none")}
    assert ctx["A."].requests[0].context == "Question: Which is a gas?\nA. ice\nB. steam\nAnswer:"
    assert ctx["(A)"].requests[0].context == "Question: Which is a gas?\n(A) ice\n(B) steam\nAnswer:"
    assert [r.continuation for r in ctx["(A)"].requests] == [" (A)", " (B)"]
    assert [r.continuation for r in ctx["A)"].requests] == [" A", " B"]
    assert "B: steam" in ctx["A:"].requests[0].context
    assert ctx["none"].requests[0].context == "Question: Which is a gas?\nice\nsteam\nAnswer:"
    assert [r.continuation for r in ctx["none"].requests] == [" ice", " steam"]
    sep = render(task, doc, [], "lettered", None, None, PromptOptions(choice_separator=" Choices: "))
    assert sep.requests[0].context.startswith("Question: Which is a gas? Choices: A. ice\n")
    pmi = render(task, doc, [], "cloze", None, None, PromptOptions(pmi=True))
    assert [(r.context, r.continuation) for r in pmi.unconditional] == [("", " ice"), ("", " steam")]


def test_multiturn_fewshot_puts_each_example_in_its_own_turn_and_the_description_in_the_system_message(
        tiny_model, shared_data, tmp_path):
    base = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, cache_dir=tmp_path / "c", limit=2,
                num_fewshot=2, chat_template=True, description="Science quiz.")
    from rich.console import Console
    from transformers import AutoTokenizer

    from repaudit.hashing import sha256_text
    from repaudit.run.docs import load_docs
    from repaudit.run.runner import get_task

    single = run(RunConfig(**base))
    multi = run(RunConfig(**base, fewshot_as_multiturn=True))
    # rebuild doc 0's prompts the way lm-eval 0.4.13 does (fewshot_context) and check the recorded hashes
    docset = load_docs(get_task("arc_easy"), RunConfig(**base), Console(stderr=True))
    pool = {d.doc_id: d for d in docset.pool}
    doc = docset.docs[0]
    shots = [pool[i].row for i in docset.fewshot_ids[doc.doc_id]]
    qa = [(f"Question: {r['question']}\nAnswer:", r["choices"]["text"][r["choices"]["label"].index(r["answerKey"])])
          for r in shots]
    user = f"Question: {doc.row['question']}\nAnswer:"
    turns = [m for q, a in qa for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    system = [{"role": "system", "content": "Science quiz."}]
    tok = AutoTokenizer.from_pretrained(tiny_model)
    want_multi = tok.apply_chat_template(system + turns + [{"role": "user", "content": user}], tokenize=False,
                                         add_generation_prompt=True)
    want_single = tok.apply_chat_template(system + [{"role": "user", "content": "".join(
        f"{q} {a}\n\n" for q, a in qa) + user}], tokenize=False, add_generation_prompt=True)
    assert multi.docs[0].prompt_hash == sha256_text(want_multi)
    assert single.docs[0].prompt_hash == sha256_text(want_single)
    with pytest.raises(RepauditError, match="needs --chat-template"):
        run(RunConfig(**{**base, "chat_template": False}, fewshot_as_multiturn=True))


def test_answer_matching_rules():
    from repaudit.tasks.filters import ExactMatchOptions, helm_normalise, match_answer

    plain = ExactMatchOptions()
    assert match_answer("The Eiffel Tower.", "eiffel tower", plain, "quasi_exact") == 1.0
    assert match_answer("The Eiffel Tower.", "eiffel tower", plain, "exact") == 0.0
    assert match_answer("Paris, France", "Paris", plain, "prefix") == 1.0
    assert match_answer("in Paris", "Paris", plain, "suffix") == 1.0
    assert match_answer("", "", plain, "prefix") == 0.0  # an empty prediction never matches (lighteval)
    assert match_answer("PARIS", "paris", ExactMatchOptions(ignore_case=True), "exact") == 1.0
    assert helm_normalise("An  apple-pie, 2") == "apple pie 2.0"
    with pytest.raises(ValueError):
        match_answer("a", "a", plain, "fuzzy")


def test_scoring_only_metric_variants_sweep_with_no_new_batch(tiny_model, shared_data, tmp_path):
    from repaudit.audit.sweep import sweep

    base = RunConfig(model=str(tiny_model), data_dir=shared_data, cache_dir=tmp_path / "c", **_GSM)
    res = sweep(base, "answer_match", ["quasi_exact", "prefix", "suffix"], run, metric="exact_match,strict-match")
    assert [p.value for p in res.points] == ["quasi_exact", "prefix", "suffix"]
    assert res.computed_batches == 0 and res.cached_batches > 0
    with pytest.raises(RepauditError, match="apply to generate_until tasks"):
        run(RunConfig(model=str(tiny_model), data_dir=shared_data, cache_dir=tmp_path / "c", task="arc_easy",
                      limit=2, answer_match="prefix"))
