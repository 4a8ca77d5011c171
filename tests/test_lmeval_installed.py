"""lm-eval task configurations whose fields name Python functions, built with lm-eval's own functions (the
``lmeval`` extra). These tests run where lm-eval is installed (``make test`` runs them in ``.venv-lmeval``) and
skip elsewhere, where ``tests/test_lmeval_config.py`` checks the one-line refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repaudit.errors import RepauditError
from repaudit.importers.lmeval_tasks import load_task_config
from repaudit.tasks.lmeval_config import task_from_config
from repaudit.tasks.lmeval_installed import installed_lmeval

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
#: configurations built only with lm-eval's own functions (110 build without lm-eval)
FROM_LMEVAL = {"mnli", "mnli_mismatch", "leaderboard_gpqa_diamond", "leaderboard_gpqa_extended",
               "leaderboard_gpqa_main", "leaderboard_mmlu_pro", "leaderboard_musr_murder_mysteries",
               "leaderboard_musr_object_placements", "leaderboard_musr_team_allocation", "truthfulqa_gen"}
#: tasks of forks and private suites: lm-eval 0.4.13 has no such task
NOT_IN_LMEVAL = {"halftruthdetection", "leaderboard_arabic_copa_light", "negotiationtom_belief",
                 "negotiationtom_desire", "negotiationtom_intention", "polymer_tg_prediction"}
#: lm-eval changed MATH's process_docs after the version that ran (Level 5 filter, no answer normalisation)
CHANGED = {f"leaderboard_math_{s}_hard" for s in ("algebra", "counting_and_prob", "geometry", "intermediate_algebra",
                                                    "num_theory", "prealgebra", "precalculus")}


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
    0.4.13 defines unchanged builds (120); the rest are refused, each for its reason."""
    built, refused = set(), {}
    for path in sorted(PUBLIC.glob("*.json")):
        for task in (json.loads(path.read_text()).get("configs") or {}):
            try:
                task_from_config(*load_task_config(path, task))
                built.add(task)
            except RepauditError as exc:
                refused[task] = str(exc)
    assert len(built) + len(refused) == 134
    assert built >= FROM_LMEVAL and len(built) == 120, sorted(set(refused) - NOT_IN_LMEVAL - CHANGED)
    for task in NOT_IN_LMEVAL:
        assert f"nor does the installed lm-eval {lmeval[1]} define it" in refused[task]
    for task in CHANGED:
        assert "differs from the installed lm-eval" in refused[task] and "task changed" in refused[task]
    assert "tasks/coqa/utils.py cannot be imported here" in refused["coqa"]
    assert set(refused) == NOT_IN_LMEVAL | CHANGED | {"coqa"}


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
    assert (fp.fewshot.num_fewshot, fp.fewshot.sampler, fp.data.n_docs_split) == (3, "first_n", 250)
    assert [m.name for m in rec.metrics if m.variant == "char_length"] == ["acc_norm"]
    assert len(rec.docs) == 4 and all(d.choices == ["Yes", "No"] for d in rec.docs)


def test_the_leaderboard_protocol_runs_its_tasks_under_their_own_names(lmeval):
    from repaudit.run.protocol import apply_protocol, load_protocol

    proto, _ = load_protocol("open_llm_leaderboard_v2")
    fields, rec = apply_protocol(proto, "leaderboard_bbh_navigate", {})
    assert fields["task"] == "leaderboard_bbh_navigate" and fields["num_fewshot"] == 3
    with pytest.raises(RepauditError, match="leaderboard_ifeval"):
        apply_protocol(proto, "leaderboard_ifeval", {})
