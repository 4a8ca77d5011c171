"""The backend protocol: answer batches of loglikelihood and generate_until requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from repaudit.cache import BatchCache
from repaudit.requests import GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult

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
    """A loaded model answering requests. Implementations: :mod:`repaudit.backends.hf`, :mod:`repaudit.backends.vllm`."""

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
