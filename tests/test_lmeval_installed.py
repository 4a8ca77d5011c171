"""lm-eval task configurations whose fields name Python functions, built with lm-eval's own functions (the
``lmeval`` extra). These tests run where lm-eval is installed (``make test`` runs them in ``.venv-lmeval``) and
skip elsewhere, where ``tests/test_lmeval_config.py`` checks the one-line refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repaudit.errors import RepauditError
from repaudit.importers.lmeval.tasks import load_task_config
from repaudit.tasks.lmeval_config import task_from_config
from repaudit.tasks.lmeval_installed import installed_lmeval

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
#: configurations built only with lm-eval's own functions (106 build without lm-eval)
FROM_LMEVAL = {"mnli", "mnli_mismatch", "leaderboard_gpqa_diamond", "leaderboard_gpqa_extended",
               "leaderboard_gpqa_main", "leaderboard_mmlu_pro", "leaderboard_musr_murder_mysteries",
               "leaderboard_musr_object_placements", "leaderboard_musr_team_allocation", "truthfulqa_gen"}
#: tasks of forks and private suites: lm-eval 0.4.13 has no such task
NOT_IN_LMEVAL = {"halftruthdetection", "leaderboard_arabic_copa_light", "negotiationtom_belief",
                 "negotiationtom_desire", "negotiationtom_intention", "polymer_tg_prediction"}
#: lm-eval changed MATH's process_docs after the version that ran (Level 5 filter, no answer normalisation), and the
#: process_results of TruthfulQA MC2 (split at the first false label → a mask of true labels) and EQ-Bench
CHANGED = {f"leaderboard_math_{s}_hard" for s in ("algebra", "counting_and_prob", "geometry", "intermediate_algebra",
                                                    "num_theory", "prealgebra", "precalculus")} | {
    "truthfulqa_mc2", "eqbench_ca", "eqbench_es"}
#: lm-eval's own module for the task cannot be imported here: coqa's imports transformers.data.metrics (gone from
#: transformers 5)
UNIMPORTABLE = {"coqa"}


@pytest.fixture(scope="module")
def lmeval():
    found = installed_lmeval()
    if found is None:
        pytest.skip("lm-eval is not installed here (make install-lmeval; these tests run in .venv-lmeval)")
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    return found


def test_public_configs_build_with_lmevals_own_functions(lmeval):
    """Of the 134 configurations in ../shared/lmeval_public, every one whose functions the installed lm-eval
    0.4.13 defines unchanged builds (117); the rest are refused, each for its reason."""
    built, refused = set(), {}
    for path in sorted(PUBLIC.glob("*.json")):
        for task in (json.loads(path.read_text()).get("configs") or {}):
            try:
                task_from_config(*load_task_config(path, task))
                built.add(task)
            except RepauditError as exc:
                refused[task] = str(exc)
    assert len(built) + len(refused) == 134
    assert built >= FROM_LMEVAL | {"leaderboard_ifeval"} and len(built) == 117, \
        sorted(set(refused) - NOT_IN_LMEVAL - CHANGED)
    for task in NOT_IN_LMEVAL:
        assert f"nor does the installed lm-eval {lmeval[1]} define it" in refused[task]
    for task in CHANGED:
        assert "differs from the installed lm-eval" in refused[task] and "task changed" in refused[task]
    assert "tasks/coqa/utils.py cannot be imported here" in refused["coqa"]
    assert set(refused) == NOT_IN_LMEVAL | CHANGED | UNIMPORTABLE


def test_process_docs_maps_the_whole_split(lmeval):
    """GPQA's process_docs (lm-eval's own) shuffles each doc's choices with a seeded RNG and adds fields: applied
    to the whole split, as lm-eval applies it."""
    from repaudit.tasks.data import to_docs

    path = next(p for p in sorted(PUBLIC.glob("*.json"))
                if "leaderboard_gpqa_main" in (json.loads(p.read_text()).get("configs") or {}))
    task = task_from_config(*load_task_config(path, "leaderboard_gpqa_main"))
    rows = [{"Question": f"q{i}", "Correct Answer": "right", "Incorrect Answer 1": "w1", "Incorrect Answer 2": "w2",
             "Incorrect Answer 3": "w3"} for i in range(5)]
    docs = to_docs(task, rows)
    assert [d.doc_id for d in docs] == list(range(5))
    orders = set()
    for d in docs:  # the letters are the choices; the texts behind them are the shuffled answers
        choices = task.doc_to_choice(d.row)
        texts = [d.row[f"choice{i}"] for i in range(1, 5)]
        assert choices == ["(A)", "(B)", "(C)", "(D)"] and sorted(texts) == ["right", "w1", "w2", "w3"]
        assert texts[task.gold_index(d.row, choices)] == "right"
        orders.add(tuple(texts))
    assert len(orders) > 1  # shuffled per doc


def test_a_task_of_lmevals_own_folder_runs_from_the_original_bbh_files(lmeval, tiny_model, shared_data, tmp_path):
    """``run --task leaderboard_bbh_navigate``: lm-eval's own YAML (3 fixed examples, ``Q: …\\nA:``, acc_norm),
    its rows from BIG-Bench-Hard's navigate.json under --data-dir; the fingerprint carries the configuration, so
    the run replays where lm-eval is not installed."""
    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="leaderboard_bbh_navigate", model=str(tiny_model), data_dir=shared_data, limit=4,
                        batch_size=4, cache_dir=tmp_path))
    fp = rec.fingerprint
    assert fp.task_config is not None and fp.task_config["dataset_name"] == "navigate"
    assert (fp.settings.fewshot.num_fewshot, fp.fewshot.sampler, fp.data.n_docs_split) == (3, "first_n", 250)
    assert [m.name for m in rec.metrics if m.variant == "char_length"] == ["acc_norm"]
    assert len(rec.docs) == 4 and all(d.choices == ["Yes", "No"] for d in rec.docs)


def test_the_leaderboard_protocol_runs_its_tasks_under_their_own_names(lmeval):
    from repaudit.run.protocol import apply_protocol, load_protocol

    proto, _ = load_protocol("open_llm_leaderboard_v2")
    fields, rec = apply_protocol(proto, "leaderboard_bbh_navigate", {})
    assert fields["task"] == "leaderboard_bbh_navigate" and fields["num_fewshot"] == 3
    with pytest.raises(RepauditError, match="leaderboard_ifeval"):
        apply_protocol(proto, "leaderboard_ifeval", {})


def test_process_results_metrics_are_lmevals_own(lmeval, tiny_model, shared_data, tmp_path):
    """truthfulqa_mc2's ``acc`` is lm-eval's ``process_results_mc2``: per doc, the probability mass the choices put on
    the true answers (normalised over the choices), recomputed here from the recorded log-likelihoods and the labels;
    never the argmax accuracy a multiple-choice task would give."""
    import math

    from repaudit.run.runner import RunConfig, run
    from repaudit.tasks.lmeval_installed import installed_task_config

    rows = json.loads((shared_data / "truthfulqa" / "v1" / "mc_task.json").read_text())[:4]
    with open(tmp_path / "mc.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"question": r["question"], **{k: {"choices": list(r[k]), "labels": list(r[k].values())}
                                                              for k in ("mc1_targets", "mc2_targets")}}) + "\n")
    cfg = installed_task_config("truthfulqa_mc2")
    assert cfg is not None and "process_results_mc2" in cfg["process_results"]
    cfg.update(dataset_path="json", dataset_name=None,
               dataset_kwargs={"data_files": {"validation": str(tmp_path / "mc.jsonl")}})
    rec = run(RunConfig(task="truthfulqa_mc2", task_config=cfg, model=str(tiny_model), batch_size=4,
                        cache_dir=tmp_path))
    assert len(rec.docs) == 4
    for d, r in zip(rec.docs, rows):
        p = [math.exp(x) for x in d.loglikelihoods]
        labels = list(r["mc2_targets"].values())
        assert d.metrics["acc"] == pytest.approx(sum(q for q, y in zip(p, labels) if y) / sum(p), abs=1e-9)
    values = [d.metrics["acc"] for d in rec.docs]
    assert any(0 < v < 1 for v in values) and values != [float(d.prediction == d.gold) for d in rec.docs]
    acc = next(m for m in rec.metrics if m.name == "acc")
    assert acc.variant == "none" and acc.value == pytest.approx(sum(d.metrics["acc"] for d in rec.docs) / 4)


def test_process_results_lists_are_not_recorded_as_numbers(lmeval):
    """IFEval (lm-eval's ifeval extra): its prompt-level metrics are one number per doc and recorded; its
    instruction-level ones are lists per doc, aggregated by lm-eval's own function, and are not."""
    path = next(p for p in sorted(PUBLIC.glob("*.json"))
                if "leaderboard_ifeval" in (json.loads(p.read_text()).get("configs") or {}))
    task = task_from_config(*load_task_config(path, "leaderboard_ifeval"))
    assert task.metrics == ("prompt_level_strict_acc", "prompt_level_loose_acc")
    assert set(task.unsupported) == {"inst_level_strict_acc", "inst_level_loose_acc"}


def test_math500_generations_are_scored_by_lmevals_process_results(lmeval, tiny_model, shared_data, tmp_path):
    """``hendrycks_math500`` (lm-eval's own YAML: ``Problem: …\\nAnswer:``, until ``Problem:``) on MATH-500 from
    ``--data-dir`` (``math500/test.jsonl``, the file the hub dataset is): each generation's ``exact_match`` (filter
    ``none``, keyed as lm-eval keys it) is what lm-eval's own ``process_results`` (its ``is_equiv`` on the ``$…$``
    span against the boxed answer) gives, called here directly on the recorded generation and the processed doc."""
    import importlib.util

    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="hendrycks_math500", model=str(tiny_model), data_dir=shared_data, limit=3,
                        batch_size=3, max_gen_toks=8, cache_dir=tmp_path))
    fp = rec.fingerprint
    assert fp.data.n_docs_split == 500 and fp.task_config["dataset_path"] == "HuggingFaceH4/MATH-500"
    spec = importlib.util.spec_from_file_location("m", lmeval[0] / "hendrycks_math" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    rows = [json.loads(x) for x in (shared_data / "math500" / "test.jsonl").read_text().splitlines()[:3]]
    for d, row in zip(rec.docs, rows):
        doc = {"problem": row["problem"], "solution": row["solution"],
               "answer": utils.remove_boxed(utils.last_boxed_only_string(row["solution"]))}
        assert d.target == doc["answer"]
        assert d.metrics == {"exact_match": float(utils.process_results(doc, [d.generation])["exact_match"])}
    # a generation that holds the answer is scored 1 by the same path (the tiny model's are not)
    from repaudit.tasks.lmeval_installed import installed_function

    fn, _ = installed_function("hendrycks_math500", "process_results", "process_results")
    assert fn(doc, [f"${doc['answer']}$"])["exact_match"] == 1
