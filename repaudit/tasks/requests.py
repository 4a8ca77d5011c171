"""Requests a task sends to a backend, in lm-eval's vocabulary.

* ``loglikelihood``: (context, continuation) -> (sum of log-probabilities of the continuation
  tokens given the context, in nats; is_greedy: whether greedy decoding reproduces it).
* ``generate_until``: context + generation settings -> generated text, cut at the first stop
  sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from repaudit.hashing import sha256_json
from repaudit.settings import GenerationSettings

__all__ = ["GenerateRequest", "Generation", "GenerationSettings", "LoglikelihoodRequest", "LoglikelihoodResult",
           "RequestType", "finish_of"]


class RequestType(str, Enum):
    loglikelihood = "loglikelihood"
    generate_until = "generate_until"


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """Score ``continuation`` after ``context``. A trailing space of the context belongs to the
    continuation (lm-eval's ``_encode_pair`` moves it there before tokenising)."""

    context: str
    continuation: str

    @property
    def key(self) -> str:
        return sha256_json(["ll", self.context, self.continuation])


@dataclass(frozen=True)
class GenerateRequest:
    """Generate after ``context`` under ``settings``: the generation settings record as resolved for the run
    (``until`` the stop sequences as sent, EOS included; ``sampling_seed`` the seed used)."""

    context: str
    settings: GenerationSettings

    @property
    def key(self) -> str:
        """The batch store's key of this request: the settings that reach the model, each field added after the
        store's first layout only when it is not at its default (so adding a factor invalidates no stored batch)."""
        s = self.settings
        legacy = ["gen", self.context, list(s.until or ()), s.max_gen_toks, s.do_sample, s.temperature, s.top_p,
                  s.top_k, s.sampling_seed]
        # the exact strategy keeps the key it had before strategies existed
        extra = [] if s.generation_strategy == "exact" else [s.generation_strategy]
        later = {k: v for k, v in s.changed().items() if k not in _KEYED}
        return sha256_json(legacy + extra + ([later] if later else []))

    @property
    def max_gen_toks(self) -> int:
        """The most tokens to generate: ``settings.max_gen_toks``, which the run resolves for every request (the
        option, else the task's).

        Raises:
            ValueError: a request built with it unresolved (None).
        """
        if self.settings.max_gen_toks is None:
            raise ValueError("a generation request without its max_gen_toks")
        return self.settings.max_gen_toks


#: generation fields in the batch key's original layout (the others enter it only when changed)
_KEYED = {"until", "stop_at_eos", "max_gen_toks", "do_sample", "temperature", "top_p", "top_k", "sampling_seed",
          "generation_strategy"}


@dataclass(frozen=True)
class Generation:
    """Answer to a :class:`GenerateRequest`.

    Attributes:
        text: the generated text, cut before the first stop sequence.
        n_tokens: tokens the model generated (an EOS counted, tokens after a stop sequence not
            subtracted: the backend stops at the step that completes one).
        finish: why it ended: ``stop:<sequence>`` (the stop sequence found first in the text),
            ``eos`` (the model's end-of-sequence token), ``length`` (``max_gen_toks`` reached); ``stop`` where a
            served model stopped on a stop sequence or EOS without saying which.
        served: what a served model's endpoint reported with the answer (``system_fingerprint``,
            ``finish_reason``, ``completion_tokens``); None for an in-process backend.
    """

    text: str
    n_tokens: int
    finish: str
    served: dict | None = None


def finish_of(raw: str, stops: list[str], n_tokens: int, ended_on_eos: bool, max_gen_toks: int) -> tuple[str, str]:
    """``(text cut at the earliest stop sequence, finish reason)`` of one raw generation (see
    :class:`Generation`). A stop sequence wins over EOS and the budget: it is what cut the text."""
    first = min(((raw.find(s), s) for s in stops if s and s in raw), default=None)
    if first is not None:
        return raw[:first[0]], f"stop:{first[1]}"
    if ended_on_eos:
        return raw, "eos"
    return raw, "length" if n_tokens >= max_gen_toks else "eos"


@dataclass(frozen=True)
class LoglikelihoodResult:
    """Answer to a :class:`LoglikelihoodRequest`: logprob in nats, is_greedy, continuation tokens, and what a served
    model's endpoint reported with it (``system_fingerprint``; None for an in-process backend)."""

    logprob: float
    is_greedy: bool
    n_tokens: int
    served: dict | None = None
