"""lighteval 0.13 runs as compare inputs (real runs of the default model: tests/fixtures/lighteval)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from repaudit.audit.compare import compare
from repaudit.boundary import InputError
from repaudit.cli import app
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.importers.detect import load_run
from repaudit.importers.lighteval.record import canonical_task, split_task_key

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lighteval"
ZERO = FIXTURES / "arc_easy_0shot"
THREE = FIXTURES / "arc_easy_3shot"
S1 = Path(__file__).resolve().parents[2] / "shared" / "lmeval_runs" / "s1"


def _s1():
    if not S1.is_dir():
        pytest.skip(f"lm-eval runs not found at {S1} (../shared is absent)")
    return load_run(S1)


def _copy(src: Path, tmp_path: Path) -> tuple[Path, Path]:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return next(dest.rglob("results_*.json")), next(dest.rglob("details_*.parquet"))


def test_task_keys_of_every_lighteval_version():
    assert split_task_key("arc_easy_local|0") == (None, "arc_easy_local", 0)
    assert split_task_key("leaderboard|arc:challenge|25") == ("leaderboard", "arc:challenge", 25)
    assert split_task_key("custom|task") == ("custom", "task", None)
    assert canonical_task("lighteval|mmlu:anatomy|5") == "mmlu_anatomy"


def test_results_and_details_map_onto_factors_and_docs():
    run = load_run(ZERO)  # an output directory: the results file is found by content
    task = run.tasks["arc_easy_local"]
    assert task.n_docs == 40 and not run.notes
    acc = sum(d.metrics["acc"] for d in task.docs.values()) / 40
    assert task.reported["acc"][0] == pytest.approx(acc)
    f = run.factors["arc_easy_local"]
    assert f.value("serving.dtype") == "float32" and f.value("serving.batch_size") == 8
    assert f.value("serving.backend") == "hf" and f.value("prompt.chat_template") is False
    assert f.value("fewshot.num_fewshot") == 0 and f.value("data.limit") == 40 and f.value("data.split") == "validation"
    assert f.value("model.name") == "models/SmolLM2-135M-Instruct"
    # lighteval draws with Random(42) but records neither that seed nor its own version: shown as its default of
    # an unrecorded version, never as a recorded value (and it does not apply to a 0-shot run at all)
    assert f["seeds.fewshot_seed"].source == "not_applicable" and f["serving.dtype"].key.endswith("model_config.dtype")
    for d in task.docs.values():
        assert d.prediction == max(range(len(d.loglikelihoods)), key=lambda i: d.loglikelihoods[i])
        assert d.metrics["acc"] == float(str(d.prediction) == d.target)


def test_few_shot_examples_are_recorded_per_doc():
    run = load_run(THREE)
    task = run.tasks["arc_easy_local"]
    f = run.factors["arc_easy_local"]
    assert f.value("fewshot.num_fewshot") == 3
    assert f.value("fewshot.fewshot_split") == "validation" and f.source("fewshot.fewshot_split") == "derived"
    assert f.value("fewshot.sampler") == "random_sampling_from_train"
    seed = f["seeds.fewshot_seed"]  # Random(42) in lighteval's code; its files record no version: not a value
    assert (seed.source, seed.harness, seed.version, seed.known) == ("default", "lighteval", None, False)
    assert all(len(d.fewshot_ids) == 3 for d in task.docs.values())
    # the prompt hash covers the examples: no two docs share it, and none equals the 0-shot one
    zero = load_run(ZERO).tasks["arc_easy_local"].docs
    assert all(task.docs[i].prompt_hash != zero[i].prompt_hash for i in set(task.docs) & set(zero))


def test_lighteval_and_lmeval_runs_pair_docs_and_map_factors():
    lm, lt = _s1(), load_run(ZERO)
    c = compare(lm, lt, n_boot=2000)
    assert any("B's task 'arc_easy_local' is compared as A's 'arc_easy' (their shared docs have the same content)" in n
               for n in c.notes)
    ag = c.docs[0]
    # lighteval's doc.id is the row index of the split; the continuations confirm the pairing
    assert ag.n_shared == 40 and ag.choices_equal == 40 and ag.target_equal == 40 and ag.doc_hash_equal is None
    assert ag.prompt_hash_equal == 40  # override_chat_template=False: byte-identical ARC prompts
    assert ag.prediction_equal >= 39
    acc = next(s for s in c.scores if s.metric == "acc")
    assert acc.method == "paired_score" and acc.verdict == "within noise"
    rows = {r.path: r.status for r in c.factors}
    assert rows["serving.dtype"] == "same" and rows["serving.batch_size"] == "same"
    # both 0-shot: lighteval's Random(42) and lm-eval's 1234 are few-shot seeds that do not apply
    assert rows["model.name"] == "same" and rows["seeds.fewshot_seed"] == "n/a"
    assert rows["hardware.cpu_model"] == "unknown"  # lighteval does not record it


def test_docs_that_do_not_match_are_not_paired(tmp_path):
    lm = _s1()
    res, det = _copy(ZERO, tmp_path)
    table = pq.read_table(det).to_pylist()
    for row in table:  # shift every id by one: the same ids now name other docs
        row["doc"]["id"] = str(int(row["doc"]["id"]) + 1)
    pq.write_table(pa.Table.from_pylist(table), det)
    with pytest.raises(RepauditError, match="no task in common .*--pair-tasks B_TASK=A_TASK"):
        compare(lm, load_run(res), n_boot=200)  # other content under the same ids: not paired by itself
    c = compare(lm, load_run(res), n_boot=200, task_map={"arc_easy_local": "arc_easy"})
    assert c.docs[0].choices_equal < 40
    assert "the same doc id names different docs" in c.scores[0].note and c.scores[0].verdict == "not comparable"


def test_cli_compare_reads_lighteval(tmp_path):
    _s1()
    out = tmp_path / "c.md"
    r = CliRunner().invoke(app, ["compare", str(S1), str(ZERO), "--format", "markdown", "-o", str(out), "--n-boot",
                                 "500"])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "choices 40" in text and "prompt texts 40" in text and "lighteval" in text
    r = CliRunner().invoke(app, ["compare", str(S1), str(ZERO), "--pair-tasks", "arc_easy_local"])
    assert r.exit_code == 2 and "error: --pair-tasks takes B_TASK=A_TASK, got 'arc_easy_local'" in r.stderr
    r = CliRunner().invoke(app, ["compare", str(S1), str(ZERO), "--pair-tasks", "x=arc_easy"])
    assert r.exit_code == 1 and "'x' must match a task of B (arc_easy_local)" in r.stderr


def test_bad_details_are_refused_with_file_row_and_path(tmp_path):
    res, det = _copy(ZERO, tmp_path)
    det.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="is not a readable parquet file"):
        load_run(res)
    res, det = _copy(ZERO, tmp_path / "b")
    rows = pq.read_table(det).to_pylist()
    rows[3]["doc"]["query"] = None
    pq.write_table(pa.Table.from_pylist(rows), det)
    with pytest.raises(InputError, match=r"row 3: \$\.doc\.query: "):
        load_run(res)


def test_details_of_another_run_are_refused(tmp_path):
    res, det = _copy(ZERO, tmp_path)
    obj = json.loads(res.read_text())
    obj["results"]["arc_easy_local|0"]["acc"] = 0.9
    res.write_text(json.dumps(obj))
    with pytest.raises(RepauditError, match="does not belong to"):
        load_run(res)


def test_chat_template_runs_have_no_prompt_hash(tmp_path):
    res, _ = _copy(ZERO, tmp_path)
    obj = json.loads(res.read_text())
    obj["config_general"]["model_config"]["override_chat_template"] = None  # lighteval's default
    res.write_text(json.dumps(obj))
    run = load_run(res)
    assert run.factors["arc_easy_local"].source("prompt.chat_template") == "not_recorded"
    assert all(d.prompt_hash is None for d in run.tasks["arc_easy_local"].docs.values())


def test_prompt_hash_is_the_plain_text_prompt():
    d = next(iter(load_run(ZERO).tasks["arc_easy_local"].docs.values()))
    rows = pq.read_table(next(ZERO.rglob("details_*.parquet"))).to_pylist()
    row = next(r for r in rows if r["doc"]["id"] == str(d.doc_id))
    assert d.prompt_hash == sha256_text(row["doc"]["query"])  # 0-shot, no instruction: the query itself


def test_max_samples_doc_choice_is_lightevals():
    """lighteval's --max-samples keeps the first N of a Random(42) shuffle: the fixtures' doc ids (written by
    lighteval itself, 40 and 100 of ARC-Easy's 570 validation rows) are exactly that choice."""
    from repaudit.importers.lighteval.replay import lighteval_doc_ids

    for path, n in ((ZERO, 40), (THREE, 100)):
        (t,) = load_run(path).tasks.values()
        assert lighteval_doc_ids(570, n) == sorted(t.docs)
    assert lighteval_doc_ids(570, None) == list(range(570))


def test_replay_config_of_a_lighteval_run(tmp_path):
    from repaudit.audit.replay import load_replay_source

    src = load_replay_source(THREE, None, model="default", cache_dir=tmp_path)
    cfg = src.config
    assert (cfg.task, cfg.data.split, cfg.fewshot.num_fewshot, cfg.fewshot.fewshot_split, cfg.prompt.prompt_format) == \
        ("arc_easy", "validation", 3, "validation", "lmeval")
    assert cfg.doc_ids == sorted(src.docs) and len(cfg.doc_ids) == 100
    assert cfg.fewshot_from is not None
    assert (cfg.serving.dtype, cfg.serving.batch_size, cfg.prompt.chat_template) == ("float32", 8, False)
    assert sorted(cfg.fewshot_by_doc) == cfg.doc_ids and all(len(v) == 3 for v in cfg.fewshot_by_doc.values())


def test_runs_of_different_doc_lists_are_attributed_on_their_shared_docs(tmp_path):
    """The 0-shot fixture (40 docs) and the 3-shot one (100 docs) are both lighteval's --max-samples choice, so the
    40 are among the 100: every hybrid evaluates exactly those 40."""
    import dataclasses

    from repaudit.audit.attribution import attribution_configs
    from repaudit.audit.replay import load_replay_source

    a = load_replay_source(ZERO, None, model="default", cache_dir=tmp_path)
    b = load_replay_source(THREE, None, model="default", cache_dir=tmp_path)
    assert set(a.docs) < set(b.docs)
    subs = [frozenset(), frozenset({0})]
    configs = attribution_configs(a, b, ["num_fewshot"], subs)
    assert [c.doc_ids for c in configs.values()] == [sorted(a.docs)] * 2
    assert [c.fewshot.num_fewshot for c in configs.values()] == [0, 3]
    far = dataclasses.replace(b, docs={10**6: next(iter(b.docs.values()))})
    with pytest.raises(RepauditError, match="no doc in common"):
        attribution_configs(a, far, ["num_fewshot"], subs)


def test_lighteval_replay_agrees_with_the_recorded_docs(default_model_available, tmp_path):
    """20 docs of the 0-shot run and 8 of the 3-shot run (each doc's own three examples, doc 12 among
    its own) replayed with the default model: the same prompts (sha256 of lighteval's plain-text prompt), the
    same predictions, and log-likelihoods within 1e-3 nats of lighteval's."""
    from repaudit.audit.replay import load_replay_source
    from repaudit.run.runner import run

    for path, n in ((ZERO, 20), (THREE, 8)):
        src = load_replay_source(path, None, model="default", cache_dir=tmp_path)
        cfg = src.config.model_copy(update={"doc_ids": sorted(src.docs)[:n]})
        rec = run(cfg)
        assert len(rec.docs) == n
        for d in rec.docs:
            o = src.docs[d.doc_id]
            assert d.prompt_hash == o.prompt_hash, d.doc_id
            assert d.prediction == o.prediction, d.doc_id
            assert max(abs(x - y) for x, y in zip(d.loglikelihoods, o.loglikelihoods)) < 1e-3, d.doc_id
            assert d.fewshot_ids == o.fewshot_ids
        assert any(d.doc_id in d.fewshot_ids for d in rec.docs) == (path == THREE)


def test_lighteval_runs_that_cannot_be_replayed_say_why(tmp_path):
    from repaudit.audit.replay import load_replay_source

    results, _ = _copy(THREE, tmp_path)
    obj = json.loads(results.read_text())
    key = next(iter(obj["config_tasks"]))
    obj["config_tasks"][key]["prompt_function"] = "hellaswag_prompt"
    results.write_text(json.dumps(obj))
    with pytest.raises(RepauditError, match="prompt function 'hellaswag_prompt' on 'ARC-Easy' is not reimplemented"):
        load_replay_source(results, None, cache_dir=tmp_path)
    obj["config_tasks"][key]["prompt_function"] = "arc_prompt"
    obj["config_general"]["model_config"]["override_chat_template"] = True
    results.write_text(json.dumps(obj))
    with pytest.raises(RepauditError, match="ran with a chat template"):
        load_replay_source(results, None, cache_dir=tmp_path)


def test_lighteval_leak_is_flagged_in_every_format(tmp_path):
    """lighteval 0.13, ARC-Easy 3-shot (real run): doc 12 is its own first few-shot example."""
    run = load_run(THREE)
    d = run.tasks["arc_easy_local"].diagnostics
    assert d.fewshot_leaked == [12] and d.fewshot_from_eval_split is True
    assert run.tasks["arc_easy_local"].docs[12].fewshot_ids[0] == 12
    for fmt in ("markdown", "latex", "json", "rich"):
        out = tmp_path / f"c.{fmt}"
        args = ["compare", str(ZERO), str(THREE), "--n-boot", "200"]
        r = CliRunner().invoke(app, args + (["--format", fmt, "-o", str(out)] if fmt != "rich" else []),
                               terminal_width=400)
        assert r.exit_code == 0, r.output
        text = r.output if fmt == "rich" else out.read_text()
        assert "run B has 1 doc(s) among their own few-shot examples" in text.replace("\\", "") and "12" in text


def test_mutated_details_end_in_one_error_line_or_a_report(tmp_path):
    """Seeded byte flips and truncations of a real details parquet: compare reports or refuses with
    one ``error:`` line naming the file, never a traceback."""
    import random

    rng = random.Random(0)
    src = next(ZERO.rglob("details_*.parquet")).read_bytes()
    outcomes = set()
    for i in range(30):
        res, det = _copy(ZERO, tmp_path / f"m{i}")
        data = bytearray(src)
        if i % 2:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(rng.randint(1, 40)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        det.write_bytes(bytes(data))
        out = tmp_path / f"m{i}.md"
        r = CliRunner().invoke(app, ["compare", str(ZERO), str(res), "--format", "markdown", "-o", str(out),
                                     "--n-boot", "100"])
        assert r.exit_code in (0, 1) and not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit)
        if r.exit_code == 1:
            errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
            assert len(errors) == 1 and "details_" in errors[0] and not out.exists(), r.stderr
        outcomes.add(r.exit_code)
    assert 1 in outcomes
