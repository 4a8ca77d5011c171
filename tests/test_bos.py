"""BOS as a factor: set on run, resolved from the token ids sent, compared, replayed and attributed."""

from __future__ import annotations

import pytest

from repaudit.backends.tokens import RequestEncoder
from repaudit.run.records import write_record
from repaudit.run.runner import RunConfig, run


def test_encoder_applies_and_records_bos(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    bos = tok.bos_token_id
    assert bos is not None and tok.encode("Question: x")[0] != bos  # SmolLM2's tokenizer adds no BOS itself
    default, on, off = RequestEncoder(tok), RequestEncoder(tok, True), RequestEncoder(tok, False)
    assert default.encode("Question: x") == off.encode("Question: x") == tok.encode("Question: x")
    ctx, cont = on.encode_pair("Question: x\nAnswer:", " yes")
    assert ctx[0] == bos and cont == default.encode_pair("Question: x\nAnswer:", " yes")[1]
    assert on.resolved_bos() is True and off.resolved_bos() is False and RequestEncoder(tok).resolved_bos() is None
    assert off.encode(tok.bos_token + "Question: x")[0] != bos  # a BOS already in the text is dropped too


def test_bos_is_a_recorded_factor_of_run(tiny_model, shared_data, tmp_path):
    from repaudit.audit.compare import compare
    from repaudit.importers.detect import load_run

    paths = []
    for flag in (None, True):
        rec = run(RunConfig(task="arc_easy", data_dir=shared_data, model=str(tiny_model), limit=4, batch_size=4,
                            add_bos_token=flag, cache_dir=tmp_path / "cache"))
        assert rec.fingerprint.settings.serving.add_bos_token is flag
        assert rec.fingerprint.backend.bos_first is (flag is True)
        paths.append(tmp_path / f"{flag}.json")
        write_record(rec, paths[-1])
    c = compare(load_run(paths[0]), load_run(paths[1]), n_boot=200)
    assert "serving.add_bos_token" in {f.path for f in c.differing()}
    assert c.docs[0].prompt_hash_equal == 4  # the same text: only the token ids differ


@pytest.mark.integration
def test_bos_on_off_with_the_default_model_is_attributed(default_model_available, shared_data, tmp_path):
    """ARC-Easy, 30 docs, default model: BOS forced on vs the tokenizer's default (off); attribute
    replays both and gives the whole delta to add_bos_token, residual 0 (shared_prefix scoring: the BOS
    reaches the prompt the same way on both numerical paths, at a quarter of the test's time)."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.executor import LocalExecutor
    from repaudit.audit.replay import load_replay_source

    paths = []
    for flag in (None, True):
        rec = run(RunConfig(task="arc_easy", data_dir=shared_data, limit=30, add_bos_token=flag,
                            scoring_strategy="shared_prefix", cache_dir=tmp_path / "cache"))
        paths.append(tmp_path / f"bos_{flag}.json")
        write_record(rec, paths[-1])
    a, b = (load_replay_source(p, shared_data, None, tmp_path / "cache") for p in paths)
    att = run_attribution(a, b, LocalExecutor(), n_boot=500)
    assert att.factors == ["add_bos_token"] and att.residual == 0.0
    assert att.fidelity_a == att.fidelity_b == 1.0
    assert att.phi[0] == pytest.approx(att.recorded_b - att.recorded_a)
    assert att.recorded_b != att.recorded_a  # the BOS moves the score on these docs: the attribution has a delta
