"""The ``openai`` backend: the same requests as :mod:`repaudit.backends.hf`, answered by a model behind an
OpenAI-compatible endpoint (vLLM, SGLang and llama.cpp servers, APIs).

``loglikelihood`` follows lm-eval 0.4.13's ``local-completions``: requests are tokenised as the in-process backends
tokenise them (:class:`~repaudit.backends.tokens.RequestEncoder`) but on the *server's* tokenizer (its ``/tokenize``,
:mod:`repaudit.backends.server_tokens`; or ``--tokenizer``), each distinct ``context + continuation`` row is sent as
token ids to ``/v1/completions`` with ``echo: true, logprobs: 1, max_tokens: 1, temperature: 0``, ``batch_size``
rows per request, and a continuation's log-probability is the sum of the echoed prompt log-probabilities at its
positions; it is greedy when each of its tokens has the largest log-probability among the top ones (lm-eval's
``is_greedy`` rule). Where the answer carries vLLM's ``prompt_logprobs`` (token ids with ranks), each position is
checked to hold the id sent, so a server that re-tokenised the prompt is an error rather than a silent shift. A
server that echoes no prompt log-probabilities is one :class:`~repaudit.errors.EndpointError` naming what it lacks.

``generate_until`` sends one request per doc: the context as token ids to ``/v1/completions`` (as text where the
endpoint has no tokenizer), or the conversation to ``/v1/chat/completions`` when the run asked for the chat template
(:meth:`OpenAIBackend.apply_chat_template` keeps the messages beside the text the server's template renders), with
the stop sequences, token budget, temperature, top-p, top-k and seed the generation settings record (sampling keys
only when sampling; every other key a field declares with ``openai=`` when it is off its default). What the server
reports back — ``system_fingerprint``, ``finish_reason``, the completion's token count — is kept per request.

Requests run ``max_concurrency`` at a time (:meth:`~repaudit.backends.endpoint.Endpoint.map`); every finished one
is committed to the batch store at once, so an interrupted or failed run resumes where it stopped. The batch store
keys a served model by what the endpoint says it is (base URL, server kind and version, model id and root) and by
the batch size and concurrency, never by weights it cannot see.
"""

from __future__ import annotations

import time
import typing
from collections import Counter
from typing import Any

from repaudit.backends.base import Backend, BackendInfo, Progress
from repaudit.backends.completions import continuation, generation_shape, scores_shape
from repaudit.backends.endpoint import Endpoint, EndpointSettings
from repaudit.backends.model_source import ResolvedModel
from repaudit.backends.server import ServerFacts, describe_server
from repaudit.backends.server_tokens import ServerTokenizer, local_tokenizer, open_server_tokenizer
from repaudit.backends.store import BatchCache
from repaudit.backends.tokens import RequestEncoder, tokenizer_identity
from repaudit.errors import EndpointError, RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.settings import Dtype, ServingSettings
from repaudit.tasks.requests import GenerateRequest, Generation, LoglikelihoodRequest, LoglikelihoodResult, finish_of

#: ``batch_size = auto``: rows per /v1/completions request (the server batches across requests itself)
AUTO_ROWS = 16


class ChatPrompt(str):
    """A prompt the chat template rendered: the text (the server's own rendering where it offers one, else the
    messages as canonical JSON) with the ``messages`` it came from, which ``/v1/chat/completions`` receives."""

    messages: list[dict[str, str]]

    def __new__(cls, text: str, messages: list[dict[str, str]]) -> ChatPrompt:
        obj = super().__new__(cls, text)
        obj.messages = messages
        return obj


class _NoTokenizer:
    """The encoder of an endpoint without a tokenizer: generation sends text; anything that needs ids says why."""

    def __init__(self, url: str):
        self.url = url
        self.add_bos_token: bool | None = None
        self.bos_first: Counter = Counter()

    def _refuse(self, *_: Any, **__: Any):
        raise RepauditError(f"endpoint {self.url} offers no /tokenize and no --tokenizer was given: log-likelihood "
                            "requests need the server's token ids (pass --tokenizer with the served model's tokenizer)")

    encode = encode_pair = encode_requests = _refuse

    def resolved_bos(self) -> None:
        return None


class OpenAIBackend(Backend):
    """A model behind an OpenAI-compatible endpoint (see the module docstring).

    Args:
        model: the served model as asked for (``name``: the served model id, or ``default`` for the only one).
        serving: the serving settings (batch size: rows per request; ``max_concurrency``: requests in flight).
        endpoint: where the endpoint is and how to authenticate.
        trust_remote_code: for a local ``--tokenizer`` only.

    Raises:
        EndpointError: the endpoint cannot be reached, refuses the key, or does not serve the model.
        RepauditError: a ``--tokenizer`` that cannot be loaded or disagrees with the server's own tokenisation.
    """

    def __init__(self, model: ResolvedModel, serving: ServingSettings, endpoint: EndpointSettings,
                 trust_remote_code: bool = False):
        t0 = time.perf_counter()
        self.ep = Endpoint(endpoint, serving.max_concurrency)
        self.server: ServerFacts = describe_server(self.ep, model.name)
        server_tok = open_server_tokenizer(self.ep, self.server.model_id, self.server.kind)
        if endpoint.tokenizer is not None:
            tok = local_tokenizer(endpoint.tokenizer, trust_remote_code)
            _check_agrees(tok, server_tok, endpoint.tokenizer)
            self.server.tokenizer = f"local {endpoint.tokenizer}"
            identity = tokenizer_identity(tok)
        elif server_tok is not None:
            tok = server_tok
            self.server.tokenizer = "server /tokenize"
            identity = _served_identity(server_tok)
        else:
            tok, identity = None, _served_identity(None)
        self.tokenizer = tok
        self.encoder = RequestEncoder(tok) if tok is not None else _NoTokenizer(self.ep.url)  # type: ignore[assignment]
        self.resolved = model.model_copy(update={"name": self.server.model_id})
        self._routes: set[str] = set()
        self._fingerprints: set[str] = set()
        self._usage: Counter = Counter()
        dtype = self.server.facts.get("dtype")
        self.info = BackendInfo(
            name="openai", device=None, dtype=dtype if dtype in _DTYPES else None,
            max_length=self.server.max_model_len, **identity, num_parameters=None, architecture=None,
            engine={"server": self.server.kind, "server_version": self.server.version,
                    "max_concurrency": serving.max_concurrency})
        self.configure(serving)
        self.load_parts: dict[str, float] | None = {"endpoint": round(time.perf_counter() - t0, 3)}

    # ------------------------------------------------------------------ settings and keys
    def _configured(self, serving: ServingSettings) -> None:
        """Rows per ``/v1/completions`` request (``auto``: :data:`AUTO_ROWS`) and requests in flight."""
        self.rows_per_request = AUTO_ROWS if serving.batch_size == "auto" else int(serving.batch_size)
        self.ep.max_concurrency = serving.max_concurrency
        self.info.engine["max_concurrency"] = serving.max_concurrency

    def _key_settings(self) -> list:
        s = self.server
        return [self.batch_size, self.info.max_length, s.base_url, s.kind, s.version, s.model_id, s.model_root,
                self.serving.max_concurrency]

    def speed_key(self) -> str:
        s = self.server
        return sha256_json(["openai", s.base_url, s.kind, s.version, s.model_id, s.model_root])

    def pop_load_parts(self) -> dict[str, float] | None:
        """Seconds the endpoint's introspection took (``endpoint``), once."""
        parts, self.load_parts = self.load_parts, None
        return parts

    def server_facts(self) -> ServerFacts:
        """The server's facts with what the run's requests added: the routes used, the distinct system
        fingerprints and the token usage the responses reported."""
        out = self.server.model_copy(deep=True)
        out.routes = sorted(self._routes)
        out.system_fingerprints = sorted(self._fingerprints)
        if self._usage:
            out.facts["usage"] = dict(sorted(self._usage.items()))
            out.sources["usage"] = "the responses' usage, summed"
        return out

    def _note(self, route: str, obj: dict[str, Any]) -> str | None:
        """Keep what a response tells about the server (its route, system fingerprint, usage); the fingerprint."""
        self._routes.add(route)
        fp = obj.get("system_fingerprint")
        if isinstance(fp, str):
            self._fingerprints.add(fp)
        usage = obj.get("usage")
        if isinstance(usage, dict):
            for k in ("prompt_tokens", "completion_tokens"):
                if isinstance(usage.get(k), int):
                    self._usage[k] += usage[k]
        return fp if isinstance(fp, str) else None

    def reset_prefix_cache(self) -> bool | None:
        """``POST /reset_prefix_cache`` on the server (vLLM serves it with ``VLLM_SERVER_DEV_MODE=1``): True done, False
        refused; None where the server has no such route."""
        answer = self.ep.probe("POST", "/reset_prefix_cache", root=True)
        return None if answer is None else bool(answer.get("success", True))

    # ------------------------------------------------------------------ loglikelihood
    def loglikelihood(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None = None,
                      progress: Progress | None = None) -> list[LoglikelihoodResult]:
        """Answer every request from the endpoint's echoed prompt log-probabilities; see the module docstring.

        Raises:
            EndpointError: the endpoint failed, or echoes no prompt log-probabilities.
            RepauditError: the endpoint has no tokenizer (``--tokenizer`` would give one).
        """
        with self.timed_eval():
            return self._loglikelihood(requests, cache, progress)

    def _loglikelihood(self, requests, cache, progress) -> list[LoglikelihoodResult]:
        self._prefetch(requests)
        enc = self.encode_requests(requests)
        rows: dict[tuple[int, ...], list[int]] = {}
        for i, (ctx, cont) in enumerate(enc):
            rows.setdefault(tuple(ctx + cont), []).append(i)
        order = sorted(rows, key=lambda r: (-len(r), r))
        # the server's window holds the prompt and the one token asked for
        limit = self.info.max_length - 1 if self.info.max_length else None
        ckey = self.config_key("loglikelihood")
        chunks = []
        out: list[LoglikelihoodResult | None] = [None] * len(requests)
        for k in range(0, len(order), self.rows_per_request):
            batch = order[k:k + self.rows_per_request]
            prompts = [list(r[-limit:]) if limit else list(r) for r in batch]
            n_conts = [sorted({len(enc[m][1]) for m in rows[r]}) for r in batch]
            chunks.append((batch, prompts, n_conts, sha256_json(["served-ll-v1", prompts, n_conts])))

        def finish(chunk, stored) -> None:
            batch, _, n_conts, _ = chunk
            self.batch_sizes_used[len(batch)] += 1
            n = 0
            for r, ns, scores in zip(batch, n_conts, stored["scores"]):
                by_len = dict(zip(ns, scores))
                for m in rows[r]:
                    lp, greedy = by_len[len(enc[m][1])]
                    out[m] = LoglikelihoodResult(logprob=lp, is_greedy=bool(greedy), n_tokens=len(enc[m][1]),
                                                 served={"system_fingerprint": stored.get("system_fingerprint")})
                    n += 1
            if progress:
                progress(n)

        pending = []
        for chunk in chunks:
            stored = cache.get_checked(ckey, chunk[3], lambda p, c=chunk: scores_shape(p, c[2])) if cache else None
            if stored is None:
                pending.append(chunk)
            else:
                finish(chunk, stored)

        def commit(chunk, stored) -> None:
            if cache is not None:
                cache.put(ckey, chunk[3], stored)
            finish(chunk, stored)

        t = time.perf_counter()
        self.ep.map(self._score_chunk, pending, commit)
        self.forward_s += time.perf_counter() - t
        self.eval_parts["forward"] += time.perf_counter() - t  # waiting on the server (its forward passes)
        return out  # type: ignore[return-value]

    def _prefetch(self, requests: list[LoglikelihoodRequest]) -> None:
        """Tokenise every text the encoder will ask for, concurrently (the server's /tokenize, one text a request)."""
        if not isinstance(self.tokenizer, ServerTokenizer):
            return
        prefetch = self.tokenizer.prefetch
        t = time.perf_counter()
        with_special: list[str] = []
        plain: list[str] = []
        for r in requests:
            for text, special in self.encoder.pair_texts(r.context, r.continuation):
                (with_special if special else plain).append(text)
        prefetch(with_special, True)
        prefetch(plain, False)
        self.eval_parts["tokenise"] += time.perf_counter() - t

    def _score_chunk(self, chunk) -> dict[str, Any]:
        """One /v1/completions request scoring a chunk's rows (runs in a worker thread): ``{"scores": per row, per
        continuation length, [logprob, is_greedy]; "system_fingerprint": …}``.

        Raises:
            EndpointError: a failed request, or an answer without the prompt log-probabilities of every row.
        """
        _, prompts, n_conts, _ = chunk
        body = {"model": self.server.model_id, "prompt": prompts, "max_tokens": 1, "temperature": 0, "echo": True,
                "logprobs": 1}
        obj = self.ep.post("/completions", body)
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list) or len(choices) != len(prompts):
            raise EndpointError(f"endpoint {self.ep.url}/completions answered {len(choices or [])} choices for "
                                f"{len(prompts)} prompts")
        choices = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
        self.tokens_computed += sum(len(p) for p in prompts)
        return {"scores": [[continuation(self.ep.url, p, c, n) for n in ns]
                           for p, c, ns in zip(prompts, choices, n_conts)],
                "system_fingerprint": self._note("/v1/completions", obj)}

    # ------------------------------------------------------------------ generate_until
    def generate_until(self, requests: list[GenerateRequest], cache: BatchCache | None = None,
                       progress: Progress | None = None) -> list[Generation]:
        """One request per generation (``/v1/completions``, or ``/v1/chat/completions`` for a chat prompt), the
        context left-cut to the server's window minus the token budget where the endpoint tokenises; see the module
        docstring.

        Raises:
            EndpointError: the endpoint failed.
        """
        ckey = self.config_key("generate_until")
        out: list[Generation | None] = [None] * len(requests)
        keys = [sha256_json(["served-gen-v1", r.key, _chat_key(r.context)]) for r in requests]

        def finish(i: int, stored: list) -> None:
            text, n_tok, why, served = stored
            out[i] = Generation(text, n_tok, why, served=served)
            self.batch_sizes_used[1] += 1
            if progress:
                progress(1)

        pending = []
        for i, key in enumerate(keys):
            stored = cache.get_checked(ckey, key, generation_shape) if cache else None
            if stored is None:
                pending.append(i)
            else:
                finish(i, stored)

        def commit(i: int, stored: list) -> None:
            if cache is not None:
                cache.put(ckey, keys[i], stored)
            finish(i, stored)

        t = time.perf_counter()
        self.ep.map(lambda i: self._generate(requests[i]), pending, commit)
        self.forward_s += time.perf_counter() - t
        return out  # type: ignore[return-value]

    def _generate(self, req: GenerateRequest) -> list:
        """One generation (runs in a worker thread): ``[text cut at the first stop, tokens, finish, served]``."""
        s = req.settings
        stops = [u for u in s.until or () if u]
        body: dict[str, Any] = {"model": self.server.model_id, **_body_settings(s)}
        messages = getattr(req.context, "messages", None)
        if messages is not None:
            route = "/chat/completions"
            body["messages"] = messages
        else:
            route = "/completions"
            body["prompt"] = self._prompt_of(req.context, req.max_gen_toks)
        obj = self.ep.post(route, body)
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EndpointError(f"endpoint {self.ep.url}{route} answered without a choice")
        c = choices[0]
        text = (c.get("message") or {}).get("content") if messages is not None else c.get("text")
        if not isinstance(text, str):
            text = ""
        stop_reason = c.get("stop_reason")  # vLLM: the stop string matched (the text lacks it), else None
        raw = text + stop_reason if isinstance(stop_reason, str) else text
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        n_tok = usage.get("completion_tokens")
        if not isinstance(n_tok, int):  # a server without usage: the text's tokens where the endpoint tokenises
            n_tok = len(self.tokenizer.encode(text, add_special_tokens=False)) if self.tokenizer is not None else 0
        reason = c.get("finish_reason")
        told = "stop_reason" in c or reason != "stop"  # vLLM says which stop; a plain "stop" may be EOS or a string
        cut, why = finish_of(raw, stops, n_tok, reason == "stop" and told, req.max_gen_toks)
        if reason == "stop" and not told and not why.startswith("stop:"):
            why = "stop"  # the server stopped on a stop sequence or on EOS and did not say which
        served = {"system_fingerprint": self._note("/v1" + route, obj), "finish_reason": reason,
                  "completion_tokens": n_tok}
        return [cut, n_tok, why, served]

    def _prompt_of(self, context: str, budget: int) -> list[int] | str:
        """The context as the server's token ids, left-cut to its window minus ``budget``; as text where the
        endpoint has no tokenizer."""
        if self.tokenizer is None:
            return context
        ids = self.encoder.encode(context)
        if self.info.max_length:
            ids = ids[-max(self.info.max_length - budget, 1):]
        return ids

    # ------------------------------------------------------------------ chat
    def apply_chat_template(self, user: str, system: str | None, turns: list[tuple[str, str]] | tuple = ()) -> str:
        """The conversation as a :class:`ChatPrompt`: its text rendered by the server's template (vLLM's /tokenize
        with messages, then /detokenize; llama.cpp's /apply-template), by the local ``--tokenizer``'s, or, where
        neither exists, the messages as canonical JSON (the prompt hash then hashes the messages).

        Raises:
            EndpointError: the endpoint failed to render it.
        """
        messages = [{"role": "system", "content": system}] if system else []
        for q, a in turns:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": user})
        if self.tokenizer is None:
            return ChatPrompt(_canonical(messages), messages)
        if not isinstance(self.tokenizer, ServerTokenizer):  # a local --tokenizer renders its own template
            return ChatPrompt(super().apply_chat_template(user, system, turns), messages)
        if self.tokenizer.llama:
            # llama.cpp's /tokenize takes no messages (it answers [] for them); /apply-template renders them with the
            # template it applies in /v1/chat/completions, the generation prompt included
            obj = self.ep.post("/apply-template", {"messages": messages}, root=True)
            text = obj.get("prompt") if isinstance(obj, dict) else None
            if not isinstance(text, str) or not text:
                raise EndpointError(f"endpoint {self.ep.url}: /apply-template did not render the chat template")
            return ChatPrompt(text, messages)
        body = {"model": self.server.model_id, "messages": messages, "add_generation_prompt": True}
        obj = self.ep.post("/tokenize", body, root=True)
        ids = obj.get("tokens") if isinstance(obj, dict) else None
        if not isinstance(ids, list) or not ids:
            raise EndpointError(f"endpoint {self.ep.url}: /tokenize did not render the chat template")
        return ChatPrompt(self.tokenizer.decode(ids), messages)


_DTYPES: tuple[str, ...] = typing.get_args(Dtype)


def _canonical(messages: list[dict[str, str]]) -> str:
    import json

    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


def _chat_key(context: str) -> str | None:
    messages = getattr(context, "messages", None)
    return None if messages is None else sha256_text(_canonical(messages))


#: the generation keys of OpenAI's own completions API: sent whenever set; any other key a field declares (top_k,
#: repetition_penalty: vLLM's, SGLang's and llama.cpp's extensions) only off its default, so that an API that does
#: not know it is not sent it
OPENAI_KEYS = frozenset({"max_tokens", "temperature", "top_p", "stop", "seed"})


def _body_settings(s) -> dict[str, Any]:
    """The generation keys of a request body, from the fields' ``openai`` names (greedy decoding: temperature 0 and
    no sampling key but the standard ones at their neutral values)."""
    defaults = {(f.json_schema_extra or {}).get("openai"): f.get_default() for f in type(s).model_fields.values()
                if isinstance(f.json_schema_extra, dict)}
    return {k: v for k, v in s.engine_kwargs("openai").items()
            if v is not None and (k in OPENAI_KEYS or v != defaults.get(k))}


def _served_identity(tok) -> dict[str, Any]:
    """The tokenizer fields of :class:`BackendInfo` for the server's tokenizer: the special tokens and chat template
    it told (None where it told none); no hash: the endpoint does not serve the tokenizer's files."""
    if tok is None:
        return dict(add_special_tokens=False, tokenizer_sha256=None, bos_token=None, eos_token=None, pad_token=None,
                    chat_template_sha256=None)
    return dict(add_special_tokens=tok.added_special_tokens(), tokenizer_sha256=None, bos_token=tok.bos_token,
                eos_token=tok.eos_token, pad_token=tok.pad_token,
                chat_template_sha256=sha256_text(tok.chat_template) if tok.chat_template else None)


#: texts a local --tokenizer must tokenise as the server does
_PROBES = ("Question: Which gas do plants take in?\nAnswer: carbon dioxide", " 1,234.5 — naïve café ✓")


def _check_agrees(tok, server_tok, name: str) -> None:
    """A local ``--tokenizer`` gives the server's ids on a few probe texts (where the server tokenises).

    Raises:
        RepauditError: it does not.
    """
    if server_tok is None:
        return
    for text in _PROBES:
        if tok.encode(text) != server_tok.encode(text):
            raise RepauditError(f"--tokenizer '{name}' tokenises differently from the server's /tokenize (probe "
                                f"{text!r}): drop --tokenizer, or give the served model's own tokenizer")
