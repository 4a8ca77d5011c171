"""The factor registry: one home per factor, consistent with RunConfig, the run files, the README and
every command; sampling factors swept and replayed; old run files read and digested as before."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.importers.factors import record_from_fingerprint
from repaudit.run.config import RunConfig
from repaudit.run.factors import COMMANDS, FACTORS, NON_FACTOR_FIELDS, replayable, support
from repaudit.run.records import read_record
from repaudit.settings import stage_of
from repaudit.vocabulary import known_path

ROOT = Path(__file__).resolve().parents[1]
OLD_RUNS = Path(__file__).resolve().parent / "fixtures" / "repaudit_runs"


def test_every_settings_field_is_a_factor_or_named_as_not_one():
    """Each field of each settings record is a registry factor (its path, or a field a factor sets), and is
    documented; RunConfig's own fields are what is evaluated and where things live, never factors."""
    from repaudit.settings import STAGES

    covered = {f.path for f in FACTORS if f.path} | {f"{stage_of(fld)}.{fld}" for f in FACTORS for fld in f.fields
                                                      if stage_of(fld)}
    for stage, cls in STAGES.items():
        for name, info in cls.model_fields.items():
            assert f"{stage}.{name}" in covered, f"{stage}.{name} is no factor's"
            assert info.description and len(info.description) > 10, f"{stage}.{name} has no description"
    own = set(RunConfig.model_fields) - set(STAGES)
    assert own == set(NON_FACTOR_FIELDS)
    assert all(RunConfig.model_fields[f].description for f in RunConfig.model_fields)  # every field documented
    factor_fields = {fld for f in FACTORS for fld in f.fields}
    assert all(stage_of(fld) or fld == "task_config" for fld in factor_fields)


def test_every_factor_takes_part_in_every_command_or_says_why():
    rows = support()
    assert len({r["factor"] for r in rows}) == len(rows) == len(FACTORS)
    for r in rows:
        for c in COMMANDS:
            assert r[c] is True or (isinstance(r[c], str) and len(r[c]) > 10), (r["factor"], c, r[c])
        assert r["compare"] is None or known_path(r["compare"]), r["compare"]


@pytest.mark.parametrize("name", ["arc_easy_3docs.json", "gsm8k_2docs.json"])
def test_run_files_written_before_the_registry_read_and_digest_as_before(name):
    rec = read_record(OLD_RUNS / name)
    assert rec.fingerprint.digest() == rec.fingerprint_digest
    rec_ = record_from_fingerprint(rec.fingerprint, rec.repaudit_version)
    for f in FACTORS:  # every recorded factor's value is found at its path, recorded (or not applicable, with why)
        if f.fingerprint is not None:
            assert isinstance(f.fingerprint(rec.fingerprint), tuple), f.name
        if f.path and f.supports("recorded") and f.path in rec_:
            v = rec_[f.path]
            assert v.source in ("recorded", "derived") or (v.source == "not_applicable" and v.note), (f.name, v)
    # every settings field of the fingerprint is in the record, and nothing is shown as a harness default
    from repaudit.vocabulary import setting_paths

    assert set(setting_paths()) <= set(rec_)
    assert all(v.source != "default" for v in rec_.values())


def test_a_replay_of_an_old_run_file_is_its_own_configuration():
    from repaudit.importers.runfile import config_from_record

    rec = read_record(OLD_RUNS / "gsm8k_2docs.json")
    cfg = config_from_record(rec, None)
    stops = list(rec.fingerprint.generation.stops)  # as sent, the EOS included: stop_at_eos adds none twice
    g = cfg.generation
    assert (cfg.task, cfg.fewshot.num_fewshot, g.max_gen_toks, list(g.until)) == ("gsm8k", 1, 8, stops)
    assert g.stop_at_eos and g.do_sample is False and g.sampling_seed is None
    assert set(replayable()) >= {"temperature", "top_k", "system_prompt", "until", "max_gen_toks"}  # each alone


def test_docs_factor_table_is_the_registry():
    from repaudit.report.factors import factors_markdown

    page = (ROOT / "docs" / "reference" / "factors.md").read_text()
    table = page.split("<!-- generated: factors -->\n", 1)[1].split("<!-- end generated -->", 1)[0]
    assert table.rstrip("\n") == factors_markdown().rstrip("\n"), "run: python docs/generate.py --write"
    res = CliRunner().invoke(app, ["factors", "--format", "json"])
    assert res.exit_code == 0 and [r["factor"] for r in json.loads(res.stdout)] == [f.name for f in FACTORS]


def test_no_function_over_60_lines():
    long = []
    for p in sorted((ROOT / "repaudit").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                long.append(f"{p.relative_to(ROOT)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_runconfig_validates_itself_on_every_copy():
    from repaudit.errors import RepauditError

    base = RunConfig(task="arc_easy")
    with pytest.raises(RepauditError, match="unknown dtype 'float8'"):
        base.model_copy(update={"dtype": "float8"})
    with pytest.raises(RepauditError, match="needs --chat-template"):
        RunConfig(task="arc_easy", fewshot_as_multiturn=True)
    with pytest.raises(RepauditError, match="--tensor-parallel-size is a setting of the vllm backend"):
        base.model_copy(update={"tensor_parallel_size": 2})
    with pytest.raises(RepauditError, match="--top-p must be between"):
        base.model_copy(update={"top_p": 0.0})


def _gsm_args(tiny_model, shared_data, tmp_path) -> list[str]:
    return ["--task", "gsm8k", "--limit", "3", "--num-fewshot", "0", "--max-gen-toks", "6", "--model", str(tiny_model),
            "--data-dir", str(shared_data), "--cache-dir", str(tmp_path / "c")]


def test_sweep_of_temperature_and_top_k_with_seeded_sampling(tiny_model, shared_data, tmp_path):
    """``sweep --factor temperature --values 0,0.7 --do-sample`` and ``--factor top_k`` on GSM8K through the
    batch store; the same sampling seed gives the same generations twice, another seed other ones (the tiny
    random model's logits are steep: at temperature 20 its samples differ by seed)."""
    from repaudit.run.runner import run

    common = _gsm_args(tiny_model, shared_data, tmp_path)
    res = CliRunner().invoke(app, ["sweep", "--factor", "temperature", "--values", "0,0.7", "--do-sample", *common,
                                   "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [p["value"] for p in data["points"]] == [0.0, 0.7] and data["factor"] == "temperature"
    res = CliRunner().invoke(app, ["sweep", "--factor", "top_k", "--values", "5,50", "--do-sample", "--temperature",
                                   "20", *common, "--json"])
    assert res.exit_code == 0, res.output
    assert [p["value"] for p in json.loads(res.stdout)["points"]] == [5, 50]
    cfg = dict(task="gsm8k", limit=3, num_fewshot=0, max_gen_toks=6, model=str(tiny_model), data_dir=shared_data,
               cache_dir=tmp_path / "c", do_sample=True, temperature=20.0, use_batch_cache=False)
    one, two = run(RunConfig(**cfg)), run(RunConfig(**cfg))
    assert [d.generation for d in one.docs] == [d.generation for d in two.docs]
    assert one.fingerprint.settings.generation.sampling_seed == 1234 and one.fingerprint.settings.generation.do_sample
    other = run(RunConfig(**cfg, sampling_seed=7))
    assert other.fingerprint.settings.generation.sampling_seed == 7
    assert [d.generation for d in other.docs] != [d.generation for d in one.docs]
    greedy = run(RunConfig(**{**cfg, "temperature": 0.0}))  # temperature 0 stays greedy, recorded as such
    g = greedy.fingerprint.settings.generation
    assert g.do_sample is False and g.sampling_seed is None


def test_a_protocol_that_sets_label_style_is_applied_and_checked(tiny_model, shared_data, tmp_path):
    proto = tmp_path / "lettered.yaml"
    proto.write_text("schema_version: 1\nname: lettered_parens\ntitle: lettered with (A) labels\nreports: raw\n"
                     "sources:\n  s: {url: 'https://example.org', section: '2', states: 'lettered, (A) labels'}\n"
                     "tasks:\n  arc_easy:\n    settings:\n      prompt_format: {value: lettered, source: s}\n"
                     "      label_style: {value: '(A)', source: s}\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["run", "--protocol", str(proto), "--task", "arc_easy", "--limit", "4", "--model",
                                   str(tiny_model), "--data-dir", str(shared_data), "--cache-dir", str(tmp_path / "c"),
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    rec = read_record(out)
    prompt = rec.fingerprint.settings.prompt
    assert prompt.label_style == "(A)" and prompt.prompt_format == "lettered"
    res = CliRunner().invoke(app, ["compare", str(out), str(proto), "--json"])
    rows = {r["factor"]: r for r in json.loads(res.stdout)["rows"]}
    assert rows["label_style"]["status"] == "conforms" and rows["label_style"]["run_value"] == "(A)"


def test_serving_settings_are_read_from_lmeval_model_args_and_lighteval_model_config(tmp_path):
    """A vLLM run's engine arguments in lm-eval's ``model_args`` and lighteval's ``model_config`` land in the
    serving and quantisation factors; one not passed is vLLM's own default, which the file does not state."""
    from repaudit.importers.detect import load_run

    src = ROOT / "tests/fixtures/lmeval/lm-evaluation-harness__llama-7B_gsm8k_8-shot.json"
    data = json.loads(src.read_text())
    data["config"].update(model="vllm", model_args="pretrained=m,tensor_parallel_size=2,kv_cache_dtype=fp8,"
                                                   "quantization=awq,enable_prefix_caching=False,max_num_seqs=64")
    (tmp_path / "lm.json").write_text(json.dumps(data))
    run = load_run(tmp_path / "lm.json")
    f = next(iter(run.factors.values()))
    assert f.value("serving.tensor_parallel_size") == 2 and f.value("serving.kv_cache_dtype") == "fp8"
    assert f.value("serving.enable_prefix_caching") is False and f.value("serving.quantization") == "awq"
    # not passed: vLLM's own default, which the file does not state
    assert f.source("serving.pipeline_parallel_size") == "not_recorded"
    assert f.source("serving.batch_invariant") == "not_recorded"
    assert f.value("serving.max_num_seqs") == 64 and "tensor_parallel_size" not in f.value("model.args")
    assert f["serving.tensor_parallel_size"].key == "config.model_args: tensor_parallel_size"

    import shutil

    light = tmp_path / "light"
    shutil.copytree(ROOT / "tests/fixtures/lighteval/arc_easy_0shot", light)
    res = next(light.glob("results/**/results_*.json"))
    data = json.loads(res.read_text())
    mc = data["config_general"]["model_config"]
    for key in ("model_parallel", "compile", "continuous_batching"):
        mc.pop(key)
    mc.update(gpu_memory_utilization=0.9, tensor_parallel_size=4, quantization="gptq", enable_prefix_caching=True,
              max_num_seqs=128)
    res.write_text(json.dumps(data))
    f = next(iter(load_run(light).factors.values()))
    assert f.value("serving.backend") == "vllm" and f.value("serving.tensor_parallel_size") == 4
    assert f.value("serving.enable_prefix_caching") is True and f.value("serving.quantization") == "gptq"
    assert f.value("serving.max_num_seqs") == 128


def test_a_vllm_setting_on_the_transformers_backend_is_one_error_line(tmp_path):
    res = CliRunner().invoke(app, ["run", "--task", "arc_easy", "--max-num-seqs", "4", "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and not (tmp_path / "r.json").exists()  # a combination that cannot run: usage
    assert res.output.strip() == "error: --max-num-seqs is a setting of the vllm backend; this run uses hf"


def test_the_terminal_factor_table_fits_80_columns_uncut():
    """Every cell whole at 80 columns (headers short, reasons as numbered notes under the table)."""
    from rich.console import Console

    from repaudit.cli.factors import _support_table
    from repaudit.run.factors import support

    console = Console(width=80, record=True, color_system=None)
    console.print(_support_table(support()))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    rows = support()
    reasons = {r[c] for r in rows for c in ("replay", "reproduce") if r[c] is not True}
    flat = " ".join(text.split())
    assert all(" ".join(r.split()) in flat for r in reasons)  # each reason is printed whole (as a note)
    assert all(r["factor"] in text for r in rows)
