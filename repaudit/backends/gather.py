"""Continuation scores of a whole batch on the device, read back to the host in one transfer.

Both scorers (:mod:`repaudit.backends.hf`'s full-sequence path and :mod:`repaudit.backends.prefix`) end a
forward pass with ``logprobs`` — one row of log-probabilities over the vocabulary per position that
predicts a continuation token — and need, per choice, the sum of its tokens' log-probabilities and
whether every token is the row's argmax. Reading those per choice (``float(t.sum())``, ``bool(...)``)
costs two host synchronisations per choice, which dominate a GPU batch. Here every choice's tokens are
gathered at once, summed and checked on the device, and one ``tolist()`` brings all results back.

**Bit-identity.** lm-eval sums each continuation as its own contiguous tensor (``logits.sum()``), and
torch's CPU sum adds a row of ``k`` elements in an order that depends on ``k`` (four interleaved partial
sums, vector lanes from 16 elements on, a scalar tail added first): a segment sum (``index_add_``,
``cumsum``) adds left to right, and zero-padding rows to a common length moves elements into other
lanes; both change float32 results in the last bits (measured in float32: padding differed for 206 of
the lengths 1–299, ``index_add_`` for 294). Choices of equal length are therefore summed together as
the rows of a contiguous ``(n, k)`` view, which torch reduces row by row with exactly the 1-D kernel:
bit-identical to the per-choice sums for every length 1–299 (7 rows) in float32 and bfloat16, and in
float32 for 17 lengths up to 2,047 with 1–600 rows (torch 2.13 on the CPU, AVX-512, 2 threads;
``tests/test_gather.py`` checks lengths 1–1,025 in float32). :meth:`ChoiceIndex.scores` runs one sum
per distinct length, not per choice. On a GPU, whether the row sums equal the 1-D ones has not been
measured (no GPU here); ``bench/gpu_check.sh`` compares predictions with lm-eval's there.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby


class ChoiceIndex:
    """Where each choice's tokens are among a batch's scored positions, on the device.

    Built before the forward pass, so that its host-to-device copy is queued ahead of the model's
    kernels rather than behind them.

    Args:
        torch: the torch module.
        device: torch device string.
        choices: per choice, ``(rows, targets)``: for each continuation token in order, the row of
            ``logprobs`` that predicts it and its token id (equal lengths ≥ 1).
    """

    def __init__(self, torch, device: str, choices: Sequence[tuple[Sequence[int], Sequence[int]]]):
        # choices ordered by length (stable), so each length's tokens are one contiguous block
        self.order = sorted(range(len(choices)), key=lambda c: len(choices[c][1]))
        self.blocks = [(k, len(list(g))) for k, g in groupby(len(choices[c][1]) for c in self.order)]
        rows = [r for c in self.order for r in choices[c][0]]
        targets = [t for c in self.order for t in choices[c][1]]
        self.index = torch.tensor([rows, targets], dtype=torch.long, device=device)  # (2, tokens)
        self.torch = torch

    def gather(self, logprobs, greedy):
        """``(2, choices)`` float32 tensor on the device, choices in length order: row 0 each choice's summed
        log-probability (in ``logprobs``' dtype, then widened: float32 holds every bfloat16/float16/float32 sum
        exactly), row 1 whether every token equals ``greedy`` at its row (0/1).

        Args:
            logprobs: ``(positions, vocabulary)`` log-probabilities on the device.
            greedy: ``(positions,)`` argmax of each ``logprobs`` row.

        One gather, one comparison and one sum per distinct continuation length, all on the device.
        """
        torch = self.torch
        rows, targets = self.index[0], self.index[1]
        values = logprobs[rows, targets]            # (tokens,)
        hits = greedy[rows] == targets              # (tokens,)
        sums, alls, at = [], [], 0
        for k, n in self.blocks:
            # (n, k) contiguous rows: torch sums each exactly as the 1-D per-choice sum (module docstring)
            sums.append(values[at:at + n * k].view(n, k).sum(dim=1))
            alls.append(hits[at:at + n * k].view(n, k).all(dim=1))
            at += n * k
        return torch.stack([torch.cat(sums).to(torch.float32), torch.cat(alls).to(torch.float32)])

    def read(self, gathered) -> list[tuple[float, bool]]:
        """Per choice, in the order given: (sum of its tokens' log-probabilities as a Python float in nats, whether
        every token is greedy), from :meth:`gather`'s tensor in one device-to-host transfer."""
        both = gathered.tolist()
        out: list[tuple[float, bool]] = [(0.0, False)] * len(self.order)
        for pos, c in enumerate(self.order):
            out[c] = (both[0][pos], both[1][pos] == 1.0)
        return out

    def scores(self, logprobs, greedy) -> list[tuple[float, bool]]:
        """:meth:`gather` then :meth:`read`: per choice, in the order given, (summed log-probability in nats,
        all tokens greedy)."""
        return self.read(self.gather(logprobs, greedy))
