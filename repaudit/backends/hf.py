"""The transformers backend, numerically compatible with lm-evaluation-harness 0.4.13's ``HFLM``.

``loglikelihood`` follows ``HFLM._loglikelihood_tokens``: requests are tokenised with the
context's trailing whitespace moved into the continuation; requests whose tokens
``context + continuation[:-1]`` coincide share one forward row (lm-eval's one-token-continuation
cache); rows are sorted by descending length then by tokens, cut into batches of ``batch_size``,
right-padded with token 0 and run without an attention mask; ``log_softmax`` is taken in the
model's dtype over the whole vocabulary and the continuation's log-probabilities are summed, so a
bfloat16 run rounds exactly as lm-eval's does. Unlike lm-eval, the log-softmax runs only at the
positions that predict continuation tokens (row by row, so each row's bits are the same) and a batch's
sums and greedy checks are made on the device and read back in one transfer
(:mod:`repaudit.backends.gather`).
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, get_args

from repaudit.backends.base import Backend, BackendInfo, Progress, generate_in_batches
from repaudit.backends.batching import auto_batch_tokens, cut, generation_rows
from repaudit.backends.determinism import batch_invariant_asked, batch_invariant_mode, hf_engine_facts
from repaudit.backends.device import sdpa_kernels
from repaudit.backends.gather import ChoiceIndex
from repaudit.backends.head import ScoredHead, score_positions
from repaudit.backends.model_source import ResolvedModel, load_transformers
from repaudit.backends.store import BatchCache, pairs_shape, stored_groups
from repaudit.backends.tokens import RequestEncoder, tokenizer_identity
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.settings import HfAttention, ServingSettings
from repaudit.tasks.requests import GenerateRequest, Generation, LoglikelihoodRequest, LoglikelihoodResult

if TYPE_CHECKING:  # imported where the shared_prefix strategy is set up
    from repaudit.backends.prefix import PrefixScorer

#: prefix_cache: rows per stored queue, in batches (a longer queue keeps the batch full for longer; a shorter
#: one loses less work to an interruption)
GEN_QUEUE = 8


def _max_length(model, tokenizer) -> int:
    # lm-eval's resolve_max_length: model config attributes first, then the tokenizer, else 2048.
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        if (v := getattr(model.config, attr, None)) is not None:
            return int(v)
    if getattr(tokenizer, "model_max_length", None) and tokenizer.model_max_length < 1e9:
        return int(tokenizer.model_max_length)
    return 2048


#: transformers' attention implementations (``attn_implementation``): :data:`repaudit.settings.HfAttention`
ATTN_IMPLEMENTATIONS: tuple[str, ...] = get_args(HfAttention)


def _attn_implementation(engine: dict) -> str | None:
    """The attention implementation asked for, or None; any other serving setting but ``batch_invariant`` is refused
    (vLLM's).

    Raises:
        RepauditError: a serving setting transformers does not take.
    """
    other = sorted(k for k in engine if k not in ("attention_backend", "batch_invariant"))
    if other:
        raise RepauditError(f"--{other[0].replace('_', '-')} is a setting of the vllm backend, not of transformers")
    attn = engine.get("attention_backend")
    if attn is not None and attn not in ATTN_IMPLEMENTATIONS:
        raise RepauditError(f"transformers' attention implementation is one of {', '.join(ATTN_IMPLEMENTATIONS)}; "
                            f"'{attn}' is a vLLM backend name")
    return attn


class HFBackend(Backend):
    """A causal LM loaded with transformers.

    Args:
        model: resolved weights location.
        serving: the serving settings (:class:`~repaudit.settings.ServingSettings`, typed and checked by its own
            fields): the dtype (``float32``, ``bfloat16``, ``float16``) and device the weights load in, the load
            options (attention implementation, batch invariance), and the first run's per-run settings — batch
            size, padding side (``left`` passes attention mask and position ids, mathematically equal to ``right``
            and differing only numerically), scoring strategy (``full_sequence``, lm-eval's bit-compatible path, or
            ``shared_prefix``, each distinct context once: :mod:`repaudit.backends.prefix`).
        trust_remote_code: allow the model repository's own code (off unless asked for).

    Raises:
        RepauditError: no dtype or device (a served model's record), a load option transformers does not take,
            weights that transformers cannot load; ``shared_prefix`` on a sliding-window model.
    """

    def __init__(self, model: ResolvedModel, serving: ServingSettings, trust_remote_code: bool = False):
        t0 = time.perf_counter()
        import torch
        import transformers

        # transformers' own bars and warnings would interleave with ours on stderr.
        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
        dtype, device, engine = serving.dtype, serving.device, serving.load_options()
        if dtype is None or device is None:
            raise RepauditError("the hf backend needs a dtype and a device")
        attn = _attn_implementation(engine)
        self.batch_invariant = batch_invariant_asked(engine, device)  # forward passes in its mode
        parts = {"imports": time.perf_counter() - t0}
        self.tokenizer, self.model = load_transformers(model, dtype, device, trust_remote_code, attn, parts)
        self.torch = torch
        self.resolved = model
        self.device = device
        self.encoder = RequestEncoder(self.tokenizer)
        self.info = self._describe(engine, parts)
        self._head = ScoredHead(self.model, device)
        self.configure(serving)
        parts["other"] = time.perf_counter() - t0 - sum(parts.values())  # the rest: ~0 (checked by gpu_check)
        #: seconds of the load by part, until the first run takes them (:meth:`pop_load_parts`)
        self.load_parts: dict[str, float] | None = parts

    def _describe(self, engine: dict, parts: dict[str, float]) -> BackendInfo:
        """The loaded backend's :class:`BackendInfo`, the seconds of its slow facts added to ``parts``:
        ``tokenizer_hash`` (the serialised tokenizer's sha256), ``parameters`` (counted), ``attention_probe`` (the
        sdpa kernels the device picks, :func:`~repaudit.backends.device.sdpa_kernels`)."""
        t = time.perf_counter()
        identity = tokenizer_identity(self.tokenizer)
        parts["tokenizer_hash"] = time.perf_counter() - t
        t = time.perf_counter()
        n_params = sum(p.numel() for p in self.model.parameters())
        parts["parameters"] = time.perf_counter() - t
        t = time.perf_counter()
        kernels = sdpa_kernels(self.model, self.device)
        parts["attention_probe"] = time.perf_counter() - t
        return BackendInfo(
            name="hf", device=self.device, dtype=str(self.model.dtype).removeprefix("torch."),
            max_length=_max_length(self.model, self.tokenizer), **identity, num_parameters=n_params,
            architecture=type(self.model).__name__,
            engine={"attn_implementation": str(getattr(self.model.config, "_attn_implementation", "unknown")),
                    **({"sdpa_kernel": kernels} if kernels else {}), **hf_engine_facts(self.batch_invariant),
                    **({"requested": dict(sorted(engine.items()))} if engine else {})})

    def _configured(self, serving: ServingSettings) -> None:
        """``auto``'s token budget (recorded in the engine facts as ``batch_tokens``) and the shared-prefix scorer,
        where the run asks for them."""
        #: auto's padded-token budget per batch (:mod:`repaudit.backends.batching`); None for a fixed batch size
        self.batch_tokens = None
        self.info.engine.pop("batch_tokens", None)
        if serving.batch_size == "auto":
            self.batch_tokens = auto_batch_tokens(self.torch, self.model, self.device)
            self.info.engine["batch_tokens"] = self.batch_tokens
        self._scorer = None
        if serving.scoring_strategy == "shared_prefix":
            from repaudit.backends.prefix import PrefixScorer

            self._scorer = PrefixScorer(self.model, self.device)

    def pop_load_parts(self) -> dict[str, float] | None:
        """Seconds the load took by part — ``imports`` (torch, transformers, the model family's modules),
        ``device_init``, ``tokenizer`` and ``weights`` (:func:`~repaudit.backends.model_source.load_transformers`),
        ``tokenizer_hash``, ``parameters`` and ``attention_probe`` (:meth:`_describe`), ``other`` (the rest of the
        set-up) — once: the run that loaded the model reports them, a later run reusing it gets ``None``."""
        parts, self.load_parts = self.load_parts, None
        return None if parts is None else {k: round(v, 3) for k, v in parts.items()}

    # ------------------------------------------------------------------ keys
    def _key_settings(self) -> list:
        # shared_prefix has no padding side: its padded keys are masked out; batch-invariant kernels give other bits
        key = [self.padding_side if self._scorer is None else None, self.batch_size, self.info.max_length,
               self.scoring_strategy, *(["batch_invariant"] if self.batch_invariant else [])]
        return key if self.batch_tokens is None else [*key, self.batch_tokens]

    def plan_cost(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None) -> tuple[int, int, int]:
        """``(batches, batches already in the store, tokens still to compute)`` of answering ``requests``
        with the current settings, without a forward pass (the batches and keys :meth:`loglikelihood` uses)."""
        ckey = self.config_key("loglikelihood")
        n = stored = tokens = 0
        if self._scorer is None:
            batches, enc = self.plan_loglikelihood(requests)
            for batch in batches:
                rows = self._rows(batch, enc)
                n += 1
                if cache is not None and cache.get(ckey, sha256_json(rows)) is not None:
                    stored += 1
                else:
                    tokens += sum(len(r) for r in rows)
            return n, stored, tokens
        for group in self._prefix_groups(self.encode_requests(requests)):
            missing = 0
            for batch in group.batches:
                n += 1
                bkey = sha256_json([group.prefix, [[u.ctx, u.conts] for u in batch]])
                if cache is not None and cache.get(ckey, bkey) is not None:
                    stored += 1
                else:
                    missing += 1
                    tokens += sum(u.row_length(len(group.prefix)) for u in batch)
            tokens += len(group.prefix) if missing else 0
        return n, stored, tokens

    # ------------------------------------------------------------ tokenising
    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Token ids of (context, continuation); see :meth:`RequestEncoder.encode_pair`."""
        return self.encoder.encode_pair(context, continuation)

    # ---------------------------------------------------------- loglikelihood
    def plan_loglikelihood(self, requests: list[LoglikelihoodRequest]
                           ) -> tuple[list[list[list[int]]], list[tuple[list[int], list[int]]]]:
        """Group and order requests as lm-eval does.

        Returns ``(batches, encoded)``: batches of groups of request indices, and every request's
        (context tokens, continuation tokens). Each group shares ``context + continuation[:-1]``
        tokens; its first member has the longest continuation and provides the forward row. Groups are sorted by
        descending row length, then tokens, and cut into batches of ``batch_size`` rows, or under ``auto``'s token
        budget (:func:`repaudit.backends.batching.cut`).
        """
        encoded = self.encode_requests(requests)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (ctx, cont) in enumerate(encoded):
            groups.setdefault(tuple(ctx + cont[:-1]), []).append(i)
        reps = []
        for members in groups.values():
            rep = max(members, key=lambda i: len(encoded[i][1]))
            reps.append([rep] + [m for m in members if m != rep])
        reps.sort(key=lambda g: (-(len(encoded[g[0]][0]) + len(encoded[g[0]][1])),
                                 tuple(encoded[g[0]][0] + encoded[g[0]][1])))
        lengths = [min(len(encoded[g[0]][0]) + len(encoded[g[0]][1]), self.context_length() + 1) - 1 for g in reps]
        return [reps[a:b] for a, b in cut(lengths, self.batch_size, self.batch_tokens)], encoded

    def _rows(self, batch: list[list[int]], enc: list[tuple[list[int], list[int]]]) -> list[list[int]]:
        """A batch's forward rows: each group's ``(context + continuation)[-(max_length + 1):][:-1]`` (lm-eval's)."""
        return [(enc[g[0]][0] + enc[g[0]][1])[-(self.context_length() + 1):][:-1] for g in batch]

    def _prefix_groups(self, enc: list[tuple[list[int], list[int]]]) -> list:
        from repaudit.backends.prefix import plan_groups, plan_units

        return plan_groups(plan_units(enc, self.context_length()), self.batch_size, tokens=self.batch_tokens)

    def loglikelihood(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None = None,
                      progress: Progress | None = None) -> list[LoglikelihoodResult]:
        """Answer every request; see the module docstring for the exact numerical path.

        With ``scoring_strategy="shared_prefix"`` the work goes through :meth:`_loglikelihood_shared`; with
        ``--batch-invariant`` every forward pass runs in batch_invariant_ops' mode. The seconds go to
        :attr:`eval_parts` by part.
        """
        with self.timed_eval(), batch_invariant_mode(self.batch_invariant):
            if self._scorer is not None:
                return self._loglikelihood_shared(self._scorer, requests, cache, progress)
            return self._loglikelihood_full(requests, cache, progress)

    def _loglikelihood_full(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None,
                            progress: Progress | None) -> list[LoglikelihoodResult]:
        batches, enc = self.plan_loglikelihood(requests)
        out: list[LoglikelihoodResult | None] = [None] * len(requests)
        ckey = self.config_key("loglikelihood")
        for batch in batches:
            rows = self._rows(batch, enc)
            bkey = sha256_json(rows)
            payload = cache.get(ckey, bkey) if cache is not None else None
            stored = stored_groups(payload, batch, enc) if payload is not None else None
            if cache is not None and payload is not None and stored is None:
                cache.drop(ckey, bkey)  # a payload of the wrong shape is never trusted
            if stored is None:
                stored = self._forward_ll(batch, rows, enc)
                self.tokens_computed += sum(len(r) for r in rows)
                if cache is not None:
                    cache.put(ckey, bkey, [[[list(c), lp, gr] for c, (lp, gr) in grp.items()] for grp in stored])
            self.batch_sizes_used[len(batch)] += 1
            n = 0
            for j, g in enumerate(batch):
                for m in g:
                    lp, gr = stored[j][tuple(enc[m][1])]
                    out[m] = LoglikelihoodResult(logprob=lp, is_greedy=bool(gr), n_tokens=len(enc[m][1]))
                    n += 1
            if progress:
                progress(n)
        return out  # type: ignore[return-value]

    def _loglikelihood_shared(self, scorer: PrefixScorer, requests: list[LoglikelihoodRequest],
                              cache: BatchCache | None, progress: Progress | None) -> list[LoglikelihoodResult]:
        enc = self.encode_requests(requests)
        out: list[LoglikelihoodResult | None] = [None] * len(requests)
        ckey = self.config_key("loglikelihood")
        before, before_s = scorer.tokens_computed, scorer.forward_s
        for group in self._prefix_groups(enc):
            for batch in group.batches:
                bkey = sha256_json([group.prefix, [[u.ctx, u.conts] for u in batch]])
                valid = functools.partial(pairs_shape, lengths=[len(u.conts) for u in batch])
                stored = cache.get_checked(ckey, bkey, valid) if cache is not None else None
                if stored is None:
                    stored = scorer.score(group.prefix, batch, self.eval_parts)
                    if cache is not None:
                        cache.put(ckey, bkey, stored)
                self.batch_sizes_used[len(batch)] += 1
                n = 0
                for u, res in zip(batch, stored):
                    for c, members, (lp, gr) in zip(u.conts, u.members, res):
                        for m in members:
                            out[m] = LoglikelihoodResult(logprob=lp, is_greedy=bool(gr), n_tokens=len(c))
                            n += 1
                if progress:
                    progress(n)
        self.tokens_computed += scorer.tokens_computed - before
        self.forward_s += scorer.forward_s - before_s
        return out  # type: ignore[return-value]

    def _forward_ll(self, batch: list[list[int]], rows: list[list[int]], enc: list[tuple[list[int], list[int]]]
                    ) -> list[dict[tuple, tuple[float, bool]]]:
        """Per group of ``batch``, ``{continuation ids: (log p in nats, is_greedy)}`` from one forward pass of
        ``rows`` (lm-eval's padding, dtype and full-vocabulary log-softmax), the output layer run at the scored
        positions only where the architecture allows (:class:`~repaudit.backends.head.ScoredHead`), scored on the
        device and read back in one transfer (:func:`~repaudit.backends.head.score_positions`).

        Raises:
            RepauditError: a continuation longer than the model's window (no position predicts its first token).
        """
        torch = self.torch
        width = max(len(r) for r in rows)
        pad = [width - len(r) for r in rows]
        if self.padding_side == "right":
            ids = torch.tensor([r + [0] * p for r, p in zip(rows, pad)], dtype=torch.long, device=self.device)
            kwargs: dict[str, Any] = {}
        else:
            ids = torch.tensor([[0] * p + r for r, p in zip(rows, pad)], dtype=torch.long, device=self.device)
            mask = torch.tensor([[0] * p + [1] * len(r) for r, p in zip(rows, pad)], device=self.device)
            kwargs = {"attention_mask": mask, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0)}
        # scored positions: each group's last len(longest continuation) positions; a member's are their suffix
        at, where, choices = 0, [], []
        for j, g in enumerate(batch):
            end, rep = (len(rows[j]) if self.padding_side == "right" else width), len(enc[g[0]][1])
            if rep > len(rows[j]):
                raise RepauditError(f"a continuation of {rep} tokens does not fit the model's window of "
                                    f"{self.info.max_length} tokens")
            where += [(j, t) for t in range(end - rep, end)]
            choices += [(range(at + rep - len(enc[m][1]), at + rep), enc[m][1]) for m in g]
            at += rep
        where_t = torch.tensor(where, dtype=torch.long, device=self.device).T
        index = ChoiceIndex(torch, self.device, choices)
        head = self._head
        if head.plain and ids.numel() >= head.min_rows:
            project = head.logits
            forward = lambda: head.base(input_ids=ids, use_cache=False, **kwargs).last_hidden_state  # noqa: E731
        else:  # lm-eval's whole forward pass: another architecture's head, or a product too small to keep its bits
            forward = lambda: self.model(ids, **kwargs).logits  # noqa: E731
            project = lambda x: x  # noqa: E731
        before = self.eval_parts["forward"] + self.eval_parts["logsoftmax"]
        scores = iter(score_positions(torch, self.device, forward, project, where_t, index, self.eval_parts))
        self.forward_s += self.eval_parts["forward"] + self.eval_parts["logsoftmax"] - before
        return [{tuple(enc[m][1]): next(scores) for m in g} for g in batch]

    # --------------------------------------------------------- generate_until
    def generate_until(self, requests: list[GenerateRequest], cache: BatchCache | None = None,
                       progress: Progress | None = None) -> list[Generation]:
        """Greedy (or sampled) generation, left-padded, stopped at EOS or any ``until`` string.

        Contexts are sorted by descending token length (lm-eval's order) and truncated from the
        left to ``max_length - max_gen_toks`` tokens. With the ``prefix_cache`` strategy (greedy only)
        :func:`repaudit.backends.fastgen.generate_continuous` computes each queue of up to
        ``GEN_QUEUE × batch_size`` rows (one stored entry) with ``batch_size`` rows in flight.

        Raises:
            RepauditError: ``prefix_cache`` asked for sampled generation.
        """
        tok = self.tokenizer
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if any(r.settings.generation_strategy == "prefix_cache" and r.settings.do_sample for r in requests):
            raise RepauditError("the prefix_cache generation strategy decodes greedily: sampled generation "
                                "(do_sample with temperature > 0) needs --generation-strategy exact")

        def compute(rows: list[list[int]], settings) -> list[tuple[str, int, bool]]:
            with batch_invariant_mode(self.batch_invariant):
                if settings.generation_strategy == "prefix_cache":
                    return self._generate_prefix_cached(rows, settings, pad_id)
                return self._generate(rows, settings, pad_id)

        encoded = [self.encoder.encode(r.context) for r in requests]
        longest = min(max((len(e) for e in encoded), default=1) + max((r.max_gen_toks for r in requests),
                                                                       default=0), self.context_length())
        #: rows per generation batch: batch_size, or auto's rows of the longest context under the budget
        self._gen_rows = generation_rows(self.batch_size, self.batch_tokens, longest)
        return generate_in_batches(requests, encoded, self._gen_rows, self.context_length(),
                                   self.config_key("generate_until"), cache, progress, self.batch_sizes_used, compute,
                                   unit=lambda s: self._gen_rows * (
                                       GEN_QUEUE if s.generation_strategy == "prefix_cache" else 1))

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        return (set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}) - {None}

    def _generate_prefix_cached(self, rows: list[list[int]], settings, pad_id: int) -> list[tuple[str, int, bool]]:
        from repaudit.backends.fastgen import generate_continuous

        layer_types = getattr(self.model.config, "layer_types", None) or []
        if any(t != "full_attention" for t in layer_types):
            # its cache is built without the model's config: every layer would attend to the whole context
            raise RepauditError(f"the prefix_cache generation strategy handles full-attention models only; "
                                f"{self.resolved.name} has {sorted(set(layer_types))} layers: use "
                                "--generation-strategy exact")
        out = generate_continuous(self.model, self.torch, rows, slots=self._gen_rows,
                                  max_new_tokens=settings.max_gen_toks, stops=[s for s in settings.until if s],
                                  eos_ids=self._eos_ids(), decode=lambda ids: self.tokenizer.decode(
                                      ids, skip_special_tokens=True), pad_id=pad_id, counts=self.gen_tokens)
        return [(self.tokenizer.decode(ids, skip_special_tokens=True), len(ids), on_eos) for ids, on_eos in out]

    def _generate(self, rows: list[list[int]], settings, pad_id: int) -> list[tuple[str, int, bool]]:
        torch = self.torch
        width = max(len(r) for r in rows)
        ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows], dtype=torch.long, device=self.device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=self.device)
        # every setting generate() takes, under the name its field declares (repaudit.settings); under greedy
        # decoding the sampling ones go as None, so that the model's generation_config cannot bring its own back
        kwargs: dict[str, Any] = {"pad_token_id": pad_id, **settings.engine_kwargs("hf", greedy_off="none")}
        if settings.do_sample:
            torch.manual_seed(settings.sampling_seed)
        stops = [s for s in settings.until if s]
        if stops:
            kwargs.update(stop_strings=stops, tokenizer=self.tokenizer)
        with torch.inference_mode():
            gen = self.model.generate(input_ids=ids, attention_mask=mask, **kwargs)
        eos_ids = self._eos_ids()
        self.gen_tokens["prefilled"] += ids.numel()
        self.gen_tokens["decoded"] += gen[:, width:].numel()
        out = []
        for row in gen[:, width:].tolist():
            at = next((k for k, t in enumerate(row) if t in eos_ids), None)
            if at is None:
                n = len(row)
                while n and row[n - 1] == pad_id:  # a row that stopped early is padded to the batch's length
                    n -= 1
            out.append((self.tokenizer.decode(row, skip_special_tokens=True), n if at is None else at + 1,
                        at is not None))
        return out
