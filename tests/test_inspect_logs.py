"""inspect_ai logs: real logs of the default model made by inspect_ai 0.3.285 itself (``bench/inspect_runs.py``,
``tests/fixtures/inspect/``), read by repaudit and checked against inspect's own ``read_eval_log``.

Fixtures (ARC-Easy validation, first 40 docs; ``multiple_choice()`` + ``choice()``):
``a`` (max_connections 4), ``b`` (max_connections 16 and a system message), ``epochs`` (20 docs × 3 epochs,
sampled), ``json`` (``a``'s settings, 10 docs, ``.json`` format), and ``a`` transformed into the folder sample
shape (``chunked``: every sample; ``mixed``: every other one) and a crashed run (``crashed``: no header).
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from repaudit.audit.compare import compare
from repaudit.boundary import InputError, Limits
from repaudit.importers.detect import load_run
from repaudit.importers.inspectai.log import value_to_float
from repaudit.ziparchive import ZipArchive

FIX = Path(__file__).resolve().parent / "fixtures" / "inspect"
ROOT = Path(__file__).resolve().parents[1]
INSPECT_PY = ROOT / ".venv-inspect" / "bin" / "python"

#: read with inspect's own API in its venv: sample id → epoch → (score value, answer), and the results
_READER = """
import json, sys
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[1])
out = {"status": log.status, "samples": {}, "metrics": {}}
for s in log.samples or []:
    sc = s.scores["choice"]
    out["samples"].setdefault(str(s.id), {})[s.epoch] = [sc.value, sc.answer]
for r in (log.results.scores if log.results else []):
    out["metrics"].update({f"{r.name}.{k}": m.value for k, m in r.metrics.items()})
print(json.dumps(out))
"""


def _inspect_read(path: Path) -> dict:
    if not INSPECT_PY.exists():
        pytest.skip("inspect_ai is not installed in .venv-inspect (make install-inspect)")
    proc = subprocess.run([str(INSPECT_PY), "-c", _READER, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _task(path: Path):
    run = load_run(path)
    (task,) = run.tasks.values()
    return run, task


@pytest.mark.parametrize("name", ["a.eval", "b.eval", "epochs.eval", "json.json"])
def test_reader_agrees_with_read_eval_log(name):
    """Every sample, its per-doc value (the epochs' mean for the 3-epoch log) and the reported accuracy."""
    path = FIX / f"arc_easy_{name}"
    ref = _inspect_read(path)
    run, task = _task(path)
    assert ref["status"] == "success"
    docs = {d.key: d for d in task.docs.values()}
    assert set(docs) == set(ref["samples"])
    for sid, epochs in ref["samples"].items():
        vals = [value_to_float(v) for v, _ in epochs.values()]
        assert docs[sid].metrics["accuracy"] == pytest.approx(sum(vals) / len(vals))
        assert docs[sid].prediction == epochs["1"][1]
    assert task.reported["accuracy"][0] == pytest.approx(ref["metrics"]["choice.accuracy"])
    assert task.reported["accuracy"][1] == pytest.approx(ref["metrics"]["choice.stderr"])
    assert task.n_docs == len(ref["samples"])


def test_compare_names_factors_and_flips_equal_an_independent_count():
    """a vs b differ in the batch (max_connections 4 → 16) and a system message; the flip sets equal a count
    made from inspect's own read of both logs."""
    a, b = FIX / "arc_easy_a.eval", FIX / "arc_easy_b.eval"
    ra, rb = _inspect_read(a), _inspect_read(b)
    up = sorted(s for s in ra["samples"] if ra["samples"][s]["1"][0] == "I" and rb["samples"][s]["1"][0] == "C")
    down = sorted(s for s in ra["samples"] if ra["samples"][s]["1"][0] == "C" and rb["samples"][s]["1"][0] == "I")
    run_a = load_run(a)
    c = compare(run_a, load_run(b), n_boot=500)
    differ = {f.path for f in c.differing()}
    assert {"serving.batch_size", "prompt.system_prompt", "other.max_connections"} <= differ
    assert not {p.partition(".")[0] for p in differ} - {"serving", "prompt", "data", "other"}, differ
    (row,) = c.scores
    keys = {d.doc_id: d.key for d in run_a.tasks["arc_easy_mc"].docs.values()}
    flips = {d: sorted(keys[f.doc_id] for f in c.flips if f.direction == d) for d in ("wrong_to_right",
                                                                                       "right_to_wrong")}
    assert flips == {"wrong_to_right": up, "right_to_wrong": down}
    assert (row.wrong_to_right, row.right_to_wrong) == (len(up), len(down))
    assert row.n_paired == 40 and len(up) + len(down) >= 1


@pytest.mark.parametrize("shape,expect", [("chunked", "40 folder"), ("mixed", "20 folder, 20 monolith")])
def test_folder_shape_reads_as_the_monolith(shape, expect):
    run_a, ta = _task(FIX / "arc_easy_a.eval")
    run, t = _task(FIX / f"arc_easy_{shape}.eval")
    assert any(expect in n for n in run.notes)
    assert t.reported == ta.reported
    for i, d in ta.docs.items():
        o = t.docs[i]
        assert (o.key, o.metrics, o.prediction, o.doc_hash, o.generation) == \
            (d.key, d.metrics, d.prediction, d.doc_hash, d.generation)
    # the shell keeps no messages: the prompt is the input, not the rendered conversation
    assert sum(o.prompt_hash is None for o in t.docs.values()) == int(expect.split()[0])


def test_crashed_log_reads_as_far_as_it_goes():
    run, t = _task(FIX / "arc_easy_crashed.eval")
    _, ta = _task(FIX / "arc_easy_a.eval")
    assert any("no header.json" in n for n in run.notes)
    assert any("records no results" in n for n in run.notes)
    assert t.reported["accuracy"][0] == pytest.approx(ta.reported["accuracy"][0])
    assert len(t.docs) == 40


def test_epochs_give_a_noise_note():
    run, t = _task(FIX / "arc_easy_epochs.eval")
    (note,) = [n for n in run.notes if "epochs" in n]
    assert "over 3 epochs" in note and "score differently between epochs" in note
    f = run.factors["arc_easy_mc"]
    assert f.value("data.epochs") == 3
    assert f.value("generation.do_sample") is True and f["generation.do_sample"].key == "eval.model_args.do_sample"


def test_factors_of_a_real_log():
    run, _ = _task(FIX / "arc_easy_b.eval")
    f = run.factors["arc_easy_mc"]
    assert f.value("serving.batch_size") == 16 and f["serving.batch_size"].key.endswith("max_connections")
    assert f.value("model.name") == "models/SmolLM2-135M-Instruct"
    assert f.value("serving.dtype") == "float32" and f["serving.dtype"].key == "eval.model_args.dtype"
    assert f.value("generation.do_sample") is False and f["generation.do_sample"].source == "recorded"
    assert f.value("generation.max_gen_toks") == 8
    assert f.value("fewshot.num_fewshot") == 2 and f.value("prompt.fewshot_as_multiturn") is True
    assert f["fewshot.num_fewshot"].source == "derived"  # counted from the samples' turns
    assert f.value("prompt.system_prompt").startswith("You are a careful science teacher")
    assert f.value("software.inspect_ai") == "0.3.285"
    assert f.value("data.task_args")["data"] == "arc_easy_validation.jsonl"  # a path, kept by its name only
    # greedy decoding: the sampling settings do not apply (n/a, with why), whatever the log holds
    assert f.source("generation.temperature") == "not_applicable" and "greedy" in f["generation.temperature"].note


def test_inspect_vs_lmeval_pairs_docs_by_content(lmeval_runs):
    """lm-eval's ARC-Easy run s1 (570 docs, row order) and inspect's run a (40 docs, its dataset order): every
    inspect doc pairs with the lm-eval doc of the same ARC id (read from lm-eval's samples file)."""
    s1 = lmeval_runs / "s1"
    samples = next(s1.rglob("samples_*.jsonl"))
    arc_id = {json.loads(line)["doc_id"]: json.loads(line)["doc"]["id"] for line in samples.read_text().splitlines()}
    from repaudit.audit.pairing import pair_tasks

    run_i = load_run(FIX / "arc_easy_a.eval")
    keys = {d.key for d in run_i.tasks["arc_easy_mc"].docs.values()}
    sets = pair_tasks(load_run(s1), run_i)
    assert any("40 of 40 docs paired by content" in n for n in sets.notes)
    tb = sets.b.tasks["arc_easy"]
    assert {arc_id[i] for i in tb.docs} == keys
    assert all(arc_id[i] == d.key for i, d in tb.docs.items())
    c = compare(load_run(s1), run_i, n_boot=300)
    (row,) = c.scores
    assert row.metric == "acc" and row.n_paired == 40 and row.verdict != "not_comparable"
    assert any("measured two ways" in n for n in c.notes)


def test_content_pairing_refuses_ambiguous_docs(lmeval_runs):
    """Two docs of one run with the same question, choices and target match one doc of the other: neither
    is paired by guess."""
    import dataclasses

    from repaudit.audit.docmatch import by_content

    _, ti = _task(FIX / "arc_easy_a.eval")
    _, tl = _task(lmeval_runs / "s1")
    docs = dict(ti.docs)
    docs[999] = dataclasses.replace(docs[0], doc_id=999)
    m = by_content(dataclasses.replace(ti, docs=docs), tl)
    assert 0 in m.ambiguous and 999 in m.ambiguous and 0 not in m.pairs and len(m.pairs) == 39


def _zip(path: Path, members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_zip_limits_are_checked_before_decompressing(tmp_path):
    p = _zip(tmp_path / "x.eval", {f"samples/{i}_epoch_1.json": b"{}" for i in range(30)})
    with pytest.raises(InputError, match="30 entries, over the limit of 20"):
        ZipArchive(p, Limits(max_zip_entries=20))
    bomb = _zip(tmp_path / "bomb.eval", {"header.json": b" " * (2 << 20)})  # 2 MiB in ~2 KB
    with pytest.raises(InputError, match="declares 2,097,152 bytes, over the limit of 1,048,576"):
        ZipArchive(bomb, Limits(max_bytes=1 << 20))
    z = ZipArchive(p, Limits(max_zip_read=5))
    z.read("samples/0_epoch_1.json")
    z.read("samples/1_epoch_1.json")
    with pytest.raises(InputError, match="more than 5 bytes in all"):
        z.read("samples/2_epoch_1.json")


def test_bad_logs_are_one_line_errors(tmp_path):
    header = json.loads(ZipArchive(FIX / "arc_easy_a.eval").read("header.json"))
    header["eval"]["task"] = 7
    bad = _zip(tmp_path / "bad.eval", {"header.json": json.dumps(header).encode()})
    with pytest.raises(InputError, match=r"header.json: \$\.eval\.task: "):
        load_run(bad)
    foreign = _zip(tmp_path / "foreign.zip", {"README.txt": b"hello"})
    with pytest.raises(InputError, match="not an inspect_ai .eval log"):
        load_run(foreign)
    (tmp_path / "cut.eval").write_bytes((FIX / "arc_easy_a.eval").read_bytes()[:5000])
    with pytest.raises(InputError, match="not a readable inspect_ai .eval log"):
        load_run(tmp_path / "cut.eval")
