"""Continuation scores gathered on the device equal, bit for bit, the per-choice sums lm-eval makes."""

from __future__ import annotations

import torch

from repaudit.backends.gather import ChoiceIndex

#: lengths across the CPU sum kernel's thresholds (4 partial sums, 16-lane vectors, 4 × 16, cascade levels)
LENGTHS = [*range(1, 81), 127, 128, 129, 255, 257, 600, 1025]


def _per_choice(logprobs, greedy, rows, targets) -> tuple[float, bool]:
    """lm-eval's (and repaudit's former) reading: one contiguous tensor per choice, summed and read on its own."""
    idx, tgt = torch.tensor(rows), torch.tensor(targets)
    sel = logprobs[idx].gather(1, tgt[:, None]).squeeze(-1)
    return float(sel.sum()), bool((greedy[idx] == tgt).all())


def test_scores_are_bit_identical_to_per_choice_sums_in_float32():
    gen = torch.Generator().manual_seed(0)
    positions, vocab = 1200, 50
    logprobs = torch.log_softmax(torch.randn(positions, vocab, generator=gen) * 3, dim=-1)
    greedy = logprobs.argmax(-1)
    choices = []
    for i, k in enumerate(LENGTHS * 3):  # three choices of every length, interleaved with the others
        rows = torch.randint(0, positions, (k,), generator=gen).tolist()
        # every 5th choice is the greedy path itself, so both flag values occur
        targets = greedy[rows].tolist() if i % 5 == 0 else torch.randint(0, vocab, (k,), generator=gen).tolist()
        choices.append((rows, targets))
    got = ChoiceIndex(torch, "cpu", choices).scores(logprobs, greedy)
    want = [_per_choice(logprobs, greedy, r, t) for r, t in choices]
    assert got == want  # exact: float equality, not approx
    assert {g for _, g in got} == {True, False}


def test_scores_keep_the_given_choice_order():
    logprobs = torch.log_softmax(torch.arange(12.0).reshape(3, 4), dim=-1)
    greedy = logprobs.argmax(-1)
    choices = [([0, 1, 2], [3, 3, 3]), ([2], [0]), ([1, 2], [3, 1])]  # lengths 3, 1, 2
    got = ChoiceIndex(torch, "cpu", choices).scores(logprobs, greedy)
    assert got == [_per_choice(logprobs, greedy, r, t) for r, t in choices]
    assert [g for _, g in got] == [True, False, False]
