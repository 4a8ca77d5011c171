"""Inference backends. Heavy backends are imported lazily, only when selected.

``hf`` (:mod:`repaudit.backends.hf`) is transformers, numerically compatible with lm-eval's
``HFLM``; ``vllm`` (:mod:`repaudit.backends.vllm`) is vLLM's offline engine, installed with the
``vllm`` extra; ``openai`` (:mod:`repaudit.backends.openai`) is a model behind an OpenAI-compatible endpoint (a vLLM,
SGLang or llama.cpp server, an API), compatible with lm-eval's ``local-completions``. All answer the same requests
and are tokenised by the same :class:`repaudit.backends.tokens.RequestEncoder` (the served one on the server's own
tokenizer), so they differ only in how they compute.
"""

from __future__ import annotations

from typing import get_args

from repaudit.errors import RepauditError
from repaudit.settings import Backend

#: backend names, as lm-eval's ``--model`` spells them (the members of :data:`repaudit.settings.Backend`)
BACKENDS: tuple[str, ...] = get_args(Backend)


def check_backend(name: str) -> None:
    """Raise RepauditError for a backend name that is not in :data:`BACKENDS`."""
    if name not in BACKENDS:
        raise RepauditError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)}")


def load_backend(serving, model, *, trust_remote_code: bool = False, seed: int = 0, endpoint=None):
    """Load ``model`` (a :class:`~repaudit.backends.model_source.ResolvedModel`) in the backend the serving settings
    name (:class:`~repaudit.settings.ServingSettings`: the backend, dtype, device and load options; its per-run
    settings are the first run's, each later run's are set by ``configure``).

    ``seed`` seeds vLLM's engine (the transformers backend is seeded by the runner); ``endpoint``
    (:class:`~repaudit.backends.endpoint.EndpointSettings`) is where a served model (``openai``) is.

    Raises:
        RepauditError: a backend that is not installed, a load option it does not take, weights it cannot load; for
            ``openai`` no endpoint given.
        EndpointError: the endpoint cannot be reached or does not serve the model.
    """
    name = serving.backend
    check_backend(name)
    if name == "openai":
        from repaudit.backends.openai import OpenAIBackend

        if endpoint is None:
            raise RepauditError("--backend openai needs --base-url (the endpoint, e.g. http://127.0.0.1:8000/v1)")
        return OpenAIBackend(model, serving, endpoint, trust_remote_code=trust_remote_code)
    if name == "vllm":
        from repaudit.backends.vllm import VLLMBackend

        return VLLMBackend(model, serving, trust_remote_code=trust_remote_code, seed=seed)
    from repaudit.backends.hf import HFBackend

    return HFBackend(model, serving, trust_remote_code=trust_remote_code)
