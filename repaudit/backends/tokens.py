"""Request tokenisation shared by every backend, so that backends differ only in how they compute.

The rules are lm-evaluation-harness 0.4.13's (``TemplateLM.loglikelihood`` and ``HFLM.tok_encode``):
the context's trailing whitespace moves into the continuation, the whole string is tokenised and
split at the context's token count, and an empty context becomes the prefix token (BOS, else EOS).
"""

from __future__ import annotations

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json, sha256_text
from repaudit.tasks.requests import LoglikelihoodRequest


class RequestEncoder:
    """Token ids of requests for one Hugging Face tokenizer.

    Args:
        tokenizer: a ``transformers`` tokenizer (the backend's own, or the one vLLM loads).
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        # lm-eval's prefix_token_id: BOS if the tokenizer has one, else EOS.
        self.prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id

    def encode(self, text: str) -> list[int]:
        """lm-eval's ``tok_encode`` with ``add_bos_token`` unset: the tokenizer's own default."""
        return self.tokenizer.encode(text)

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Token ids of (context, continuation) as lm-eval's ``loglikelihood`` builds them."""
        if context == "":
            cont = self.tokenizer.encode(continuation, add_special_tokens=False)
            if cont and cont[0] == self.prefix_token_id:
                return cont[:1], cont[1:]
            return [self.prefix_token_id], cont
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
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


def apply_chat_template(tok, model_name: str, user: str, system: str | None) -> str:
    """The chat-formatted prompt (``tokenize=False``, generation prompt added).

    Raises:
        RepauditError: the tokenizer has no chat template.
    """
    if not getattr(tok, "chat_template", None):
        raise RepauditError(f"model '{model_name}' has no chat template: drop --chat-template")
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
