"""Loaded backends kept across the runs of one process (an attribution grid, a sweep)."""

from __future__ import annotations

from typing import Any

from repaudit.backends.model_source import ResolvedModel
from repaudit.run.config import RunConfig


def configure(backend, cfg: RunConfig):
    """The one path per-run settings reach a loaded backend: batch size, padding, scoring strategy, BOS."""
    backend.configure(cfg.serving)
    return backend


def load(resolved: ResolvedModel, cfg: RunConfig):
    """Load ``resolved`` in the backend, dtype, device and serving settings of ``cfg``, configured for it.

    Raises:
        RepauditError: unknown or missing backend, weights it cannot load.
    """
    from repaudit.backends import load_backend

    return configure(load_backend(cfg.serving, resolved, trust_remote_code=cfg.trust_remote_code,
                                  seed=cfg.seeds.torch_seed, endpoint=cfg.endpoint), cfg)


class BackendPool:
    """Loaded backends, reused when backend, weights, dtype, device and remote-code setting match (a served model:
    the endpoint and model).

    Batch size, padding side, scoring strategy and BOS are set per run (:func:`configure`), so
    a grid reloads the model once per dtype instead of once per configuration. At most two models
    stay loaded (grids are ordered by backend and dtype).
    """

    def __init__(self):
        self._loaded: dict[tuple, Any] = {}

    def get(self, resolved: ResolvedModel, cfg: RunConfig):
        """A backend for ``cfg``, loading it on first use."""
        s = cfg.serving
        key = (s.backend, resolved.name, resolved.path, resolved.weights_sha256, s.dtype, s.device,
               cfg.trust_remote_code, tuple(sorted(s.load_options().items())), cfg.endpoint)
        if key not in self._loaded:
            if len(self._loaded) >= 2:
                self._loaded.pop(next(iter(self._loaded)))
            self._loaded[key] = load(resolved, cfg)
        return configure(self._loaded[key], cfg)
