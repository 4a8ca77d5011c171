"""Batch sizes: a fixed number of rows, or ``auto`` — length-sorted rows cut under a token budget.

lm-eval's ``--batch_size auto`` finds the largest number of rows that fits in memory by trying; here ``auto`` is a
budget of padded tokens (rows × the batch's longest row) that the device sets once
(:func:`auto_batch_tokens`), and each batch of the length-sorted rows takes as many rows as fit under it — short
rows go in large batches, long rows in small ones, and padding stays at the spread of neighbouring lengths. The
budget is recorded in the fingerprint's engine facts (``batch_tokens``) and the batch sizes used in
``batch_sizes_used``, so a run states what it did, not "auto".
"""

from __future__ import annotations

#: the CPU's budget in padded tokens: its matrix products reach their speed at a few thousand rows of
#: activations, and a larger batch only adds padding (measured in bench/scoring_speed.py's rows)
CPU_BATCH_TOKENS = 4096
#: the bounds of a GPU's budget
MIN_BATCH_TOKENS, MAX_BATCH_TOKENS = 512, 262_144
#: share of the free GPU memory the activations of one batch may take
GPU_MEMORY_SHARE = 0.4
#: auto's rows per generate_until batch at most (a decode step's cost grows with rows; its KV cache too)
MAX_GENERATION_ROWS = 256


def auto_batch_tokens(torch, model, device: str) -> int:
    """The padded-token budget of ``batch_size = auto`` on ``device``.

    CPU (and any device without a memory counter): :data:`CPU_BATCH_TOKENS`. CUDA: :data:`GPU_MEMORY_SHARE` of the
    free memory (``torch.cuda.mem_get_info``, after the weights are loaded) over the bytes one token's activations
    take at most while a batch is scored — ``dtype bytes × (4 × hidden + 3 × intermediate + 2 × vocabulary)``: the
    residual stream, attention and MLP activations, and a scored row's logits and log-probabilities (the output layer
    runs at scored positions only, at most one per token) — within [:data:`MIN_BATCH_TOKENS`,
    :data:`MAX_BATCH_TOKENS`].
    """
    if torch.device(device).type != "cuda":
        return CPU_BATCH_TOKENS
    cfg = model.config
    hidden = getattr(cfg, "hidden_size", 4096)
    inter = getattr(cfg, "intermediate_size", None) or 4 * hidden
    per_token = model.dtype.itemsize * (4 * hidden + 3 * inter + 2 * getattr(cfg, "vocab_size", 128_000))
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(min(MAX_BATCH_TOKENS, max(MIN_BATCH_TOKENS, GPU_MEMORY_SHARE * free // per_token)))


def cut(lengths: list[int], batch_size: int | str, budget: int | None) -> list[tuple[int, int]]:
    """``[start, end)`` ranges that cut rows sorted by descending length into batches.

    Args:
        lengths: each row's length in tokens, longest first (a batch is padded to its first row's length).
        batch_size: rows per batch, or ``auto``.
        budget: ``auto``'s padded-token budget; a batch takes rows while ``rows × its first row's length`` stays
            within it (one row at least, however long).

    Returns:
        Consecutive ranges covering ``0 … len(lengths)``.

    Raises:
        ValueError: ``auto`` without a budget.
    """
    n = len(lengths)
    if isinstance(batch_size, int):  # else "auto" (ServingSettings allows no other string)
        return [(k, min(k + batch_size, n)) for k in range(0, n, batch_size)]
    if budget is None:
        raise ValueError("batch size auto needs its token budget")
    out, k = [], 0
    while k < n:
        rows = max(1, budget // max(lengths[k], 1))
        out.append((k, min(k + rows, n)))
        k += rows
    return out


def generation_rows(batch_size: int | str, budget: int | None, longest: int) -> int:
    """generate_until's rows per batch: ``batch_size``, or for ``auto`` the rows whose ``longest`` tokens (context and
    new tokens) fit ``budget``, 1 to :data:`MAX_GENERATION_ROWS`.

    Raises:
        ValueError: ``auto`` without a budget.
    """
    if isinstance(batch_size, int):  # else "auto"
        return batch_size
    if budget is None:
        raise ValueError("batch size auto needs its token budget")
    return max(1, min(MAX_GENERATION_ROWS, budget // max(longest, 1)))
