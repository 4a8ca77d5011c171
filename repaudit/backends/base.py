"""The backend protocol: answer batches of loglikelihood and generate_until requests."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from repaudit.backends.store import BatchCache, generations_shape
from repaudit.hashing import sha256_json
from repaudit.tasks.requests import (
    GenerateRequest,
    Generation,
    GenerationSettings,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    finish_of,
)

#: Called with the number of requests just answered (for progress bars).
Progress = Callable[[int], None]


class BackendInfo(BaseModel):
    """What a loaded backend actually is: recorded in the fingerprint as resolved values."""

    model_config = ConfigDict(extra="forbid")
    name: str
    device: str
    dtype: str
    max_length: int
    add_special_tokens: bool
    tokenizer_sha256: str
    bos_token: str | None
    eos_token: str | None
    pad_token: str | None
    chat_template_sha256: str | None
    num_parameters: int
    architecture: str
    #: engine facts that can change numbers (vLLM: version, attention backend, scheduler limits, …)
    engine: dict[str, Any] = {}


class Backend(Protocol):
    """A loaded model answering requests.

    Implementations: :mod:`repaudit.backends.hf`, :mod:`repaudit.backends.vllm`.
    """

    info: BackendInfo
    #: batch size -> number of forward batches of that size actually run (cache hits included).
    batch_sizes_used: dict[int, int]

    def loglikelihood(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None,
                      progress: Progress | None = None) -> list[LoglikelihoodResult]:
        """One (logprob in nats, is_greedy, continuation token count) per request, in order."""
        ...

    def generate_until(self, requests: list[GenerateRequest], cache: BatchCache | None,
                       progress: Progress | None = None) -> list[Generation]:
        """One :class:`Generation` per request: text cut at the first stop sequence, tokens, finish reason."""
        ...

    def apply_chat_template(self, user: str, system: str | None, turns: list[tuple[str, str]] | tuple = ()) -> str:
        """Wrap ``user`` (after ``system`` and the (user, assistant) ``turns``) in the model's chat
        template, generation prompt added."""
        ...


def generate_in_batches(requests: list[GenerateRequest], encoded: list[list[int]], batch_size: int,
                        max_length: int, ckey: str, cache: BatchCache | None, progress: Progress | None,
                        batch_sizes_used: dict[int, int],
                        compute: Callable[[list[list[int]], GenerationSettings], list[tuple[str, int, bool]]],
                        unit: Callable[[GenerationSettings], int] | None = None) -> list[Generation]:
    """generate_until's batching, shared by every backend (lm-eval's order).

    Contexts (``encoded``: token ids per request) are sorted by descending token length, grouped by
    generation settings, left-truncated to ``max_length - max_gen_toks`` tokens and cut into
    batches of ``batch_size`` (or of ``unit(settings)`` rows where given: a strategy that keeps
    ``batch_size`` rows in flight over a longer queue); each batch is read from or committed to ``cache``
    under ``ckey``.
    ``compute(rows, settings)`` returns per row the decoded text, the number of generated tokens
    and whether it ended on EOS; every text is cut at the first stop sequence here
    (:func:`~repaudit.tasks.requests.finish_of`), so all backends apply the same rule. Returns
    :class:`Generation` objects in request order.
    """
    order = sorted(range(len(requests)), key=lambda i: (-len(encoded[i]), tuple(encoded[i])))
    out: list[Generation | None] = [None] * len(requests)
    by_settings: dict[Any, list[int]] = {}
    for i in order:
        by_settings.setdefault(requests[i].settings, []).append(i)
    for settings, idxs in by_settings.items():
        budget = max_length - settings.max_gen_toks
        stops = [s for s in settings.until if s]
        step = unit(settings) if unit is not None else batch_size
        for k in range(0, len(idxs), step):
            batch = idxs[k:k + step]
            rows = [encoded[i][-budget:] for i in batch]
            # "v2": entries hold [text, tokens, finish]; older text-only entries are simply not found
            bkey = sha256_json(["v2", rows, requests[batch[0]].key])
            check = functools.partial(generations_shape, n=len(batch))
            gens = cache.get_checked(ckey, bkey, check) if cache is not None else None
            if gens is None:
                gens = []
                for raw, n_tok, on_eos in compute(rows, settings):
                    text, finish = finish_of(raw, stops, n_tok, on_eos, settings.max_gen_toks)
                    gens.append([text, n_tok, finish])
                if cache is not None:
                    cache.put(ckey, bkey, gens)
            batch_sizes_used[min(len(batch), batch_size)] += 1
            for i, (t, n_tok, finish) in zip(batch, gens):
                out[i] = Generation(t, n_tok, finish)
            if progress:
                progress(len(batch))
    return out  # type: ignore[return-value]
