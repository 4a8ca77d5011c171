"""Shared-prefix scoring of loglikelihood requests (``scoring_strategy = "shared_prefix"``).

lm-eval's full-sequence path runs ``context + continuation`` once per request and takes the
log-softmax over the whole vocabulary at every position. This strategy does the distinct work only:

1. **One row per distinct context.** A doc's continuations are laid out after its context in one
   row (tree attention): every continuation token attends to the context and to the earlier tokens
   of its own continuation, never to another continuation; position ids restart at the context's
   length for each continuation. The last token of a continuation is never fed in (only predicted),
   so one-token continuations (MMLU's `` A``/`` B``…) cost no extra position at all.
2. **Logits only where they are used.** The decoder's hidden states are gathered at the positions
   that predict continuation tokens (the context's last position and each continuation's inputs)
   and only there go through the output layer and the log-softmax (model dtype, as lm-eval).
3. **Length-sorted batches.** Rows are sorted by length inside each prefix group and cut into
   batches of ``batch_size`` rows, so padding is at most the spread of neighbouring lengths.
4. **Shared prefixes across docs.** Contexts that begin with the same ≥ ``min_shared`` tokens (a
   fixed few-shot block such as MMLU's ``first_n`` 5-shot prompt per subject) are grouped; the
   prefix's key/values are computed once and every batch of the group continues from them.

The result is mathematically the same as the full-sequence path; the floating-point path is not
(other matmul shapes, other reduction orders), which is why the strategy is a fingerprint factor.
Layout idea after tree/prefix-sharing attention as in SpecInfer (Miao et al., 2024) and
SGLang's RadixAttention (Zheng et al., 2024); implementation is repaudit's own.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from repaudit.backends.batching import cut
from repaudit.backends.device import Seconds, clock
from repaudit.backends.gather import ChoiceIndex
from repaudit.backends.head import ScoredHead, score_positions

#: prefixes shorter than this are not worth a separate key/value pass
MIN_SHARED_PREFIX = 32


def cache_keyword(model) -> str:
    """The keyword ``model``'s forward takes a key/value cache under: ``cache`` in transformers ≥ 5.2x,
    ``past_key_values`` before (deprecated after, with a FutureWarning on every call)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@dataclass
class Unit:
    """One distinct context and its distinct continuations.

    Attributes:
        ctx: context token ids (left-truncated when context + continuation exceed the model).
        conts: distinct continuation token ids, first-seen order.
        members: for each continuation, the request indices that asked for it.
    """

    ctx: tuple[int, ...]
    conts: list[tuple[int, ...]] = field(default_factory=list)
    members: list[list[int]] = field(default_factory=list)

    def row_length(self, p: int) -> int:
        """Tokens this unit feeds in after a shared prefix of ``p`` tokens."""
        return len(self.ctx) - p + sum(len(c) - 1 for c in self.conts)


@dataclass
class PrefixGroup:
    """Units that share ``prefix`` (possibly empty), in batches of at most ``batch_size`` units."""

    prefix: tuple[int, ...]
    batches: list[list[Unit]]


def _lcp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def plan_units(encoded: list[tuple[list[int], list[int]]], max_length: int) -> list[Unit]:
    """Group requests by context, deduplicating identical continuations.

    Args:
        encoded: per request, (context ids, continuation ids) as ``HFBackend.encode_pair`` builds them.
        max_length: the model's context window; a request's context is cut from the left as lm-eval
            cuts ``(context + continuation)[-(max_length + 1):]``, so continuations of different
            lengths may end up in different units.

    Returns:
        Units in first-seen order of their (cut) contexts.
    """
    by_ctx: dict[tuple[int, ...], Unit] = {}
    for i, (ctx, cont) in enumerate(encoded):
        room = max(max_length + 1 - len(cont), 1)
        key = tuple(ctx[-room:] if len(ctx) > room else ctx)
        unit = by_ctx.setdefault(key, Unit(key))
        c = tuple(cont)
        if c in unit.conts:
            unit.members[unit.conts.index(c)].append(i)
        else:
            unit.conts.append(c)
            unit.members.append([i])
    return list(by_ctx.values())


def plan_groups(units: list[Unit], batch_size: int | str, min_shared: int = MIN_SHARED_PREFIX,
                tokens: int | None = None) -> list[PrefixGroup]:
    """Cluster units by shared context prefix and cut each cluster into length-sorted batches: of ``batch_size``
    units, or for ``auto`` under ``tokens`` padded tokens after the prefix (:func:`repaudit.backends.batching.cut`).

    Units are sorted by context tokens; a run of neighbours whose adjacent common prefix is at least
    ``min_shared`` tokens forms a group whose prefix is the run's common prefix (the minimum adjacent
    one), cut so that every unit keeps at least one context token of its own. Singletons form the
    group with the empty prefix.

    Returns:
        Groups in a deterministic order (by prefix tokens), every unit in exactly one batch.
    """
    order = sorted(units, key=lambda u: u.ctx)
    runs: list[list[Unit]] = []
    for u in order:
        if runs and _lcp(runs[-1][-1].ctx, u.ctx) >= min_shared:
            runs[-1].append(u)
        else:
            runs.append([u])
    groups: dict[tuple[int, ...], list[Unit]] = {}
    for run in runs:
        p = 0
        if len(run) > 1:
            p = min(_lcp(a.ctx, b.ctx) for a, b in zip(run, run[1:]))
            p = min(p, min(len(u.ctx) for u in run) - 1)
        if p < min_shared:
            p = 0
        groups.setdefault(run[0].ctx[:p], []).extend(run)
    out = []
    for prefix in sorted(groups):
        p = len(prefix)
        members = sorted(groups[prefix], key=lambda u: (-u.row_length(p), u.ctx, u.conts))
        ranges = cut([u.row_length(p) for u in members], batch_size, tokens)
        out.append(PrefixGroup(prefix, [members[a:b] for a, b in ranges]))
    return out


class PrefixScorer:
    """Runs :class:`PrefixGroup` batches on a transformers causal LM.

    Args:
        model: a ``*ForCausalLM`` whose ``base_model`` returns hidden states and whose output
            embeddings produce the logits (``final_logit_softcapping`` is applied when configured).
        device: torch device string.

    Raises:
        RepauditError: the model uses sliding-window attention, which a custom mask would bypass.
    """

    def __init__(self, model, device: str):
        import torch

        from repaudit.errors import RepauditError

        window = getattr(model.config, "sliding_window", None)
        if window and getattr(model.config, "use_sliding_window", True):
            raise RepauditError("scoring strategy 'shared_prefix' does not support sliding-window attention "
                                f"({type(model).__name__}): use --scoring-strategy full_sequence")
        self.torch = torch
        self.model = model
        self.base = model.base_model
        self.cache_key = cache_keyword(self.base)  # read once: score() runs per batch
        self.head = ScoredHead(model, device)
        self.device = device
        self.prefix_kv: tuple[tuple[int, ...], list] | None = None
        self.tokens_computed = 0
        self.forward_s = 0.0

    def _prefix(self, prefix: tuple[int, ...]):
        # one prefix is live at a time: groups come in order, so each prefix runs exactly once
        torch = self.torch
        if self.prefix_kv is None or self.prefix_kv[0] != prefix:
            ids = torch.tensor([prefix], dtype=torch.long, device=self.device)
            t = clock(self.device)
            with torch.inference_mode():
                out = self.base(input_ids=ids, use_cache=True)
            self.forward_s += clock(self.device) - t
            self.prefix_kv = (prefix, [(layer.keys, layer.values) for layer in out.past_key_values.layers])
            self.tokens_computed += len(prefix)
        return self.prefix_kv[1]

    def _tree(self, p: int, batch: list[Unit]):
        """``batch`` laid out after a shared prefix of ``p`` tokens (module docstring, point 1): input ids
        ``(rows, width)``, the additive attention mask ``(rows, 1, width, p + width)`` in the model's dtype,
        position ids ``(rows, width)``, and each row's length in tokens."""
        torch = self.torch
        rows, segs, pos = [], [], []
        for u in batch:
            r, s, q = list(u.ctx[p:]), [0] * (len(u.ctx) - p), list(range(p, len(u.ctx)))
            for k, c in enumerate(u.conts, 1):
                r += c[:-1]
                s += [k] * (len(c) - 1)
                q += range(len(u.ctx), len(u.ctx) + len(c) - 1)
            rows.append(r)
            segs.append(s)
            pos.append(q)
        width = max(len(r) for r in rows)
        B = len(rows)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.long, device=self.device)
        seg = torch.tensor([s + [-1] * (width - len(s)) for s in segs], device=self.device)
        position_ids = torch.tensor([q + [p] * (width - len(q)) for q in pos], dtype=torch.long, device=self.device)
        ar = torch.arange(width, device=self.device)
        causal = ar[None, :, None] >= ar[None, None, :]                     # (1, query, key)
        key_seg, query_seg = seg[:, None, :], seg[:, :, None]
        allowed = causal & ((key_seg == 0) | (key_seg == query_seg)) & (key_seg >= 0)
        allowed |= torch.eye(width, dtype=torch.bool, device=self.device)  # padded queries attend to themselves
        if p:
            allowed = torch.cat([torch.ones(B, width, p, dtype=torch.bool, device=self.device), allowed], dim=-1)
        dtype = self.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=self.device)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)
        return ids, mask[:, None], position_ids, [len(r) for r in rows]

    def score(self, prefix: tuple[int, ...], batch: list[Unit], parts: Seconds | None = None
              ) -> list[list[tuple[float, bool]]]:
        """Log-probability and greedy flag of every continuation of every unit; the seconds of the forward pass,
        the output layer with log-softmax and gather, and the read go to ``parts`` (``forward``, ``logsoftmax``,
        ``transfer``; the prefix's own pass to ``forward``).

        Returns:
            ``out[j][k] = (sum of log p over unit j's continuation k tokens, all tokens greedy)``, scored on the
            device and read back in one transfer (:func:`~repaudit.backends.head.score_positions`).
        """
        torch = self.torch
        from transformers import DynamicCache

        parts = Seconds() if parts is None else parts
        p = len(prefix)
        if p:
            t = clock(self.device)
            kv = self._prefix(prefix)
            parts["forward"] += clock(self.device) - t
        ids, mask, position_ids, lengths = self._tree(p, batch)
        kwargs = {}
        if p:
            kwargs[self.cache_key] = DynamicCache(ddp_cache_data=[
                (k.expand(len(batch), -1, -1, -1), v.expand(len(batch), -1, -1, -1)) for k, v in kv])
        # scored positions: the context's last one, then each continuation's inputs (row by row)
        where: list[tuple[int, int]] = []  # (row, position)
        choices: list[tuple[list[int], tuple[int, ...]]] = []
        for j, u in enumerate(batch):
            start = len(u.ctx) - p - 1
            base, offset = len(where), 1  # offset: index among this row's scored positions
            for c in u.conts:
                choices.append(([base] + list(range(base + offset, base + offset + len(c) - 1)), c))
                offset += len(c) - 1
            where += [(j, t) for t in range(start, lengths[j])]
        where_t = torch.tensor(where, dtype=torch.long, device=self.device).T
        index = ChoiceIndex(torch, self.device, choices)
        before = parts["forward"] + parts["logsoftmax"]
        scores = iter(score_positions(
            torch, self.device, lambda: self.base(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                                                  use_cache=bool(p), **kwargs).last_hidden_state,
            self.head.logits, where_t, index, parts))
        self.forward_s += parts["forward"] + parts["logsoftmax"] - before
        self.tokens_computed += sum(lengths)
        return [[next(scores) for _ in u.conts] for u in batch]
