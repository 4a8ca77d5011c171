"""Batch sizes: fixed rows, or auto — length-sorted rows cut under a token budget."""

from __future__ import annotations

import random

import pytest

from repaudit.backends.batching import CPU_BATCH_TOKENS, cut, generation_rows


@pytest.mark.parametrize("seed", range(5))
def test_auto_batches_cover_every_row_once_and_stay_under_the_budget(seed):
    rng = random.Random(seed)
    lengths = sorted((rng.randint(1, 900) for _ in range(rng.randint(1, 400))), reverse=True)
    budget = rng.choice([64, 512, 4096])
    ranges = cut(lengths, "auto", budget)
    assert [a for a, _ in ranges] == [0] + [b for _, b in ranges[:-1]] and ranges[-1][1] == len(lengths)
    for a, b in ranges:
        # padded to the first (longest) row; one row at least however long; as many as fit, never one more
        assert (b - a) * lengths[a] <= budget or b - a == 1
        assert b == len(lengths) or (b - a + 1) * lengths[a] > budget


def test_fixed_batches_are_lm_eval_slices():
    assert cut([5, 4, 3, 2, 1], 2, None) == [(0, 2), (2, 4), (4, 5)]
    assert generation_rows(3, None, 100) == 3
    assert generation_rows("auto", 1000, 100) == 10 and generation_rows("auto", 10, 100) == 1


def test_auto_through_the_backend_records_its_budget_and_matches_fixed_batches(tiny_model, tmp_path):
    from repaudit.backends.hf import HFBackend
    from repaudit.backends.model_source import resolve_model
    from repaudit.settings import ServingSettings
    from repaudit.tasks.requests import LoglikelihoodRequest

    reqs = [LoglikelihoodRequest("word " * n + "end:", c) for n in (1, 3, 9, 40, 200) for c in (" a", " b c")]
    be = HFBackend(resolve_model(str(tiny_model), None, tmp_path), ServingSettings(batch_size=4))
    fixed, key = be.loglikelihood(reqs), be.config_key("loglikelihood")
    assert "batch_tokens" not in be.info.engine
    be.configure(ServingSettings(batch_size="auto"))
    assert be.info.engine["batch_tokens"] == be.batch_tokens == CPU_BATCH_TOKENS
    be.batch_tokens = 300  # small enough that the long rows go alone and the short ones together
    auto = be.loglikelihood(reqs)
    assert be.config_key("loglikelihood") != key
    assert max(be.batch_sizes_used) > 1 and min(be.batch_sizes_used) == 1
    for x, y in zip(fixed, auto):
        assert y.logprob == pytest.approx(x.logprob, abs=1e-4) and (x.is_greedy, x.n_tokens) == (y.is_greedy,
                                                                                                 y.n_tokens)
