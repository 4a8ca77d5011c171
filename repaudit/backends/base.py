"""The backend protocol: answer batches of loglikelihood and generate_until requests."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from repaudit.backends.store import BatchCache, texts_shape
from repaudit.hashing import sha256_json
from repaudit.tasks.requests import GenerateRequest, GenerationSettings, LoglikelihoodRequest, LoglikelihoodResult

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
                       progress: Progress | None = None) -> list[str]:
        """One generated text per request, cut at the first stop sequence."""
        ...

    def apply_chat_template(self, user: str, system: str | None) -> str:
        """Wrap ``user`` (and ``system``) in the model's chat template, generation prompt added."""
        ...


def generate_in_batches(requests: list[GenerateRequest], encoded: list[list[int]], batch_size: int,
                        max_length: int, ckey: str, cache: BatchCache | None, progress: Progress | None,
                        batch_sizes_used: dict[int, int],
                        compute: Callable[[list[list[int]], GenerationSettings], list[str]]) -> list[str]:
    """generate_until's batching, shared by every backend (lm-eval's order).

    Contexts (``encoded``: token ids per request) are sorted by descending token length, grouped by
    generation settings, left-truncated to ``max_length - max_gen_toks`` tokens and cut into
    batches of ``batch_size``; each batch is read from or committed to ``cache`` under ``ckey``.
    ``compute(rows, settings)`` returns one decoded text per row; every text is cut at the first
    stop sequence here, so all backends apply the same rule. Returns texts in request order.
    """
    order = sorted(range(len(requests)), key=lambda i: (-len(encoded[i]), tuple(encoded[i])))
    out: list[str | None] = [None] * len(requests)
    by_settings: dict[Any, list[int]] = {}
    for i in order:
        by_settings.setdefault(requests[i].settings, []).append(i)
    for settings, idxs in by_settings.items():
        budget = max_length - settings.max_gen_toks
        stops = [s for s in settings.until if s]
        for k in range(0, len(idxs), batch_size):
            batch = idxs[k:k + batch_size]
            rows = [encoded[i][-budget:] for i in batch]
            bkey = sha256_json([rows, requests[batch[0]].key])
            check = functools.partial(texts_shape, n=len(batch))
            texts = cache.get_checked(ckey, bkey, check) if cache is not None else None
            if texts is None:
                texts = []
                for text in compute(rows, settings):
                    for s in stops:
                        text = text.split(s)[0]
                    texts.append(text)
                if cache is not None:
                    cache.put(ckey, bkey, texts)
            batch_sizes_used[len(batch)] += 1
            for i, t in zip(batch, texts):
                out[i] = t
            if progress:
                progress(len(batch))
    return out  # type: ignore[return-value]
