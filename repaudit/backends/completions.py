"""What an OpenAI-compatible ``/v1/completions`` answer holds for repaudit: a continuation's log-likelihood and greedy
flag from echoed prompt log-probabilities (lm-eval 0.4.13's ``local-completions`` reading), and the shapes of the
answers the batch store keeps for a served model."""

from __future__ import annotations

from typing import Any

from repaudit.backends.store import pairs_shape
from repaudit.errors import EndpointError


def continuation(url: str, prompt: list[int], choice: Any, n_cont: int) -> list:
    """``[sum of the last n_cont prompt log-probabilities, greedy]`` from one echoed choice (lm-eval's
    ``parse_logprobs``: positions ``[-n_cont - 1:-1]`` of ``token_logprobs``, the last one being the generated
    token; greedy when each equals the largest of its ``top_logprobs``).

    Raises:
        EndpointError: a choice without prompt log-probabilities, or one that scored other tokens than sent.
    """
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
    if not isinstance(values, list) or len(values) < len(prompt):
        raise EndpointError(f"endpoint {url}/completions returned no prompt log-probabilities (echo with logprobs): "
                            "this server cannot score log-likelihood requests; generate_until tasks still run")
    n = min(n_cont, len(prompt) - 1)
    positions = range(len(prompt) - n, len(prompt))
    ids = choice.get("prompt_logprobs")
    if isinstance(ids, list) and len(ids) == len(prompt):  # vLLM: each position keyed by token id
        for j in positions:
            if not isinstance(ids[j], dict) or str(prompt[j]) not in ids[j]:
                raise EndpointError(f"endpoint {url} scored other tokens than the ids sent (position {j}): the "
                                    "server re-tokenised the prompt")
    total, greedy = 0.0, True
    for j in positions:
        v = values[j]
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise EndpointError(f"endpoint {url}/completions returned a prompt log-probability that is not a number "
                                f"(position {j})")
        total += float(v)
        top = tops[j] if isinstance(tops, list) and j < len(tops) and isinstance(tops[j], dict) else None
        if not top:
            raise EndpointError(f"endpoint {url}/completions returned no top log-probabilities (logprobs: 1) at "
                                f"position {j}: greedy cannot be told")
        greedy = greedy and float(v) >= max(float(x) for x in top.values())
    return [total, greedy]


def scores_shape(payload: Any, n_conts: list[list[int]]) -> bool:
    """A stored chunk: ``{"scores": per row, one [logprob, greedy] per continuation length}``."""
    return isinstance(payload, dict) and pairs_shape(payload.get("scores"), [len(ns) for ns in n_conts])


def generation_shape(payload: Any) -> bool:
    """A stored generation: ``[text, tokens, finish, served facts]``."""
    return (isinstance(payload, list) and len(payload) == 4 and isinstance(payload[0], str)
            and isinstance(payload[1], int) and isinstance(payload[2], str) and isinstance(payload[3], dict))
