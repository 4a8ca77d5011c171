"""A factor declared once: ``repetition_penalty`` (one field of the generation settings record and one registry row)
reaches the command line, transformers' ``generate``, the fingerprint, ``compare``, lm-eval's ``gen_kwargs``, the
replay, ``sweep`` and ``reproduce`` without another file knowing its name (the vLLM side: tests/test_vllm.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.importers.detect import load_run
from repaudit.run.factors import get, support
from repaudit.run.records import read_record, write_record
from repaudit.run.runner import RunConfig, run

GSM = Path(__file__).resolve().parent / "fixtures" / "lmeval_gsm8k" / "gsm8k_32"


def test_one_declaration_serves_every_command():
    f = get("repetition_penalty")
    row = next(r for r in support() if r["factor"] == "repetition_penalty")
    assert all(row[c] is True for c in ("recorded", "compared", "option", "protocol", "replay", "sweep", "reproduce"))
    assert f.path == "generation.repetition_penalty" and "CTRL" in f.doc
    assert "--repetition-penalty" in CliRunner().invoke(app, ["run", "--help"]).stdout
    assert f.parse("1.3") == 1.3


def test_it_moves_generations_is_recorded_compared_and_replayed(tiny_model, shared_data, tmp_path):
    common = dict(task="gsm8k", model=str(tiny_model), data_dir=shared_data, limit=2, num_fewshot=1, max_gen_toks=12,
                  cache_dir=tmp_path / "c")
    plain, penalised = run(RunConfig(**common)), run(RunConfig(**common, repetition_penalty=3.0))
    assert [d.generation for d in plain.docs] != [d.generation for d in penalised.docs]
    assert penalised.fingerprint.settings.generation.repetition_penalty == 3.0
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_record(plain, a)
    write_record(penalised, b)
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--json", "--n-boot", "200"])
    differing = [(f["path"], f["a"]["value"], f["b"]["value"]) for f in json.loads(res.stdout)["factors"]
                 if f["status"] == "differs"]
    assert ("generation.repetition_penalty", 1.0, 3.0) in differing
    from repaudit.importers.runfile import config_from_record

    assert config_from_record(read_record(b), shared_data).generation.repetition_penalty == 3.0
    # a record written before the field existed holds no key for it: it reads at the default, same digest
    raw = json.loads(a.read_text())
    raw["fingerprint"]["settings"]["generation"].pop("repetition_penalty")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    assert read_record(old).fingerprint.digest() == plain.fingerprint_digest


def test_lm_eval_gen_kwargs_are_read_and_replayed(tmp_path):
    run_dir = tmp_path / "gsm8k"
    shutil.copytree(GSM, run_dir)
    results = next(run_dir.glob("results_*.json"))
    raw = json.loads(results.read_text())
    raw["config"]["gen_kwargs"] = {"max_gen_toks": 32, "repetition_penalty": 1.3}
    results.write_text(json.dumps(raw))
    factors = load_run(run_dir).factors["gsm8k_local"]
    assert factors.value("generation.repetition_penalty") == 1.3
    assert factors["generation.repetition_penalty"].key == "config.gen_kwargs.repetition_penalty"
    assert load_run(GSM).factors["gsm8k_local"].source("generation.repetition_penalty") == "not_recorded"
    from repaudit.importers.lmeval.replay import config_from_lmeval

    cfg = config_from_lmeval("gsm8k_local", factors, results, None, "default", tmp_path,
                             configs={"gsm8k_local": raw["configs"]["gsm8k_local"]})
    assert cfg.generation.repetition_penalty == 1.3
