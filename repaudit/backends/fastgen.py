"""Greedy generate_until with the shared prompt prefix computed once and rows replaced as they finish.

The ``prefix_cache`` generation strategy of the hf backend. lm-eval (and the ``exact`` strategy) call
``model.generate`` on a left-padded batch: every row prefills its whole prompt (the same few-shot block
in every GSM8K row) and the batch decodes until its longest row stops. Here:

1. the longest token prefix shared by every prompt of the call (the few-shot block) is run once; its
   key/values are copied into every row's cache;
2. at most ``slots`` rows are in flight; a row leaves as soon as it ends (EOS, a stop string in its
   decoded text, or the token budget) and a waiting prompt is prefilled into its place (continuous
   batching), so decode steps stay full and no row decodes past its own end;
3. a stop string is looked for in the decoded tail only (the last ``max(len(stop)) + 8`` tokens);
4. decode steps write each new key/value column into a buffer with spare columns instead of concatenating
   the whole cache (``DynamicLayer.update`` copies every row's cache each step: half of a decode step's time
   at 8 rows × 900 tokens on a 2-core CPU, measured with ``torch.profiler``).

Rows of different lengths share one cache tensor, right-aligned: the columns between the shared prefix
and a row's own tokens are masked padding, and each row's positions count its real tokens only, so the
row sees exactly the token sequence it would see alone. What differs from the exact strategy is the order
of floating-point operations (the prefix's key/values come from a batch-1 forward, attention runs over
masked columns), which can change an argmax on a near-tie; ``bench/generation_speed.py`` measures
how often the text differs.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from repaudit.backends.prefix import cache_keyword

__all__ = ["shared_prefix_length", "prefix_groups", "generate_continuous"]

#: a group's members share at least this many tokens, and forming a group costs this many (a shorter prefix
#: saves less than the group's drain costs: its last rows decode with the batch part empty)
MIN_SHARED = 32


def shared_prefix_length(prompts: list[list[int]]) -> int:
    """Length of the longest common token prefix of ``prompts``, leaving every prompt at least one token of
    its own (its last token produces its first logits). 0 for fewer than two prompts."""
    if len(prompts) < 2:
        return 0
    first, n = prompts[0], min(len(p) for p in prompts) - 1
    for p in prompts[1:]:
        k = 0
        while k < n and p[k] == first[k]:
            k += 1
        n = k
        if n == 0:
            break
    return max(n, 0)


def prefix_groups(prompts: list[list[int]], min_shared: int = MIN_SHARED) -> list[list[int]]:
    """Partition prompt indices into groups whose members share a long token prefix, saving the most prefill.

    Prompts are ordered lexicographically, so the common prefix of any run of neighbours is the smallest
    prefix two adjacent members share. A dynamic programme over that order picks the runs that maximise the
    tokens not prefilled again, ``Σ (size − 1) × common prefix − min_shared`` per group (the constant stands
    for a group's drain: its last rows decode with the batch part empty), with a common prefix of at least
    ``min_shared`` tokens. So a few prompts with another block do not shrink everyone's prefix: lm-eval's
    ``first_n`` sampler skips a doc that is itself among the first examples, giving docs 0..n other blocks
    that share only their first examples with the rest. Prompts left alone are pooled into one last group.
    O(n²) in the number of prompts of a call (a queue of the backend).

    Returns:
        Lists of indices into ``prompts``, each in input order, ordered by their first index; every index
        appears once.
    """
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    n = len(order)
    adj = [0] + [shared_prefix_length([prompts[a], prompts[b]]) for a, b in zip(order, order[1:])]
    best, cut = [0] * (n + 1), [0] * (n + 1)  # best saving for order[:j]; start of the last run
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1], j - 1
        common = None
        for i in range(j - 1, 0, -1):  # the run order[i-1:j], its common prefix = min(adj[i:j])
            common = adj[i] if common is None else min(common, adj[i])
            if common < min_shared:
                break
            gain = best[i - 1] + (j - i) * common - min_shared
            if gain > best[j]:
                best[j], cut[j] = gain, i - 1
    runs, j = [], n
    while j > 0:
        runs.append(order[cut[j]:j])
        j = cut[j]
    singles = sorted(r[0] for r in runs if len(r) == 1)
    out = [sorted(r) for r in runs if len(r) > 1] + ([singles] if singles else [])
    return sorted(out, key=min)


class _Batch:
    """The rows in flight: per-layer key/value tensors ``[rows, heads, width, head_dim]`` right-aligned, the
    attention mask ``[rows, width]`` (1 = a real token) and the next position id of each row. Between
    changes of membership, decode steps append to ``live`` (a cache of buffered layers over ``kv``)."""

    def __init__(self, torch, cache_cls):
        self.torch, self.cache_cls = torch, cache_cls
        self.live = None
        self.kv: list[tuple[Any, Any]] = []
        self.mask: Any = None  # tensors (torch comes in as a module: untyped here), None while no row is in flight
        self.pos: Any = None
        self.rows: list[int] = []  # index into the caller's prompts

    @property
    def width(self) -> int:
        return 0 if self.mask is None else int(self.mask.shape[1])

    def _widen(self, kv, mask, at: int, extra: int):
        """Insert ``extra`` masked columns at column ``at`` (just after the shared prefix)."""
        torch = self.torch
        if extra <= 0:
            return kv, mask
        out = []
        for k, v in kv:
            zk = k.new_zeros(k.shape[0], k.shape[1], extra, k.shape[3])
            zv = v.new_zeros(v.shape[0], v.shape[1], extra, v.shape[3])
            out.append((torch.cat([k[:, :, :at], zk, k[:, :, at:]], 2), torch.cat([v[:, :, :at], zv, v[:, :, at:]], 2)))
        mask = torch.cat([mask[:, :at], mask.new_zeros(mask.shape[0], extra), mask[:, at:]], 1)
        return out, mask

    def cache(self):
        """The cache decode steps append to, built over ``kv`` after a change of membership."""
        if self.live is None:
            # an empty cache of the right layer count, its layers then replaced by buffered ones
            self.live = self.cache_cls(ddp_cache_data=[(k[:, :, :0], v[:, :, :0]) for k, v in self.kv])
            self.live.layers = [_buffer_layer_class()(k, v, spare=64) for k, v in self.kv]
        return self.live

    def _settle(self) -> None:
        """Take the decoded columns back from ``live`` before rows join or leave."""
        if self.live is not None:
            self.kv, self.live = [(layer.keys, layer.values) for layer in self.live.layers], None

    def add(self, kv, mask, pos, rows: list[int], prefix: int) -> None:
        """Join new rows (their own cache, mask and positions) to the rows in flight."""
        torch = self.torch
        self._settle()
        if self.mask is None:
            self.kv, self.mask, self.pos, self.rows = kv, mask, pos, list(rows)
            return
        w_old, w_new = self.width, int(mask.shape[1])
        self.kv, self.mask = self._widen(self.kv, self.mask, prefix, w_new - w_old)
        kv, mask = self._widen(kv, mask, prefix, w_old - w_new)
        self.kv = [(torch.cat([a, c], 0), torch.cat([b, d], 0)) for (a, b), (c, d) in zip(self.kv, kv)]
        self.mask = torch.cat([self.mask, mask], 0)
        self.pos = torch.cat([self.pos, pos], 0)
        self.rows += rows

    def keep(self, keep: list[int], prefix: int) -> None:
        """Keep the rows at positions ``keep``, then drop the padding columns no remaining row uses."""
        torch = self.torch
        self._settle()
        if not keep:
            self.kv, self.mask, self.pos, self.rows = [], None, None, []
            return
        idx = torch.tensor(keep, dtype=torch.long, device=self.mask.device)
        self.kv = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in self.kv]
        self.mask, self.pos = self.mask.index_select(0, idx), self.pos.index_select(0, idx)
        self.rows = [self.rows[i] for i in keep]
        used = self.mask[:, prefix:].any(0)
        if not bool(used.all()):
            cols = torch.cat([torch.arange(prefix, device=used.device), prefix + used.nonzero().flatten()])
            self.kv = [(k.index_select(2, cols), v.index_select(2, cols)) for k, v in self.kv]
            self.mask = self.mask.index_select(1, cols)


def generate_continuous(model, torch, prompts: list[list[int]], *, slots: int, max_new_tokens: int,
                        stops: list[str], eos_ids: set[int], decode: Callable[[list[int]], str],
                        pad_id: int, counts: Counter | None = None) -> list[tuple[list[int], bool]]:
    """Greedy generation for every prompt with at most ``slots`` rows in flight, one :func:`prefix_groups`
    group after another (each group's shared prefix run once).

    Args:
        model: a ``transformers`` causal LM whose forward takes ``attention_mask``, ``position_ids`` and a
            ``DynamicCache`` as ``past_key_values``.
        torch: the ``torch`` module (imported by the backend).
        prompts: token ids per prompt (already truncated to the context budget), each non-empty.
        slots: the most rows decoded together (the backend's batch size).
        max_new_tokens: the token budget per row.
        stops: stop strings; a row ends on the first token after which its decoded text holds one.
        eos_ids: token ids that end a row (kept as its last token).
        decode: token ids → text (the tokenizer's decode without special tokens).
        pad_id: the id fed at masked columns (never attended to).
        counts: where given, ``prefilled`` (positions run through the model before decoding, padding
            included) and ``decoded`` (rows × decode steps) are added to it.

    Returns:
        Per prompt, in input order: the generated token ids (up to and including an EOS or the token that
        completed a stop string) and whether the row ended on EOS.
    """
    out: list[tuple[list[int], bool]] = [([], False)] * len(prompts)
    for group in prefix_groups(prompts):
        got = _generate_group(model, torch, [prompts[i] for i in group], slots=slots, max_new_tokens=max_new_tokens,
                              stops=stops, eos_ids=eos_ids, decode=decode, pad_id=pad_id, counts=counts)
        for i, res in zip(group, got):
            out[i] = res
    return out


def _generate_group(model, torch, prompts: list[list[int]], *, slots: int, max_new_tokens: int,
                        stops: list[str], eos_ids: set[int], decode: Callable[[list[int]], str],
                        pad_id: int, counts: Counter | None = None) -> list[tuple[list[int], bool]]:
    """One group of :func:`generate_continuous` (same arguments and result): its shared prefix run once, rows
    replaced as they finish."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    counts = counts if counts is not None else Counter()
    fwd = _forward(model)
    n_prefix = shared_prefix_length(prompts)
    prefix_kv: list[tuple[Any, Any]] = []
    with torch.inference_mode():
        if n_prefix:
            ids = torch.tensor([prompts[0][:n_prefix]], dtype=torch.long, device=device)
            cache = DynamicCache()
            fwd(ids, None, None, cache)
            # a DynamicCache filled by a decoder's attention holds key/value layers (transformers types its layer
            # list with linear-attention layers too, which have no keys)
            prefix_kv = [(layer.keys, layer.values) for layer in cache.layers]  # type: ignore[union-attr]
            counts["prefilled"] += n_prefix
        tail = max((len(s) for s in stops), default=0) + 8
        queue = deque(range(len(prompts)))
        out: list[list[int]] = [[] for _ in prompts]
        on_eos = [False] * len(prompts)
        batch = _Batch(torch, DynamicCache)
        nxt: Any = None  # the token each row in flight feeds next, [rows]
        while queue or batch.rows:
            free = slots - len(batch.rows)
            if queue and free > 0:
                new = [queue.popleft() for _ in range(min(free, len(queue)))]
                kv, mask, pos, logits = _prefill(fwd, torch, DynamicCache, prompts, new, n_prefix, prefix_kv, pad_id,
                                                 device)
                counts["prefilled"] += int(logits.shape[0]) * (int(mask.shape[1]) - n_prefix)
                start = len(batch.rows)
                batch.add(kv, mask, pos, new, n_prefix)
                tok = logits.argmax(-1)
                nxt = tok if nxt is None else torch.cat([nxt, tok], 0)
            else:
                start = 0
                mask = torch.cat([batch.mask, batch.mask.new_ones(len(batch.rows), 1)], 1)
                res = fwd(nxt[:, None], mask, batch.pos[:, None], batch.cache())
                counts["decoded"] += len(batch.rows)
                batch.mask, batch.pos = mask, batch.pos + 1
                nxt = res.logits[:, -1].argmax(-1)
            # nxt holds each row's newest token; rows before ``start`` did not move this round
            keep = list(range(start))
            for j, (r, t) in enumerate(zip(batch.rows[start:], nxt[start:].tolist()), start):
                out[r].append(t)
                if t in eos_ids:
                    on_eos[r] = True
                elif len(out[r]) < max_new_tokens and not (stops and any(s in decode(out[r][-tail:]) for s in stops)):
                    keep.append(j)
            if len(keep) < len(batch.rows):
                batch.keep(keep, n_prefix)
                nxt = nxt[keep] if keep else None
    return [(o, e) for o, e in zip(out, on_eos)]


@functools.cache
def _buffer_layer_class():
    """``_BufferLayer``, built on first use: it subclasses transformers' ``DynamicLayer`` (the cache checks
    layers with ``isinstance``) and transformers is imported lazily."""
    from transformers.cache_utils import DynamicLayer

    class _BufferLayer(DynamicLayer):
        """A cache layer whose keys/values ``[rows, heads, length, head_dim]`` are views of a buffer with
        ``spare`` free columns: a decode step writes its column in place (regrowing by ``spare`` when full).
        Attention sees the same values as with ``DynamicLayer``; only the whole-cache copy is saved."""

        def __init__(self, keys, values, spare: int):
            super().__init__()
            self.device, self.is_initialized = keys.device, True
            self._spare, self._n = spare, int(keys.shape[2])
            self._k, self._v = self._grown(keys), self._grown(values)
            self.keys, self.values = self._k[:, :, :self._n], self._v[:, :, :self._n]

        def _grown(self, t):
            buf = t.new_empty(t.shape[0], t.shape[1], t.shape[2] + self._spare, t.shape[3])
            buf[:, :, : t.shape[2]] = t
            return buf

        def update(self, key_states, value_states, *args, **kwargs):
            n, m = self._n, int(key_states.shape[2])
            if n + m > self._k.shape[2]:
                self._k, self._v = self._grown(self._k[:, :, :n]), self._grown(self._v[:, :, :n])
            self._k[:, :, n:n + m] = key_states
            self._v[:, :, n:n + m] = value_states
            self._n = n + m
            self.keys, self.values = self._k[:, :, :self._n], self._v[:, :, :self._n]
            return self.keys, self.values

    return _BufferLayer


def _forward(model) -> Callable:
    """``forward(ids, mask, positions, cache)`` → the model output with the logits of the last position only;
    the cache keyword is ``cache`` in transformers ≥ 5.2x (``past_key_values`` before, deprecated after)."""
    params = inspect.signature(model.forward).parameters
    key = cache_keyword(model)
    last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}

    def fwd(ids, mask, pos, cache):
        return model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **{key: cache}, **last)
    return fwd


def _prefill(fwd, torch, cache_cls, prompts, new: list[int], n_prefix: int, prefix_kv, pad_id: int, device):
    """Run the new rows' own tokens after the shared prefix (left-padded among themselves); returns their
    per-layer key/values, mask, next positions and the logits of their last token ``[rows, vocab]``."""
    suffixes = [prompts[r][n_prefix:] for r in new]
    width = max(len(s) for s in suffixes)
    ids = torch.tensor([[pad_id] * (width - len(s)) + s for s in suffixes], dtype=torch.long, device=device)
    own = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in suffixes], dtype=torch.long, device=device)
    mask = torch.cat([own.new_ones(len(new), n_prefix), own], 1)
    # positions count real tokens only: a padded row's first own token follows the prefix directly
    pos = (n_prefix + own.cumsum(1) - 1).clamp(min=0)
    data = [(k.expand(len(new), -1, -1, -1).contiguous(), v.expand(len(new), -1, -1, -1).contiguous())
            for k, v in prefix_kv] if n_prefix else None
    cache = cache_cls(ddp_cache_data=data) if data else cache_cls()
    res = fwd(ids, mask, pos, cache)
    # a padded column's key/value came from a pad token (NaN where all it could see was padding); it is never
    # attended to, but 0 x NaN in the weighted sum would still poison the row, so it is zeroed
    real = mask.bool()[:, None, :, None]
    kv = [(torch.where(real, layer.keys, 0.0), torch.where(real, layer.values, 0.0)) for layer in cache.layers]
    return kv, mask, pos[:, -1] + 1, res.logits[:, -1]
