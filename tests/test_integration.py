"""Integration: the default model on the full ARC-Easy validation split, against lm-eval's own run.

``../shared/lmeval_runs/s1`` is lm-evaluation-harness 0.4.13 on the same model (the same converted
weights, sha256 a672150f…), docs, format, 0-shot, float32 and batch size 8.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from repaudit.backends.model_source import resolve_default_model
from repaudit.run.runner import RunConfig, default_cache_dir, run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def default_model(default_model_available):
    return resolve_default_model(default_cache_dir())


def test_default_model_is_cached_as_safetensors(default_model):
    assert (default_model.path / "model.safetensors").is_file()
    assert default_model.gguf_sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert resolve_default_model(default_cache_dir()).path == default_model.path  # no second conversion


#: docs of the parity test (the suite's time; the 570-doc parity is bench/parity_lmeval.py's)
N_PARITY = 60


def test_arc_easy_parity_with_lmeval(default_model, shared_data, lmeval_runs, tmp_path):
    """The first 60 of lm-eval's 570 ARC-Easy docs (s1: 0-shot, float32, batch 8) with the default model: the same
    docs, prompts and predictions, the same per-doc acc and acc_norm; compare pairs the 60 and names the doc count
    as the one data difference (the full 570-doc parity is bench/parity_lmeval.py's)."""
    rec = run(RunConfig(task="arc_easy", data_dir=shared_data, dtype="float32", batch_size=8, limit=N_PARITY,
                        cache_dir=tmp_path))
    samples = {json.loads(line)["doc_id"]: json.loads(line)
               for line in next((lmeval_runs / "s1").rglob("samples_*.jsonl")).open()}
    assert len(samples) == 570 and [d.doc_id for d in rec.docs] == list(range(N_PARITY))
    assert rec.fingerprint.model.weights_sha256.startswith("a672150f")
    agree = sum(int(np.argmax([float(r[0][0]) for r in samples[d.doc_id]["resps"]])) == d.prediction
                for d in rec.docs)
    assert agree / N_PARITY >= 0.99
    for metric in ("acc", "acc_norm"):
        theirs = np.mean([float(samples[d.doc_id][metric]) for d in rec.docs])
        ours = next(m.value for m in rec.metrics if m.name == metric)
        assert abs(ours - theirs) <= 0.005, metric
    assert all(d.doc_hash == samples[d.doc_id]["doc_hash"] and d.prompt_hash == samples[d.doc_id]["prompt_hash"]
               for d in rec.docs)
    # compare reports the parity and the remaining factor differences honestly
    from repaudit.audit.compare import compare, load_run
    from repaudit.run.records import write_record

    path = tmp_path / "run.json"
    write_record(rec, path)
    c = compare(load_run(path), load_run(next((lmeval_runs / "s1").rglob("results_*.json"))), n_boot=500)
    ag = c.docs[0]
    assert ag.n_shared == ag.doc_hash_equal == ag.prompt_hash_equal == ag.choices_equal == N_PARITY
    assert ag.prediction_equal >= N_PARITY - 1
    differing = {(f.group, f.field) for f in c.differing()}
    # the evaluation protocol itself is the same ...
    for same in [("dtype", "dtype"), ("batch_size", "batch_size"), ("fewshot", "num_fewshot"),
                 ("fewshot", "ids_sha256"), ("seed", "fewshot"), ("data", "split"),
                 ("metric_variant", "metrics"), ("prompt_format", "target_delimiter")]:
        assert same not in differing
    # ... and what does differ is named: the model is a path there and an alias here; 60 docs here, 570 there
    assert ("model", "name") in differing and any(g == "data" and f in ("limit", "n_docs") for g, f in differing)
    assert all(r.verdict == "within noise" for r in c.scores)
