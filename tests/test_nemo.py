"""NeMo Evaluator's files (issue 61): the results.yaml and processed_results.json of NeMo Evaluator's own documentation
compare with scores equal to the files' values and every setting at the key the truth (computed without repaudit,
tests/realworld/truth_lib.py) names; an invocation's output folder is one run; a results.yaml is no protocol; and other
tools' files are refused by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.audit.compare import compare, load_run
from repaudit.cli import app

CASES = Path(__file__).resolve().parent / "realworld" / "cases"
YAML = CASES / "nemo_results_yaml_llama31_8b_vs_llama32_3b"
EXPORT = CASES / "nemo_processed_export_2508_vs_2510"
runner = CliRunner()


@pytest.mark.parametrize("case", [YAML, EXPORT])
def test_a_nemo_pair_has_the_files_scores_and_each_setting_at_its_key(case):
    t = json.loads((case / "truth.json").read_text())
    a, b = load_run(case / t["a"]), load_run(case / t["b"])
    checked = 0
    for task, metrics in t["scores"].items():
        for metric, v in metrics.items():
            for k, run in (("a", a), ("b", b)):
                if v[k] is not None:
                    assert run.tasks[task].reported[metric][0] == v[k], (task, metric, k)
                    checked += 1
    assert checked >= 2
    for path, e in t["settings"].items():
        for k, run in (("a", a), ("b", b)):
            rec = next(iter(run.factors.values()))
            if e[f"{k}_recorded"]:
                v = rec[path]
                key = e[f"{k}_key"].replace("*", next(iter(run.factors)))  # the export's key per benchmark
                assert v.value == e[k] and key in (v.key or ""), (path, k, v)
    c = compare(a, b, n_boot=200)
    assert {f.path for f in c.differing()} >= set(t["differs"])


def test_the_values_a_harness_passed_are_read_from_its_command():
    """B leaves temperature, top-p and max_new_tokens to the harness (null); the command shows 0.0, 1e-05, 4096."""
    rec = next(iter(load_run(YAML / "b" / "results.yaml").factors.values()))
    assert (rec["generation.max_gen_toks"].value, rec["generation.max_gen_toks"].key) == (4096, "command: --max_tokens")
    assert rec["generation.do_sample"].value is False and rec["generation.top_p"].source == "not_applicable"
    assert rec["prompt.system_prompt"].source == "derived" and rec["prompt.system_prompt"].value is None


def test_compare_reads_results_yaml_as_a_run_in_every_format(tmp_path):
    for suffix in (".md", ".tex", ".html", ".json"):
        out = tmp_path / f"cmp{suffix}"
        res = runner.invoke(app, ["compare", str(YAML / "a" / "results.yaml"), str(YAML / "b" / "results.yaml"), "-o",
                                  str(out)])
        assert res.exit_code == 0, res.output
        assert "protocol" not in res.output and "score_micro" in out.read_text().replace("\\_\\allowbreak{}", "_")


def test_an_invocation_folder_is_one_run_and_two_models_are_refused(tmp_path):
    inv = tmp_path / "20251202-30500ae952e1eeab"
    for task in ("gpqa_diamond", "gpqa_diamond_copy"):
        d = inv / task / "artifacts"
        d.mkdir(parents=True)
        text = (YAML / "b" / "results.yaml").read_text().replace("gpqa_diamond:", f"{task}:")
        (d / "results.yml").write_text(text)
    run = load_run(inv)
    assert set(run.tasks) == {"gpqa_diamond", "gpqa_diamond_copy"} and run.source == "NeMo Evaluator"
    other = inv / "third" / "artifacts"
    other.mkdir(parents=True)
    shutil.copy(YAML / "a" / "results.yaml", other / "results.yml")
    res = runner.invoke(app, ["compare", str(inv), str(YAML / "a" / "results.yaml")])
    assert res.exit_code == 1 and "error:" in res.stderr and "Traceback" not in res.output, res.output


@pytest.mark.parametrize("name, content, tool", [
    ("summary_20240923_083857.csv", "dataset,version,metric,mode,internlm2-1.8b-hf\n"
                                    "ceval-computer_network,db9ce2,accuracy,gen,47.37\n", "OpenCompass summary"),
    ("ceval-law.json", json.dumps({"accuracy": 25.0, "details": {"0": {"pred": ["A"], "answer": "B"}}}),
     "OpenCompass results"),
    ("ceval-law_predictions.json", json.dumps({"0": {"origin_prompt": "q", "prediction": "A", "gold": "B"}}),
     "OpenCompass predictions"),
    ("task-000-arc_challenge-metrics.json", json.dumps({"task_name": "arc_challenge", "task_hash": "f0", "model_hash":
                                                        "9a", "metrics": {"acc_raw": 0.5}, "task_config": {}}),
     "OLMES / oe-eval metrics"),
    ("task-000-arc_challenge-predictions.jsonl", json.dumps({"doc_id": 0, "native_id": "Mercury_1", "metrics": {},
                                                            "model_output": []}) + "\n", "OLMES / oe-eval predictions"),
    ("healthbench_allresults.json", json.dumps({"score": 0.85, "metrics": {}, "htmls": [], "convos": []}),
     "simple-evals full results"),
])
def test_other_tools_files_are_refused_by_name(tmp_path, name, content, tool):
    """The tools' documented formats (OpenCompass's summarizer, OLMES' run_eval, simple-evals' writer), one small
    file each: one error line that names the tool, exit 1, no traceback."""
    f = tmp_path / name
    f.write_text(content)
    res = runner.invoke(app, ["compare", str(f), str(f)])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert tool in line and "does not read" in line, line
