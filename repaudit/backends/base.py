"""The backend base class: answer batches of loglikelihood and generate_until requests.

:class:`Backend` is what every backend derives from (its two abstract methods answer requests; configuration,
counters, the batch store's key and the ``--dry-run`` hooks are concrete); :func:`generate_in_batches` is the
generation loop they share.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from repaudit.backends.device import Seconds
from repaudit.backends.model_source import ResolvedModel
from repaudit.backends.store import BatchCache, generations_shape
from repaudit.backends.tokens import RequestEncoder, apply_chat_template
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.settings import ServingSettings
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

#: the parts loglikelihood's time is split into (:attr:`Backend.eval_parts`, seconds each): tokenising the requests,
#: planning and building the batches (grouping, sorting, index tensors, the batch store), the decoder's forward
#: pass, the output layer and log-softmax at the scored positions with the on-device gather, and reading the scores
#: back to the host
EVAL_PARTS = ("tokenise", "batch", "forward", "logsoftmax", "transfer")


class BackendInfo(BaseModel):
    """What a loaded backend actually is: recorded in the fingerprint as resolved values."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The backend: ``hf`` (transformers), ``vllm`` or ``openai`` (a served model)."""
    device: str | None
    """The torch device the model runs on (``cpu``, ``cuda``); None: not told (a served model)."""
    dtype: str | None
    """The dtype the weights were loaded in, as the engine reports it (``float32``, ``bfloat16``); None: not told (a
    served model whose server does not report it)."""
    max_length: int | None
    """The context window in tokens: requests are cut from the left to fit it (hf: the model config's, else the
    tokenizer's, else 2048, as lm-eval resolves it; vLLM: ``max_model_len``; openai: what the server reports); None:
    not told (requests are sent uncut and the server refuses what does not fit)."""
    add_special_tokens: bool
    """Whether the tokenizer adds special tokens (a BOS) when encoding by default."""
    tokenizer_sha256: str | None
    """sha256 of the serialised tokenizer (vocabulary, merges, normaliser, pre-tokeniser) and its bos, eos and pad
    tokens; None: not told (a served model's tokenizer files are not served)."""
    bos_token: str | None
    """The tokenizer's BOS token string; None: it has none."""
    eos_token: str | None
    """The tokenizer's EOS token string; None: it has none."""
    pad_token: str | None
    """The tokenizer's padding token string; None: it has none."""
    chat_template_sha256: str | None
    """sha256 of the tokenizer's chat template text; None: the tokenizer has no chat template."""
    num_parameters: int | None
    """Parameters of the loaded model (vLLM: 0 where the engine runs in another process and cannot be asked); None:
    not told (a served model)."""
    architecture: str | None
    """The model class (hf: the transformers class loaded; vLLM: the config's first architecture, else
    ``unknown``); None: not told (a served model)."""
    engine: dict[str, Any] = {}
    """Engine facts that can change numbers (hf: attention implementation; vLLM: version, attention backend,
    scheduler limits, prefix caching, …), and under ``requested`` the serving options the run asked for."""


class Backend(abc.ABC):
    """A loaded model answering requests: the base class of every backend, after inspect_ai's ``ModelAPI`` — two
    abstract methods, everything else concrete or a hook with a default, so a caller never asks ``hasattr``.

    A subclass loads its model in ``__init__`` and sets :attr:`info`, :attr:`resolved`, :attr:`tokenizer` and
    :attr:`encoder` there, then calls :meth:`configure`; it implements :meth:`loglikelihood` and
    :meth:`generate_until`, and overrides the hooks it has something to say in: :meth:`_key_settings` (what besides
    weights, tokenizer, dtype and device changes its numbers), :meth:`_configured` (per-run set-up),
    :meth:`pop_load_parts`, :meth:`speed_key` and :meth:`plan_cost` (``--dry-run`` estimates).

    Implementations: :class:`repaudit.backends.hf.HFBackend`, :class:`repaudit.backends.vllm.VLLMBackend`,
    :class:`repaudit.backends.openai.OpenAIBackend`.
    """

    #: what the loaded backend is (recorded in the fingerprint)
    info: BackendInfo
    #: the weights it loaded
    resolved: ResolvedModel
    #: the Hugging Face tokenizer of the weights (chat templates, decoding)
    tokenizer: Any
    #: the request tokeniser every backend shares (:mod:`repaudit.backends.tokens`)
    encoder: RequestEncoder
    #: the serving settings of the current run (:meth:`configure`)
    serving: ServingSettings
    #: batch size -> number of forward batches of that size actually run (cache hits included)
    batch_sizes_used: Counter
    #: positions run through the decoder by loglikelihood (the work actually computed)
    tokens_computed: int
    #: seconds inside loglikelihood's forward passes (model, output layer, log-softmax)
    forward_s: float
    #: generate_until's work: positions prefilled (padding included) and decoded (rows × steps)
    gen_tokens: Counter
    #: loglikelihood's seconds by part (:data:`EVAL_PARTS`), where the backend times them
    eval_parts: Seconds

    # ------------------------------------------------------------------ settings
    def configure(self, serving: ServingSettings) -> None:
        """Set the settings that need no reload — batch size, padding side, scoring strategy, BOS — and reset the
        per-run counters: the one path every per-run setting takes, so one loaded model serves every configuration
        of an attribution grid or a sweep. The backend, device and dtype of ``serving`` are the loaded model's and
        are not read here; :meth:`_configured` does the backend's own set-up.

        Raises:
            RepauditError: a setting this backend cannot serve (:meth:`_configured`).
        """
        self.serving = serving
        self.encoder.add_bos_token = serving.add_bos_token
        self.encoder.bos_first.clear()
        self.tokens_computed = 0
        self.forward_s = 0.0
        self.batch_sizes_used = Counter()
        self.gen_tokens = Counter()
        self.eval_parts = Seconds()
        self._configured(serving)

    @property
    def batch_size(self) -> int | str:
        """The batch size asked for: rows per forward pass, or ``auto`` (the backend resolves it)."""
        return self.serving.batch_size

    @property
    def padding_side(self) -> str:
        """The side a batch is padded on."""
        return self.serving.padding_side

    @property
    def scoring_strategy(self) -> str:
        """How log-likelihood requests are scored (``full_sequence``, ``shared_prefix``)."""
        return self.serving.scoring_strategy

    def _configured(self, serving: ServingSettings) -> None:
        """Hook: the backend's own per-run set-up after :meth:`configure` (default: none)."""
        return None

    # ------------------------------------------------------------------ timing
    def encode_requests(self, requests: list[LoglikelihoodRequest]) -> list[tuple[list[int], list[int]]]:
        """Every request's (context ids, continuation ids) (:meth:`RequestEncoder.encode_requests`), the seconds
        added to ``eval_parts["tokenise"]``.

        Raises:
            RepauditError: a request whose context or continuation tokenises to nothing.
        """
        t = time.perf_counter()
        enc = self.encoder.encode_requests(requests)
        self.eval_parts["tokenise"] += time.perf_counter() - t
        return enc

    @contextlib.contextmanager
    def timed_eval(self):
        """Around a whole loglikelihood call: its seconds that no other part of :attr:`eval_parts` took are added to
        ``eval_parts["batch"]`` (planning, sorting, building tensors, the batch store), so the parts add up to the
        call."""
        t, before = time.perf_counter(), sum(self.eval_parts.values())
        try:
            yield
        finally:
            self.eval_parts["batch"] += time.perf_counter() - t - (sum(self.eval_parts.values()) - before)

    # ------------------------------------------------------------------ keys
    def config_key(self, kind: str) -> str:
        """Identity of everything that changes this backend's numbers for ``kind`` requests: the batch store's key
        (the weights, tokenizer, dtype and device, then :meth:`_key_settings`)."""
        i = self.info
        return sha256_json([kind, i.name, self.resolved.weights_sha256, i.tokenizer_sha256, i.dtype, i.device,
                            *self._key_settings()])

    def context_length(self) -> int:
        """The model's context length in tokens (:attr:`BackendInfo.max_length`), for a backend that scores or
        generates with its own tokens.

        Raises:
            RepauditError: the backend does not know it (None: a served model whose server does not say).
        """
        if self.info.max_length is None:
            raise RepauditError(f"backend {self.info.name}: the model's context length is not known")
        return self.info.max_length

    def _key_settings(self) -> list:
        """Hook: the rest of :meth:`config_key` — the per-run settings that change this backend's numbers."""
        return [self.batch_size, self.info.max_length]

    def speed_key(self) -> str:
        """Identity of what sets this backend's scoring throughput (weights, dtype, device, strategy): the key
        ``--dry-run`` estimates read measured speeds under."""
        i = self.info
        return sha256_json([i.name, self.resolved.weights_sha256, i.dtype, i.device, self.scoring_strategy])

    def plan_cost(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None
                  ) -> tuple[int, int, int] | None:
        """Hook: ``(batches, batches already in the store, tokens still to compute)`` of answering ``requests``
        with the current settings, without a forward pass; ``None`` (the default): this backend cannot tell."""
        return None

    def pop_load_parts(self) -> dict[str, float] | None:
        """Hook: the seconds the load took by part, once (the run that loaded the model reports them); ``None``
        (the default): not timed by part, or already reported."""
        return None

    def reset_prefix_cache(self) -> bool | None:
        """Hook: empty the engine's prefix cache so that the next requests start cold — True done, False refused (work
        in flight); ``None`` (the default): this backend has no cache to empty, or no way to empty it."""
        return None

    def server_facts(self) -> Any:
        """Hook: a served model's :class:`~repaudit.backends.server.ServerFacts` as the run used it (what the
        endpoint said, the routes used, the system fingerprints seen); ``None`` (the default): an in-process
        backend."""
        return None

    # ------------------------------------------------------------------ requests
    @abc.abstractmethod
    def loglikelihood(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None = None,
                      progress: Progress | None = None) -> list[LoglikelihoodResult]:
        """One (logprob in nats, is_greedy, continuation token count) per request, in order; finished batches are
        read from and committed to ``cache`` under :meth:`config_key`."""

    @abc.abstractmethod
    def generate_until(self, requests: list[GenerateRequest], cache: BatchCache | None = None,
                       progress: Progress | None = None) -> list[Generation]:
        """One :class:`Generation` per request: text cut at the first stop sequence, tokens, finish reason (build
        it on :func:`generate_in_batches`)."""

    def apply_chat_template(self, user: str, system: str | None, turns: list[tuple[str, str]] | tuple = ()) -> str:
        """Wrap ``user`` (after ``system`` and the (user, assistant) ``turns``) in the model's chat template,
        generation prompt added; see :func:`repaudit.backends.tokens.apply_chat_template`.

        Raises:
            RepauditError: the tokenizer has no chat template.
        """
        return apply_chat_template(self.tokenizer, self.resolved.name, user, system, turns)


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
