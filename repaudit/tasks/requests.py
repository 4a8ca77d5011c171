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
class GenerationSettings:
    """Settings of ``generate_until``: stop sequences, token budget, sampling, and the backend's generation
    strategy (``exact``: lm-eval's ``model.generate`` on length-sorted batches; ``prefix_cache``: see
    :mod:`repaudit.backends.fastgen`)."""

    until: tuple[str, ...]
    max_gen_toks: int
    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 1234
    strategy: str = "exact"


@dataclass(frozen=True)
class GenerateRequest:
    """Generate after ``context`` under ``settings``."""

    context: str
    settings: GenerationSettings

    @property
    def key(self) -> str:
        s = self.settings
        # the exact strategy keeps the key it had before strategies existed (stored batches stay valid)
        return sha256_json(["gen", self.context, list(s.until), s.max_gen_toks, s.do_sample, s.temperature,
                            s.top_p, s.top_k, s.seed] + ([] if s.strategy == "exact" else [s.strategy]))


@dataclass(frozen=True)
class Generation:
    """Answer to a :class:`GenerateRequest`.

    Attributes:
        text: the generated text, cut before the first stop sequence.
        n_tokens: tokens the model generated (an EOS counted, tokens after a stop sequence not
            subtracted: the backend stops at the step that completes one).
        finish: why it ended: ``stop:<sequence>`` (the stop sequence found first in the text),
            ``eos`` (the model's end-of-sequence token), ``length`` (``max_gen_toks`` reached).
    """

    text: str
    n_tokens: int
    finish: str


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
    """Answer to a :class:`LoglikelihoodRequest`: logprob in nats, is_greedy, continuation tokens."""

    logprob: float
    is_greedy: bool
    n_tokens: int
