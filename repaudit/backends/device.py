"""Honest clocks, memory readings and the attention kernel on any torch device.

A GPU runs kernels asynchronously: ``time.perf_counter()`` read right after a forward call measures
how long the kernels took to *launch*, not to run. :func:`clock` waits for the device first, so a
section timed between two :func:`clock` readings is the device's compute. On the CPU it is
``time.perf_counter()`` (nothing is queued there).
"""

from __future__ import annotations

import time


def _device(device: str):
    import torch

    return torch.device(device)


def synchronize(device: str) -> None:
    """Wait until every kernel queued on ``device`` has finished (CUDA, MPS); a no-op on the CPU."""
    import torch

    dev = _device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


class Seconds(dict[str, float]):
    """Seconds per named part of a computation, added up with ``parts[name] += s``: a part never timed reads as
    0.0 and a read does not add it (as a :class:`collections.Counter`, whose counts are typed as int, does)."""

    def __missing__(self, key: str) -> float:
        return 0.0


def clock(device: str) -> float:
    """``time.perf_counter()`` in seconds, read after :func:`synchronize` so that the work queued so far is
    inside the interval that ends here and outside the one that starts here."""
    synchronize(device)
    return time.perf_counter()


def init_device(device: str) -> float:
    """Create ``device``'s context (CUDA: the driver context, ~0.1–2 s the first time in a process) and return the
    seconds it took, so that a load's timing can say what the device itself cost; ~0 on the CPU."""
    import torch

    t = time.perf_counter()
    if _device(device).type != "cpu":
        torch.empty(1, device=device)
    return clock(device) - t


def reset_peak_memory(device: str) -> None:
    """Start a new peak for :func:`peak_memory_mib` (CUDA only; a no-op elsewhere)."""
    import torch

    dev = _device(device)
    if dev.type == "cuda" and torch.cuda.is_initialized():
        torch.cuda.reset_peak_memory_stats(dev)


def peak_memory_mib(device: str | None) -> float | None:
    """Peak GPU memory torch's allocator held in tensors on ``device`` since the last :func:`reset_peak_memory`
    (``torch.cuda.max_memory_allocated``, MiB = 2**20 bytes; the weights count while they are resident).

    Returns:
        ``None`` on the CPU and other non-CUDA devices (no such counter), before CUDA was initialised, or for no
        device (``None``: a served model's).
    """
    import torch

    if device is None:
        return None
    dev = _device(device)
    if dev.type != "cuda" or not torch.cuda.is_initialized():
        return None
    return round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)


def sdpa_kernels(model, device: str) -> dict[str, str]:
    """Which kernel torch's ``scaled_dot_product_attention`` picks for ``model``'s attention on ``device`` in its
    dtype: ``causal`` (no mask: the right-padded full-sequence path) and ``masked`` (an explicit mask: left padding,
    the shared-prefix strategy) — ``FLASH_ATTENTION``, ``EFFICIENT_ATTENTION``, ``CUDNN_ATTENTION``, ``MATH``,
    ``OVERRIDEABLE`` (torch's ``SDPBackend`` names), asked of ``torch._fused_sdp_choice`` with one query block of the
    model's head count and head size; ``{}`` where the model does not use sdpa, and ``unknown`` where torch cannot
    say (a private function: its signature may change)."""
    import torch

    cfg = model.config
    if str(getattr(cfg, "_attn_implementation", "")) != "sdpa":
        return {}
    heads = getattr(cfg, "num_attention_heads", 1)
    head_dim = getattr(cfg, "head_dim", None) or getattr(cfg, "hidden_size", 64) // heads
    q = torch.zeros(1, heads, 16, head_dim, dtype=model.dtype, device=device)
    mask = torch.ones(1, 1, 16, 16, dtype=torch.bool, device=device).tril()
    out = {}
    for case, (m, causal) in {"causal": (None, True), "masked": (mask, False)}.items():
        try:
            out[case] = torch.nn.attention.SDPBackend(torch._fused_sdp_choice(q, q, q, m, 0.0, causal)).name
        except Exception:  # a private function: anything it raises means "cannot say"
            out[case] = "unknown"
    return out
