"""The transformers backend against an independent, unbatched computation on a tiny model."""

from __future__ import annotations

import pytest
import torch

from repaudit.backends.hf import HFBackend
from repaudit.backends.model_source import resolve_model
from repaudit.backends.store import BatchCache
from repaudit.settings import ServingSettings
from repaudit.tasks.requests import GenerateRequest, GenerationSettings, LoglikelihoodRequest

REQS = [
    LoglikelihoodRequest("Question: What is the boiling point of water?\nAnswer:", " 100 degrees"),
    LoglikelihoodRequest("Question: What is the boiling point of water?\nAnswer:", " cold"),
    LoglikelihoodRequest("The capital of France is ", "Paris"),  # trailing space moves to the continuation
    LoglikelihoodRequest("Pick one:", " A"),
    LoglikelihoodRequest("Pick one:", " B"),
    LoglikelihoodRequest("A much longer context that makes the batch ragged, with several more words in it.", " yes"),
]


@pytest.fixture(scope="module")
def backend_factory(tiny_model, tmp_path_factory):
    resolved = resolve_model(str(tiny_model), None, tmp_path_factory.mktemp("c"))
    return lambda **kw: HFBackend(resolved, ServingSettings(**kw))


def _reference(backend: HFBackend, req: LoglikelihoodRequest) -> tuple[float, bool]:
    """Single-sequence float64 scoring: log p(continuation | context), no batching, no padding."""
    ctx, cont = backend.encode_pair(req.context, req.continuation)
    ids = torch.tensor([ctx + cont])
    with torch.inference_mode():
        logits = backend.model(ids).logits[0].double()
    lp = torch.log_softmax(logits, -1)[len(ctx) - 1: len(ctx) + len(cont) - 1]
    tgt = torch.tensor(cont)
    return float(lp.gather(1, tgt[:, None]).sum()), bool((lp.argmax(-1) == tgt).all())


def test_loglikelihood_matches_unbatched_reference(backend_factory):
    be = backend_factory(dtype="float32", batch_size=4)
    got = be.loglikelihood(REQS)
    for req, res in zip(REQS, got):
        ref_lp, ref_greedy = _reference(be, req)
        assert res.logprob == pytest.approx(ref_lp, abs=1e-3)
        assert res.is_greedy == ref_greedy
        assert res.n_tokens == len(be.encode_pair(req.context, req.continuation)[1])


def test_trailing_space_moves_to_continuation(backend_factory):
    be = backend_factory()
    ctx, cont = be.encode_pair("The capital of France is ", "Paris")
    assert be.tokenizer.decode(cont) == " Paris"
    assert be.tokenizer.decode(ctx) == "The capital of France is"


def test_is_greedy_true_for_the_greedy_continuation(backend_factory):
    be = backend_factory()
    ctx = "Once upon a time"
    ids = torch.tensor([be.tokenizer.encode(ctx)])
    with torch.inference_mode():
        nxt = be.model.generate(ids, max_new_tokens=3, do_sample=False)[0, ids.shape[1]:].tolist()
    cont = be.tokenizer.decode(nxt)
    if be.tokenizer.encode(ctx + cont)[ids.shape[1]:] != nxt:
        pytest.skip("greedy tokens do not round-trip through the tokenizer for this random model")
    assert be.loglikelihood([LoglikelihoodRequest(ctx, cont)])[0].is_greedy


def test_float32_batch_size_and_padding_side_invariance(backend_factory):
    a = backend_factory(batch_size=1).loglikelihood(REQS)
    b = backend_factory(batch_size=6).loglikelihood(REQS)
    c = backend_factory(batch_size=6, padding_side="left").loglikelihood(REQS)
    for x, y, z in zip(a, b, c):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-4)
        assert x.logprob == pytest.approx(z.logprob, abs=1e-4)


def test_batch_sizes_used_are_recorded(backend_factory):
    be = backend_factory(batch_size=4)
    be.loglikelihood(REQS)
    # " A" and " B" after the same context share one row (one-token continuation group): 5 rows.
    assert dict(be.batch_sizes_used) == {4: 1, 1: 1}


def test_cache_resumes_without_recomputing(backend_factory, tmp_path):
    cache = BatchCache(tmp_path / "b.sqlite")
    be = backend_factory(batch_size=2)
    first = be.loglikelihood(REQS, cache)
    computed = cache.count()
    assert computed == 3
    be2 = backend_factory(batch_size=2)
    be2.model = None  # any forward pass would now fail
    second = be2.loglikelihood(REQS, cache)
    assert [r.logprob for r in first] == [r.logprob for r in second]
    assert cache.count() == computed


def test_generate_until_is_deterministic_and_stops(backend_factory):
    be = backend_factory(batch_size=2)
    settings = GenerationSettings(until=("\n",), max_gen_toks=12)
    reqs = [GenerateRequest("Question: 2+2?\nAnswer:", settings), GenerateRequest("Hello", settings)]
    a = be.generate_until(reqs)
    b = be.generate_until(reqs)
    assert a == b
    assert all("\n" not in g.text for g in a)
    # the unbatched, unpadded greedy generation gives the same text, token count and finish reason
    for req, got in zip(reqs, a):
        ids = torch.tensor([be.tokenizer.encode(req.context)])
        with torch.inference_mode():
            g = be.model.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1]:].tolist()
        full = be.tokenizer.decode(g, skip_special_tokens=True)
        assert full.split("\n")[0] == got.text
        eos = be.tokenizer.eos_token_id
        if "\n" in full:
            assert got.finish == "stop:\n"
        elif eos in g:
            assert got.finish == "eos" and got.n_tokens == g.index(eos) + 1
        else:
            assert got.finish == "length" and got.n_tokens == len(g) == 12


# ------------------------------------------------------------------ shared-prefix scoring
SHOTS = "The following are questions with answers.\n\n" + "".join(
    f"Question: How many legs does animal number {i} have?\nAnswer: {2 * i}\n\n" for i in range(6))
PREFIX_REQS = REQS + [LoglikelihoodRequest(SHOTS + f"Question: What colour is thing {q}?\nAnswer:", c)
                      for q in range(5) for c in (" red", " dark green", " B", " red")]  # duplicate " red" too


def test_shared_prefix_matches_full_sequence(backend_factory):
    full = backend_factory(batch_size=3)
    shared = backend_factory(batch_size=3, scoring_strategy="shared_prefix")
    a, b = full.loglikelihood(PREFIX_REQS), shared.loglikelihood(PREFIX_REQS)
    for req, x, y in zip(PREFIX_REQS, a, b):
        assert y.logprob == pytest.approx(x.logprob, abs=1e-4), req
        assert (x.is_greedy, x.n_tokens) == (y.is_greedy, y.n_tokens)
    assert shared.tokens_computed < full.tokens_computed / 2
    assert full.config_key("loglikelihood") != shared.config_key("loglikelihood")


def test_shared_prefix_plan_covers_every_request_once_and_finds_the_fewshot_block(backend_factory):
    from repaudit.backends.prefix import plan_groups, plan_units

    be = backend_factory()
    enc = [be.encode_pair(r.context, r.continuation) for r in PREFIX_REQS]
    groups = plan_groups(plan_units(enc, be.info.max_length), batch_size=2)
    seen = sorted(m for g in groups for b in g.batches for u in b for ms in u.members for m in ms)
    assert seen == list(range(len(PREFIX_REQS)))
    shared = [g for g in groups if g.prefix]
    assert len(shared) == 1 and sum(len(b) for b in shared[0].batches) == 5
    assert be.tokenizer.decode(shared[0].prefix).startswith(SHOTS.rstrip()[:40])
    assert all(len(b) <= 2 for g in groups for b in g.batches)


def test_shared_prefix_left_truncates_long_contexts_like_full_sequence(backend_factory):
    full, shared = backend_factory(), backend_factory(scoring_strategy="shared_prefix")
    for be in (full, shared):
        be.info.max_length = 24  # force truncation on the long requests
    a, b = full.loglikelihood(PREFIX_REQS[-4:]), shared.loglikelihood(PREFIX_REQS[-4:])
    for x, y in zip(a, b):
        assert y.logprob == pytest.approx(x.logprob, abs=1e-4)


def test_unknown_scoring_strategy_is_refused():
    """A backend takes the serving settings record, whose own types refuse a value before any model loads; the
    command line names the option."""
    from pydantic import ValidationError

    from repaudit.errors import RepauditError
    from repaudit.run.config import RunConfig

    with pytest.raises(ValidationError):
        ServingSettings(scoring_strategy="fast")
    with pytest.raises(RepauditError, match="unknown scoring strategy 'fast'"):
        RunConfig(task="arc_easy", scoring_strategy="fast")


# ------------------------------------------------------------------ host reads
#: the Tensor methods that read a value back to the host (each one a device synchronisation on a GPU)
HOST_READS = ("item", "tolist", "__float__", "__bool__", "__int__")


def _count_host_reads(monkeypatch) -> dict:
    counts = dict.fromkeys(HOST_READS, 0)
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _name=name, _original=original, **kw):
            counts[_name] += 1
            return _original(self, *a, **kw)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return counts


@pytest.mark.parametrize("strategy", ["full_sequence", "shared_prefix"])
def test_a_batch_reads_the_host_a_fixed_number_of_times_not_once_per_choice(backend_factory, monkeypatch, strategy):
    """Two choices and 26 choices of one context (one row, one batch) cost the same host reads, and few: the
    scores come back in one transfer (repaudit.backends.gather), not two scalar reads per choice."""
    ctx = "Pick the letter that comes first in the alphabet:"
    letters = [" " + chr(ord("A") + i) for i in range(26)]
    be = backend_factory(batch_size=64, scoring_strategy=strategy)
    reference = be.loglikelihood([LoglikelihoodRequest(ctx, c) for c in letters])
    seen = []
    for n in (2, 26):
        reqs = [LoglikelihoodRequest(ctx, c) for c in letters[:n]]
        counts = _count_host_reads(monkeypatch)
        got = be.loglikelihood(reqs)
        monkeypatch.undo()
        assert sum(be.batch_sizes_used.values()) == len(seen) + 2  # one batch per call (the reference's too)
        assert [(r.logprob, r.is_greedy) for r in got] == [(r.logprob, r.is_greedy) for r in reference[:n]]
        seen.append(counts)
    assert seen[0] == seen[1], seen
    assert sum(seen[1].values()) <= 2, seen[1]
