"""HELM run folders: read into the vocabulary (every adapter-spec value recorded with its key, HELM's defaults only
where run_spec omits a field), compared to the instance against the real-world corpus's truth (``tests/realworld``),
paired by instance id with HELM's own Every Eval Ever conversion, and every other HELM file named as what it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from truthcheck import CASES, check_docs, check_scores, check_settings, compare_json, recorded_values_are_in_the_files
from typer.testing import CliRunner

from repaudit.boundary import InputError
from repaudit.cli import app
from repaudit.importers import detect

BBQ = CASES / "helm_bbq_v4_claude35_vs_gpt4turbo"
SST = CASES / "helm_simple_safety_v3_claude35_vs_gpt4o"
HS = CASES / "helm_vs_eee010_hellaswag_pythia1b"
#: what compare finds differing beyond the truth, with the evidence (see the report of issue 51's formats):
#: HELM's per-model run expander prepends "Answer with only a single letter." to Claude's instructions
#: (run_spec.adapter_spec.instructions), the prompt.description setting HELM declares; the truth reads no
#: instructions
EXTRA_DIFFERS = {BBQ.name: {"prompt.description"}}


def _files(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


@pytest.mark.parametrize("case", [BBQ, SST], ids=lambda p: p.name)
def test_a_helm_pair_compares_as_its_truth_says(case, tmp_path):
    truth = json.loads((case / "truth.json").read_text())
    a, b = case / truth["a"], case / truth["b"]
    cmp = compare_json(a, b, tmp_path)
    (task,) = truth["scores"]
    assert cmp["tasks"]["shared"] == [task] and cmp["a"]["source"] == cmp["b"]["source"] == "HELM"
    check_settings(cmp, task, truth, None, EXTRA_DIFFERS.get(case.name, set()))
    check_scores(cmp, task, truth["scores"][task])
    check_docs(cmp, task, truth["per_doc"][task], truth["flips"].get(task, {}))
    assert not cmp["warnings"]  # HELM's per-instance means are its aggregates
    assert recorded_values_are_in_the_files(cmp, {"a": _files(a), "b": _files(b)}) > 20


def test_helm_and_its_own_eee_conversion_pair_by_instance_id(tmp_path):
    """A HELM run (A) and the Every Eval Ever 0.1.0 record EEE's HELM converter made of it (B): the tasks pair by
    their instances' content, the instances by id, the four metrics both name alike agree."""
    truth = json.loads((HS / "truth.json").read_text())
    cmp = compare_json(HS / truth["a"], HS / "eee", tmp_path)
    task = truth["task_map"]["hellaswag"]["a"]
    assert cmp["tasks"]["shared"] == [task] and cmp["b"]["source"] == "EEE 0.1.0: helm"
    assert any("'multiple_choice_joint' is compared as A's" in n for n in cmp["notes"])
    check_settings(cmp, task, truth, None)
    check_scores(cmp, task, truth["scores"]["hellaswag"])
    check_docs(cmp, task, truth["per_doc"]["hellaswag"], truth["flips"])
    (docs,) = cmp["docs"]
    assert docs["target_equal"] == docs["prediction_equal"] == docs["choices_equal"] == 10
    eee = json.loads(next((HS / "eee").glob("*.json")).read_text())
    assert recorded_values_are_in_the_files(cmp, {"a": _files(HS / truth["a"]), "b": {"": eee}}) > 10


def test_a_run_spec_and_its_folder_are_one_run_and_a_suite_names_its_runs(tmp_path):
    detect._cache.clear()
    folder = next(p for p in BBQ.iterdir() if p.is_dir())
    by_file = detect.load_source(folder / "run_spec.json")
    assert by_file.adapter.name == "helm" and by_file.path == folder
    assert detect.load_run(folder).tasks.keys() == by_file.run.tasks.keys()
    with pytest.raises(InputError, match="holds 2 HELM run folders: bbq"):
        detect.load_run(BBQ)
    rec = by_file.run.factors["bbq:subject=all,method=multiple_choice_joint"]
    assert rec["generation.do_sample"].source == "derived" and rec["generation.temperature"].source == "not_applicable"
    assert rec["other.method"].value == "multiple_choice_joint" and rec["data.split"].source == "derived"


def test_a_field_run_spec_omits_is_helms_default_never_recorded(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(next(p for p in SST.iterdir() if p.is_dir()), folder)
    spec = json.loads((folder / "run_spec.json").read_text())
    for k in ("temperature", "max_tokens", "max_train_instances"):
        del spec["adapter_spec"][k]
    (folder / "run_spec.json").write_text(json.dumps(spec))
    detect._cache.clear()
    rec = next(iter(detect.load_run(folder).factors.values()))
    for path, value in (("generation.temperature", 1.0), ("generation.max_gen_toks", 100),
                        ("fewshot.num_fewshot", 5)):
        v = rec[path]
        assert v.source == "default" and v.harness == "HELM" and v.value == value and v.version is None
        assert "AdapterSpec" in v.key
    assert rec["generation.do_sample"].source == "not_recorded"  # no temperature of 0: nothing to derive


@pytest.mark.parametrize("name,needle", [
    ("stats.json", "is a HELM stats.json (a run's aggregate statistics), not a run: pass its run folder"),
    ("per_instance_stats.json", "is a HELM per_instance_stats.json"),
    ("scenario_state.json", "is a HELM scenario_state.json"),
    ("scenario.json", "is a HELM scenario.json"),
])
def test_every_other_helm_file_is_named_as_what_it_is(name, needle, tmp_path):
    folder = next(p for p in SST.iterdir() if p.is_dir())
    res = CliRunner().invoke(app, ["compare", str(folder / name), str(folder)])
    assert res.exit_code == 1 and needle in res.stderr and "lm-eval" not in res.stderr, res.stderr
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(folder / name, alone / name)
    res = CliRunner().invoke(app, ["compare", str(alone), str(folder)])
    assert res.exit_code == 1 and f"holds 0 results files ({name} {needle}" in res.stderr, res.stderr


def test_per_instance_values_off_their_aggregate_are_a_warning_not_a_refusal(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(next(p for p in BBQ.iterdir() if p.is_dir() and "claude" in p.name), folder)
    stats = json.loads((folder / "stats.json").read_text())
    for s in stats:
        if s["name"]["name"] == "exact_match" and not s["name"].get("perturbation"):
            s["mean"] = 0.5
    (folder / "stats.json").write_text(json.dumps(stats))
    detect._cache.clear()
    other = next(p for p in BBQ.iterdir() if p.is_dir() and "gpt-4" in p.name)
    cmp = compare_json(folder, other, tmp_path)
    assert any("the mean exact_match of the per-instance stats (0.93) is not the reported score (0.5)" in w
               for w in cmp["warnings"]), cmp["warnings"]
    row = next(r for r in cmp["scores"] if r["metric"] == "exact_match")
    assert row["a_reported"] == 50.0 and row["method"] != "paired_score"  # no per-doc mean of that score: unpaired


def test_a_helm_run_cannot_be_replayed_and_says_why():
    from repaudit.audit.replay import load_replay_source
    from repaudit.errors import RepauditError

    detect._cache.clear()
    with pytest.raises(RepauditError, match="it is a HELM run, and repaudit does not rebuild HELM's adapters"):
        load_replay_source(next(p for p in SST.iterdir() if p.is_dir()), None, None, None)
