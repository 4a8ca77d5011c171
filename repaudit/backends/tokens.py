"""Request tokenisation shared by every backend, so that backends differ only in how they compute.

The rules are lm-evaluation-harness 0.4.13's (``TemplateLM.loglikelihood`` and ``HFLM.tok_encode``):
the context's trailing whitespace moves into the continuation, the whole string is tokenised and
split at the context's token count, and an empty context becomes the prefix token (BOS, else EOS).
"""

from __future__ import annotations

from collections import Counter

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.tasks.requests import LoglikelihoodRequest


class RequestEncoder:
    """Token ids of requests for one Hugging Face tokenizer.

    Args:
        tokenizer: a ``transformers`` tokenizer (the backend's own, or the one vLLM loads).

    Attributes:
        add_bos_token: ``None`` = the tokenizer's own default (lm-eval with ``add_bos_token`` unset);
            ``True`` = every sequence starts with the BOS token (prepended when the tokenizer does
            not add it — lm-eval's ``add_bos_token=True`` only asks the tokenizer, which some, such
            as SmolLM2's, ignore); ``False`` = never (a BOS the tokenizer adds is dropped).
        bos_first: how many encoded texts started with the BOS token (``True``) or not (``False``):
            the resolved fact the fingerprint records.
    """

    def __init__(self, tokenizer, add_bos_token: bool | None = None):
        self.tokenizer = tokenizer
        # lm-eval's prefix_token_id: BOS if the tokenizer has one, else EOS.
        self.prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        self.add_bos_token = add_bos_token
        self.bos_first: Counter = Counter()

    def encode(self, text: str) -> list[int]:
        """lm-eval's ``tok_encode``: the tokenizer's own default, then :attr:`add_bos_token` applied."""
        ids = self.tokenizer.encode(text)
        bos = self.tokenizer.bos_token_id
        if bos is not None and self.add_bos_token is not None:
            starts = bool(ids) and ids[0] == bos
            if self.add_bos_token and not starts:
                ids = [bos, *ids]
            elif not self.add_bos_token and starts:
                ids = ids[1:]
        self.bos_first[bool(ids) and bos is not None and ids[0] == bos] += 1
        return ids

    def resolved_bos(self) -> bool | str | None:
        """Whether requests started with BOS: ``True``/``False`` when all agree, ``"mixed"``, or ``None``
        before anything was encoded."""
        seen = [k for k, n in self.bos_first.items() if n]
        return None if not seen else (seen[0] if len(seen) == 1 else "mixed")

    @staticmethod
    def split_pair(context: str, continuation: str) -> tuple[str, str]:
        """lm-eval's move of the context's trailing whitespace into the continuation."""
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            return context[:-n_spaces], context[-n_spaces:] + continuation
        return context, continuation

    def pair_texts(self, context: str, continuation: str) -> list[tuple[str, bool]]:
        """The texts :meth:`encode_pair` tokenises, each with whether the tokenizer's special tokens are added (a
        server-side tokenizer tokenises them ahead, concurrently)."""
        if context == "":
            return [(continuation, False)]
        ctx, cont = self.split_pair(context, continuation)
        return [(ctx + cont, True), (ctx, True)]

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Token ids of (context, continuation) as lm-eval's ``loglikelihood`` builds them."""
        if context == "":
            cont = self.tokenizer.encode(continuation, add_special_tokens=False)
            if cont and cont[0] == self.prefix_token_id:
                return cont[:1], cont[1:]
            return [self.prefix_token_id], cont
        context, continuation = self.split_pair(context, continuation)
        whole = self.encode(context + continuation)
        ctx = self.encode(context)
        return ctx, whole[len(ctx):]

    def encode_requests(self, requests: list[LoglikelihoodRequest]) -> list[tuple[list[int], list[int]]]:
        """Every request's (context ids, continuation ids).

        Raises:
            RepauditError: a request whose context or continuation tokenises to nothing.
        """
        encoded = [self.encode_pair(r.context, r.continuation) for r in requests]
        for (ctx, cont), r in zip(encoded, requests):
            if not ctx or not cont:
                raise RepauditError(f"request with context {r.context[-40:]!r} and continuation "
                                    f"{r.continuation!r} tokenises to an empty part")
        return encoded


def tokenizer_identity(tok) -> dict:
    """The tokenizer fields of :class:`repaudit.backends.base.BackendInfo`.

    ``tokenizer_sha256`` hashes the serialised fast tokenizer (vocabulary, merges, normaliser,
    pre-tokeniser) and the special tokens, so two backends loading the same files agree on it.
    """
    backend_tok = getattr(tok, "backend_tokenizer", None)
    tok_repr = backend_tok.to_str() if backend_tok is not None else repr(sorted(tok.get_vocab().items()))
    chat = getattr(tok, "chat_template", None)
    return dict(
        add_special_tokens=len(tok("a").input_ids) != len(tok("a", add_special_tokens=False).input_ids),
        tokenizer_sha256=sha256_json([tok_repr, tok.bos_token, tok.eos_token, tok.pad_token]),
        bos_token=tok.bos_token, eos_token=tok.eos_token, pad_token=tok.pad_token,
        chat_template_sha256=sha256_text(chat) if isinstance(chat, str) else None,
    )


def apply_chat_template(tok, model_name: str, user: str, system: str | None,
                        turns: list[tuple[str, str]] | tuple = ()) -> str:
    """The chat-formatted prompt (``tokenize=False``, generation prompt added): an optional system
    message, one user/assistant pair per ``turns`` entry (multi-turn few-shot), then ``user``.

    Raises:
        RepauditError: the tokenizer has no chat template.
    """
    if not getattr(tok, "chat_template", None):
        raise RepauditError(f"model '{model_name}' has no chat template: drop --chat-template")
    messages = [{"role": "system", "content": system}] if system else []
    for q, a in turns:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": user})
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
