"""Loaded backends kept across the runs of one process (an attribution grid, a sweep)."""

from __future__ import annotations

from typing import Any

from repaudit.backends.model_source import ResolvedModel
from repaudit.run.config import RunConfig


def load(resolved: ResolvedModel, cfg: RunConfig):
    """Load ``resolved`` in the backend, dtype and device of ``cfg``.

    Raises:
        RepauditError: unknown or missing backend, weights it cannot load.
    """
    from repaudit.backends import load_backend

    return load_backend(cfg.backend, resolved, dtype=cfg.dtype, batch_size=cfg.batch_size,
                        padding_side=cfg.padding_side, device=cfg.device, trust_remote_code=cfg.trust_remote_code,
                        scoring_strategy=cfg.scoring_strategy, seed=cfg.torch_seed)


class BackendPool:
    """Loaded backends, reused when backend, weights, dtype, device and remote-code setting match.

    Batch size, padding side and scoring strategy are set per run (:meth:`HFBackend.configure`), so
    a grid reloads the model once per dtype instead of once per configuration. At most two models
    stay loaded (grids are ordered by backend and dtype).
    """

    def __init__(self):
        self._loaded: dict[tuple, Any] = {}

    def get(self, resolved: ResolvedModel, cfg: RunConfig):
        """A backend for ``cfg``, loading it on first use."""
        key = (cfg.backend, resolved.path, resolved.weights_sha256, cfg.dtype, cfg.device, cfg.trust_remote_code)
        if key not in self._loaded:
            if len(self._loaded) >= 2:
                self._loaded.pop(next(iter(self._loaded)))
            self._loaded[key] = load(resolved, cfg)
        backend = self._loaded[key]
        backend.configure(cfg.batch_size, cfg.padding_side, cfg.scoring_strategy)
        return backend
