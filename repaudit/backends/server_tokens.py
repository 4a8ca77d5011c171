"""Tokenisation by the server itself: the ids a served model computes on, so that a continuation's tokens are
located by the server's own tokenizer, never by guessing character offsets.

:class:`ServerTokenizer` answers the part of a Hugging Face tokenizer that
:class:`~repaudit.backends.tokens.RequestEncoder` uses (``encode``, ``bos_token_id``, ``eos_token_id``) and
``decode``, through the server's routes: vLLM's ``POST /tokenize`` (``prompt``, ``add_special_tokens``) and
``/detokenize``, or llama.cpp's (``content``, ``add_special``). Texts are memoised, and
:meth:`ServerTokenizer.prefetch` tokenises many at once, ``max_concurrency`` in flight. The special tokens come from
vLLM's ``/tokenizer_info`` or llama.cpp's ``/props`` where the server offers them; otherwise the BOS is read from
what ``add_special_tokens`` adds, and the EOS is not known (a server stops on its own EOS anyway).
"""

from __future__ import annotations

import threading
from typing import Any

from repaudit.backends.endpoint import Endpoint
from repaudit.errors import EndpointError, RepauditError


class ServerTokenizer:
    """A tokenizer answered by an endpoint (see the module docstring).

    Args:
        ep: the endpoint.
        model_id: the served model id (vLLM's /tokenize takes it).
        kind: the server kind (:class:`~repaudit.backends.server.ServerFacts`): ``llama.cpp`` takes its own fields.

    Raises:
        EndpointError: the server has no tokenisation route (:func:`open_server_tokenizer` returns None instead).
    """

    def __init__(self, ep: Endpoint, model_id: str, kind: str):
        self.ep = ep
        self.model_id = model_id
        self.llama = kind == "llama.cpp"
        self._memo: dict[tuple[str, bool], list[int]] = {}
        self._lock = threading.Lock()
        self.bos_token: str | None = None
        self.eos_token: str | None = None
        self.pad_token: str | None = None
        self.chat_template: str | None = None
        self.bos_token_id: int | None = None
        self.eos_token_id: int | None = None
        #: where the special tokens were read (``GET /tokenizer_info``, ``GET /props``, ``derived``)
        self.special_source: str | None = None

    # ------------------------------------------------------------------ routes
    def _body(self, text: str, special: bool) -> dict[str, Any]:
        if self.llama:
            return {"content": text, "add_special": special}
        return {"model": self.model_id, "prompt": text, "add_special_tokens": special}

    def _ask(self, text: str, special: bool) -> list[int]:
        obj = self.ep.post("/tokenize", self._body(text, special), root=True)
        ids = obj.get("tokens") if isinstance(obj, dict) else None
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise EndpointError(f"endpoint {self.ep.url}: /tokenize answered without a list of token ids (tokens)")
        return ids

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The server's token ids of ``text`` (its own default adds special tokens, as a Hugging Face tokenizer's
        does).

        Raises:
            EndpointError: the server failed to tokenise.
        """
        key = (text, add_special_tokens)
        with self._lock:
            hit = self._memo.get(key)
        if hit is not None:
            return list(hit)
        ids = self._ask(text, add_special_tokens)
        with self._lock:
            self._memo[key] = ids
        return list(ids)

    def prefetch(self, texts: list[str], add_special_tokens: bool = True) -> None:
        """Tokenise every text not yet known, ``max_concurrency`` requests at a time (the memo then answers
        :meth:`encode` without a request).

        Raises:
            EndpointError: the first text the server failed to tokenise.
        """
        todo = list(dict.fromkeys(t for t in texts if (t, add_special_tokens) not in self._memo))

        def keep(text: str, ids: list[int]) -> None:
            with self._lock:
                self._memo[(text, add_special_tokens)] = ids

        self.ep.map(lambda t: self._ask(t, add_special_tokens), todo, keep)

    def decode(self, ids: list[int]) -> str:
        """The server's text of ``ids``.

        Raises:
            EndpointError: the server failed to detokenise.
        """
        body = {"tokens": ids} if self.llama else {"model": self.model_id, "tokens": ids}
        obj = self.ep.post("/detokenize", body, root=True)
        text = obj.get("content" if self.llama else "prompt") if isinstance(obj, dict) else None
        if not isinstance(text, str):
            raise EndpointError(f"endpoint {self.ep.url}: /detokenize answered without the text")
        return text

    # ------------------------------------------------------------------ special tokens
    def read_specials(self) -> None:
        """The special tokens and chat template from vLLM's ``/tokenizer_info`` (where enabled) or llama.cpp's
        ``/props``; otherwise the BOS the tokenizer adds by default (derived), the EOS unknown."""
        info = self.ep.probe("GET", "/props" if self.llama else "/tokenizer_info", root=True)
        if info:
            self.special_source = "GET /props" if self.llama else "GET /tokenizer_info"
            for name in ("bos_token", "eos_token", "pad_token"):
                v = info.get(name)
                v = v.get("content") if isinstance(v, dict) else v  # an AddedToken as a dict
                if isinstance(v, str) and v:
                    setattr(self, name, v)
            if isinstance(info.get("chat_template"), str) and info["chat_template"]:
                self.chat_template = info["chat_template"]
            for name in ("bos", "eos"):
                text = getattr(self, f"{name}_token")
                if text is not None:
                    ids = self.encode(text, add_special_tokens=False)
                    setattr(self, f"{name}_token_id", ids[0] if len(ids) == 1 else None)
        if self.bos_token_id is None:
            plain, special = self.encode("a", False), self.encode("a", True)
            if len(special) > len(plain) and special[-len(plain):] == plain:
                self.bos_token_id = special[0]
                self.special_source = self.special_source or "derived"

    def added_special_tokens(self) -> bool:
        """Whether the server's tokenizer adds special tokens (a BOS) by default."""
        return len(self.encode("a", True)) != len(self.encode("a", False))


def open_server_tokenizer(ep: Endpoint, model_id: str, kind: str) -> ServerTokenizer | None:
    """A :class:`ServerTokenizer` when the endpoint tokenises (a probe of ``/tokenize`` answers ids), else None.

    Raises:
        EndpointError: the endpoint cannot be reached or refuses the key.
    """
    tok = ServerTokenizer(ep, model_id, kind)
    answer = ep.probe("POST", "/tokenize", tok._body("a", False), root=True)
    if not answer or not isinstance(answer.get("tokens"), list):
        return None
    tok.read_specials()
    return tok


def local_tokenizer(name: str, trust_remote_code: bool = False):
    """A Hugging Face tokenizer from a local directory or hub id (``--tokenizer``).

    Raises:
        RepauditError: it cannot be loaded.
    """
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers raises OSError, ValueError, … for a missing or broken tokenizer
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RepauditError(f"--tokenizer '{name}' cannot be loaded ({first})") from None
