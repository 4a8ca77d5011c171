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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The backend: ``hf`` (transformers) or ``vllm``."""
    device: str
    """The torch device the model runs on (``cpu``, ``cuda``)."""
    dtype: str
    """The dtype the weights were loaded in, as the engine reports it (``float32``, ``bfloat16``)."""
    max_length: int
    """The context window in tokens: requests are cut from the left to fit it (hf: the model config's, else the
    tokenizer's, else 2048, as lm-eval resolves it; vLLM: ``max_model_len``)."""
    add_special_tokens: bool
    """Whether the tokenizer adds special tokens (a BOS) when encoding by default."""
    tokenizer_sha256: str
    """sha256 of the serialised tokenizer (vocabulary, merges, normaliser, pre-tokeniser) and its bos, eos and pad
    tokens."""
    bos_token: str | None
    """The tokenizer's BOS token string; None: it has none."""
    eos_token: str | None
    """The tokenizer's EOS token string; None: it has none."""
    pad_token: str | None
    """The tokenizer's padding token string; None: it has none."""
    chat_template_sha256: str | None
    """sha256 of the tokenizer's chat template text; None: the tokenizer has no chat template."""
    num_parameters: int
    """Parameters of the loaded model (vLLM: 0 where the engine runs in another process and cannot be asked)."""
    architecture: str
    """The model class (hf: the transformers class loaded; vLLM: the config's first architecture, else
    ``unknown``)."""
    engine: dict[str, Any] = {}
    """Engine facts that can change numbers (hf: attention implementation; vLLM: version, attention backend,
    scheduler limits, prefix caching, …), and under ``requested`` the serving options the run asked for."""


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
