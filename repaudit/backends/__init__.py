"""Inference backends. Heavy backends are imported lazily, only when selected.

``hf`` (:mod:`repaudit.backends.hf`) is transformers, numerically compatible with lm-eval's
``HFLM``; ``vllm`` (:mod:`repaudit.backends.vllm`) is vLLM's offline engine, installed with the
``vllm`` extra. Both answer the same requests and are tokenised by the same
:class:`repaudit.backends.tokens.RequestEncoder`, so they differ only in how they compute.
"""

from __future__ import annotations

from repaudit.errors import RepauditError

#: backend names, as lm-eval's ``--model`` spells them
BACKENDS = ("hf", "vllm")


def check_backend(name: str) -> None:
    """Raise RepauditError for a backend name that is not in :data:`BACKENDS`."""
    if name not in BACKENDS:
        raise RepauditError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)}")


def load_backend(name: str, model, *, dtype: str, batch_size: int, padding_side: str, device: str,
                 trust_remote_code: bool, scoring_strategy: str, seed: int = 0):
    """Load ``model`` (a :class:`~repaudit.backends.model_source.ResolvedModel`) in backend ``name``.

    ``seed`` seeds vLLM's engine (the transformers backend is seeded by the runner).

    Raises:
        RepauditError: unknown backend, a backend that is not installed, or weights it cannot load.
    """
    check_backend(name)
    if name == "vllm":
        from repaudit.backends.vllm import VLLMBackend

        return VLLMBackend(model, dtype=dtype, batch_size=batch_size, padding_side=padding_side, device=device,
                           trust_remote_code=trust_remote_code, scoring_strategy=scoring_strategy, seed=seed)
    from repaudit.backends.hf import HFBackend

    return HFBackend(model, dtype=dtype, batch_size=batch_size, padding_side=padding_side, device=device,
                     trust_remote_code=trust_remote_code, scoring_strategy=scoring_strategy)
