"""Replay of inspect_ai runs (inspect's multiple_choice on the hf/ provider): the configuration rebuilt from the log,
checked against every sample's recorded conversation, refusals in one line, and a real re-execution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repaudit.audit.replay import load_replay_source
from repaudit.errors import RepauditError
from repaudit.importers.inspectai.replay import METRIC

FIX = Path(__file__).resolve().parent / "fixtures" / "inspect"


def test_the_replay_configuration_of_two_inspect_runs(tmp_path):
    """a: 4 connections, no system message; b: 16 connections and a system message — both rebuilt from their logs,
    the two solved questions of every sample's input as multi-turn few-shot examples."""
    a = load_replay_source(FIX / "arc_easy_a.eval", None, "default", tmp_path)
    b = load_replay_source(FIX / "arc_easy_b.eval", None, "default", tmp_path)
    for src, batch in ((a, 4), (b, 16)):
        c = src.config
        assert (c.serving.batch_size, c.serving.dtype, c.prompt.chat_template, c.prompt.fewshot_as_multiturn,
                c.fewshot.num_fewshot, c.generation.do_sample) == (batch, "float32", True, True, 2, False)
        assert c.task_config["generation_kwargs"]["max_gen_toks"] == 8 and len(src.docs) == 40
        assert all(set(d.metrics) == {METRIC} and d.doc_hash is None for d in src.docs.values())
    assert a.config.prompt.system_prompt is None
    assert b.config.prompt.system_prompt.startswith("You are a careful science teacher")
    rows_file = Path(a.config.task_config["dataset_kwargs"]["data_files"]["test"])
    rows = [json.loads(x) for x in rows_file.read_text().splitlines()]
    assert [r["target"] for r in rows] == [d.target for _, d in sorted(a.docs.items())]
    assert rows[0]["prompt"].endswith("Which technology was developed most recently?\n\nA) cellular telephone\n"
                                      "B) television\nC) refrigerator\nD) airplane")
    assert a.config.task_config["fewshot_config"]["samples"][0]["target"] == "ANSWER: B"


def _edited_json_log(tmp_path: Path, edit) -> Path:
    log = json.loads((FIX / "arc_easy_json.json").read_text())
    edit(log)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(log))
    return out


def test_what_cannot_be_replayed_is_refused_in_one_line(tmp_path):
    def cot(log):
        log["plan"]["steps"][-1]["solver"] = "chain_of_thought"

    def other_prompt(log):
        log["samples"][3]["messages"][-2]["content"] = "Pick one: " + str(log["samples"][3]["messages"][-2]["content"])

    def sampled(log):
        log["eval"]["model_args"]["do_sample"] = True

    def anthropic(log):  # not OpenAI-compatible: no endpoint repaudit can send it to
        log["eval"]["model"] = "anthropic/claude-3-5-sonnet"

    cases = {cot: r"solver\(s\) chain_of_thought cannot be replayed",
             other_prompt: "conversation as rebuilt from the plan differs",
             sampled: "sampled its generations",
             anthropic: "ran on inspect's 'anthropic/claude-3-5-sonnet' provider; re-executed here: "
                        "hf/ and the OpenAI-compatible providers"}
    for edit, message in cases.items():
        with pytest.raises(RepauditError, match=message) as exc:
            load_replay_source(_edited_json_log(tmp_path, edit), None, "default", tmp_path)
        assert "\n" not in str(exc.value)
    with pytest.raises(RepauditError, match=r"model_path\), which is not a folder here .*--model default"):
        load_replay_source(FIX / "arc_easy_a.eval", None, None, tmp_path)  # the log's relative model path


def test_an_inspect_run_replays_sample_by_sample(default_model_available, tmp_path):
    """The 10-doc json log (greedy, 8 new tokens, batch 4) re-executed with the default model: each sample's
    generation and extracted letter against what inspect recorded."""
    from repaudit.audit.executor import LocalExecutor

    src = load_replay_source(FIX / "arc_easy_json.json", None, "default", tmp_path)
    rec = LocalExecutor().map([src.config])[0]
    assert [d.doc_id for d in rec.docs] == sorted(src.docs)
    same_text = sum(d.generation == src.docs[d.doc_id].generation for d in rec.docs)
    same_answer = sum(d.prediction == src.docs[d.doc_id].prediction for d in rec.docs)
    assert same_answer >= 9 and same_text >= 9, (same_answer, same_text)
    assert all(d.metrics[METRIC] == float(d.prediction == d.target) for d in rec.docs)
