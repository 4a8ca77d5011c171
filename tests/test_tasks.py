"""Task definitions render exactly what lm-eval 0.4.13 renders, on the real docs."""

from __future__ import annotations

import json

from repaudit.run.scoring import doc_hash
from repaudit.tasks.data import DataRoot, load_rows, to_docs
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.fewshot import select_fewshot
from repaudit.tasks.prompts import render
from repaudit.tasks.requests import GenerationSettings


def _docs(task, shared_data, split="validation"):
    rows, src = load_rows(TASKS[task], split, DataRoot("data_dir", shared_data, "--data-dir"))
    return to_docs(TASKS[task], rows), src


def test_arc_prompts_and_hashes_equal_lmeval_samples(shared_data, lmeval_runs):
    docs, src = _docs("arc_easy", shared_data)
    assert src.file_sha256 == "1591d2431c45b1712f9c9e7032bd2dfcba863a5eec748c88b2ec11cf7c7da6c5"
    samples = [json.loads(line) for line in next((lmeval_runs / "s1").rglob("samples_*.jsonl")).open()]
    for s in samples[:50]:
        rd = render(TASKS["arc_easy"], docs[s["doc_id"]], [], "lmeval", None, None)
        args = [s["arguments"][f"gen_args_{i}"] for i in range(len(rd.requests))]
        assert [(r.context, r.continuation) for r in rd.requests] == [(a["arg_0"], a["arg_1"]) for a in args]
        assert doc_hash(docs[s["doc_id"]].row) == s["doc_hash"]
        assert str(rd.gold) == s["target"]


def test_hellaswag_preprocessing(shared_data):
    docs, _ = _docs("hellaswag", shared_data)
    rd = render(TASKS["hellaswag"], docs[0], [], "lmeval", None, None)
    assert rd.requests[0].context.startswith(docs[0].row["activity_label"] + ": ")
    assert all("[" not in r.continuation for d in docs[:200]
               for r in render(TASKS["hellaswag"], d, [], "lmeval", None, None).requests)
    assert len(rd.requests) == 4 and rd.gold == int(docs[0].row["label"])


def test_mmlu_description_and_letters(shared_data):
    docs, _ = _docs("mmlu", shared_data, "test")
    assert len(docs) == 14042 and len({d.cluster for d in docs}) == 57
    rd = render(TASKS["mmlu"], docs[0], [], "lmeval", None, None)
    assert rd.requests[0].context.startswith(
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n")
    assert rd.requests[0].context.endswith("\nD. " + docs[0].row["choices"][3] + "\nAnswer:")
    assert [r.continuation for r in rd.requests] == [" A", " B", " C", " D"]


def test_winogrande_partial_scoring(shared_data):
    docs, _ = _docs("winogrande", shared_data)
    row = docs[0].row
    rd = render(TASKS["winogrande"], docs[0], [], "lmeval", None, None)
    blank = row["sentence"].index("_")
    assert [r.context for r in rd.requests] == [row["sentence"][:blank] + row["option1"],
                                               row["sentence"][:blank] + row["option2"]]
    assert rd.requests[0].continuation == rd.requests[1].continuation == " " + row["sentence"][blank + 1:].strip()


def test_boolq_local_answer_maps_to_label(shared_data):
    docs, _ = _docs("boolq", shared_data)
    assert all(d.row["label"] == int(d.row["answer"]) for d in docs[:100])
    rd = render(TASKS["boolq"], docs[0], [], "lmeval", None, None)
    assert rd.requests[0].context.endswith("?\nAnswer:") and [r.continuation for r in rd.requests] == [" no", " yes"]


def test_gsm8k_fewshot_prompt(shared_data):
    docs, _ = _docs("gsm8k", shared_data, "test")
    settings = GenerationSettings(until=("Question:",), max_gen_toks=256)
    rd = render(TASKS["gsm8k"], docs[5], [docs[1], docs[2]], "lmeval", settings, None)
    ctx = rd.requests[0].context
    assert ctx.startswith(f"Question: {docs[1].row['question']}\nAnswer: {docs[1].row['answer']}\n\n")
    assert ctx.endswith(f"Question: {docs[5].row['question']}\nAnswer:")


def test_random_sampler_follows_lmeval_stream(shared_data):
    """lm-eval draws n+1 per doc from one Random(seed) in doc order and drops the doc itself."""
    import random

    docs, _ = _docs("arc_easy", shared_data)
    got = select_fewshot(docs, docs, 5, "random", 1234, same_split=True, by_cluster=False)
    rng = random.Random(1234)
    for d in docs[:40]:
        drawn = rng.sample(docs, 6)
        assert got[d.doc_id] == [x.doc_id for x in drawn if x.row != d.row][:5]
        assert d.doc_id not in got[d.doc_id]


def test_first_n_sampler_per_subject(shared_data):
    test, _ = _docs("mmlu", shared_data, "test")
    dev, _ = _docs("mmlu", shared_data, "dev")
    got = select_fewshot(test[:300], dev, 5, "first_n", 1234, same_split=False, by_cluster=True)
    for d in test[:300]:
        subject_dev = [x.doc_id for x in dev if x.cluster == d.cluster]
        assert got[d.doc_id] == subject_dev[:5]
