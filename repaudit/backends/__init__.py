"""Inference backends. Heavy backends are imported lazily, only when selected.

``hf`` (:mod:`repaudit.backends.hf`) is transformers, numerically compatible with lm-eval's
``HFLM``; ``vllm`` (:mod:`repaudit.backends.vllm`) is vLLM's offline engine, installed with the
``vllm`` extra; ``openai`` (:mod:`repaudit.backends.openai`) is a model behind an OpenAI-compatible endpoint (a vLLM,
SGLang or llama.cpp server, an API), compatible with lm-eval's ``local-completions``. All answer the same requests
and are tokenised by the same :class:`repaudit.backends.tokens.RequestEncoder` (the served one on the server's own
tokenizer), so they differ only in how they compute.
"""

from __future__ import annotations

from repaudit.errors import RepauditError

#: backend names, as lm-eval's ``--model`` spells them
BACKENDS = ("hf", "vllm", "openai")


def check_backend(name: str) -> None:
    """Raise RepauditError for a backend name that is not in :data:`BACKENDS`."""
    if name not in BACKENDS:
        raise RepauditError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)}")


def load_backend(name: str, model, *, dtype: str, device: str, trust_remote_code: bool, seed: int = 0,
                 engine: dict | None = None, batch_size: int = 8, padding_side: str = "right",
                 scoring_strategy: str = "full_sequence", serving=None, endpoint=None):
    """Load ``model`` (a :class:`~repaudit.backends.model_source.ResolvedModel`) in backend ``name``; the
    per-run settings (batch size, padding, scoring strategy, BOS) are set afterwards by ``configure``.

    ``seed`` seeds vLLM's engine (the transformers backend is seeded by the runner); ``engine`` holds the
    serving settings that differ from their defaults (``tensor_parallel_size``, ``attention_backend``, …);
    ``batch_size``, ``padding_side`` and ``scoring_strategy`` are the first configuration's (the runner's
    ``configure`` sets each run's). ``openai`` takes the whole ``serving`` record and the ``endpoint``
    (:class:`~repaudit.backends.endpoint.EndpointSettings`).

    Raises:
        RepauditError: unknown backend, a backend that is not installed, a serving setting it does not
            take, or weights it cannot load; for ``openai`` no endpoint given.
        EndpointError: the endpoint cannot be reached or does not serve the model.
    """
    check_backend(name)
    if name == "openai":
        from repaudit.backends.openai import OpenAIBackend

        if endpoint is None:
            raise RepauditError("--backend openai needs --base-url (the endpoint, e.g. http://127.0.0.1:8000/v1)")
        return OpenAIBackend(model, serving, endpoint, trust_remote_code=trust_remote_code)
    if name == "vllm":
        from repaudit.backends.vllm import VLLMBackend

        return VLLMBackend(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code, seed=seed,
                           engine=engine or {}, batch_size=batch_size, padding_side=padding_side,
                           scoring_strategy=scoring_strategy)
    from repaudit.backends.hf import HFBackend

    return HFBackend(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code, engine=engine or {},
                     batch_size=batch_size, padding_side=padding_side, scoring_strategy=scoring_strategy)
