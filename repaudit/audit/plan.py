"""``--dry-run``: what a grid would cost before it runs.

For every configuration of an attribution or a sweep: its requests are rendered and planned into
the batches the backend would run (the same batches and store keys as a real run), the batches
already in the store are counted, and the tokens still to compute are summed. The time estimate
divides those tokens by this machine's measured scoring throughput for the same weights, dtype,
device and scoring strategy (pooled over every past run that computed something, kept in the
batch store); when nothing was measured yet, a few of the first configuration's requests are
scored now, uncached, to measure it. No other forward pass runs.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict
from rich.console import Console

from repaudit.run.config import RunConfig

#: requests scored to measure throughput when the store has no measurement yet
_CALIBRATION_REQUESTS = 16


class ConfigCost(BaseModel):
    """One configuration's cost (with ``--precision``: summed over its rounds)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    label: str
    """The configuration's label in the grid (``A + dtype``, ``mmlu seed=1235``)."""
    docs: int
    """Docs it evaluates."""
    requests: int
    """Requests the backend answers (a log-likelihood request per choice, or one generation per doc)."""
    batches: int | None
    """Batches the backend would run; None where it cannot plan without running (vLLM, generate_until)."""
    batches_stored: int | None
    """Of them, batches already in the batch store; None as for ``batches``."""
    tokens_to_compute: int | None
    """Token positions still to run through the model (batches not stored); None as for ``batches``."""
    estimate_s: float | None
    """Estimated seconds: ``tokens_to_compute`` over the measured throughput; None where either is unknown."""


class DryRun(BaseModel):
    """The plan of a grid (JSON-ready): per configuration and in total, with the throughput used."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    command: str
    """The command line planned (``attribute a.json b.json``, ``sweep --factor … --values …``)."""
    configurations: list[ConfigCost]
    """Every configuration's cost, in grid order."""
    tokens_per_s: float | None
    """The scoring throughput used (tokens per second; the mean where several backends were measured); None: not
    measured."""
    throughput_source: str
    """Where it came from: earlier runs in this batch store, a measurement now, or ``not measured``."""
    rounds_note: str = ""
    """With ``--precision``: that each configuration runs in rounds and may stop early; empty otherwise."""

    @property
    def stored(self) -> int:
        """Configurations whose every batch is already in the store (no forward pass needed)."""
        return sum(c.batches is not None and c.batches == c.batches_stored for c in self.configurations)

    @property
    def tokens(self) -> int:
        return sum(c.tokens_to_compute or 0 for c in self.configurations)

    @property
    def estimate_s(self) -> float | None:
        known = [c.estimate_s for c in self.configurations if c.estimate_s is not None]
        return sum(known) if known else None


def _calibrate(backend, requests, err: Console) -> float | None:
    """Tokens/s of scoring a few requests now (uncached); None when nothing was computed."""
    backend.configure(backend.serving)  # reset counters
    t = time.perf_counter()
    backend.loglikelihood(requests[:_CALIBRATION_REQUESTS], None)
    s = time.perf_counter() - t
    return backend.tokens_computed / s if backend.tokens_computed and s > 0 else None


def _config_cost(label: str, parts: list[RunConfig], pool, speeds: dict, err: Console,
                 calibrate: bool = True) -> tuple[ConfigCost, bool]:
    """One configuration's cost over its runs (whole or rounds), and whether it measured a throughput now
    (``calibrate``: where the store holds no measurement yet)."""
    from repaudit.backends.model_source import resolve_for
    from repaudit.backends.store import open_store
    from repaudit.run.docs import load_docs
    from repaudit.run.runner import check_config, default_cache_dir, generation_settings, render_requests
    from repaudit.tasks.base import OutputType

    docs = requests_n = n = stored = tokens = 0
    plannable, measured = True, False
    for cfg in parts:
        task = check_config(cfg)
        cache_dir = cfg.cache_dir or default_cache_dir()
        resolved = resolve_for(cfg.serving.backend, cfg.model, cfg.revision, cache_dir)
        docset = load_docs(task, cfg, err)
        backend = pool.get(resolved, cfg)  # configured for cfg, BOS included
        rendered = render_requests(task, cfg, docset, backend,
                                   generation_settings(task, cfg, backend.info.eos_token))
        requests = [r for rd in rendered for r in rd.all_requests]
        docs, requests_n = docs + len(docset.docs), requests_n + len(requests)
        store = open_store(cache_dir) if cfg.use_batch_cache else None
        try:
            cost = None if task.output_type is OutputType.generate_until else backend.plan_cost(requests, store)
            if cost is None:
                plannable = False
                continue
            b, s, t = cost
            n, stored, tokens = n + b, stored + s, tokens + t
            key = backend.speed_key()
            if key not in speeds:
                speeds[key] = store.tokens_per_s(key) if store is not None else None
                if speeds[key] is None and t and calibrate:
                    speeds[key] = _calibrate(backend, requests, err)
                    measured = True
        finally:
            if store is not None:
                store.close()
    if not plannable:
        return ConfigCost(label=label, docs=docs, requests=requests_n, batches=None, batches_stored=None,
                          tokens_to_compute=None, estimate_s=None), measured
    rate = speeds[key]
    return ConfigCost(label=label, docs=docs, requests=requests_n, batches=n, batches_stored=stored,
                      tokens_to_compute=tokens, estimate_s=None if rate is None else tokens / rate), measured


def grid_work(cfgs: list[RunConfig], pool) -> tuple[list[float | None], list[int], float | None]:
    """What a grid about to run still has to compute, for its progress (:class:`repaudit.run.progress.WorkMeter`):
    each configuration's tokens to compute (``None`` where they cannot be planned), its docs, and the throughput the
    batch store measured (tokens/s; None: not measured — nothing is scored to measure it). ``pool``: the executor's
    loaded models, which the runs then reuse.

    Raises:
        RepauditError: a configuration that would fail (as the run would).
    """
    quiet = Console(stderr=True, quiet=True)
    speeds: dict = {}
    costs = [_config_cost(str(i), [cfg], pool, speeds, quiet, calibrate=False)[0] for i, cfg in enumerate(cfgs)]
    rates = [r for r in speeds.values() if r]
    return ([None if c.tokens_to_compute is None else float(c.tokens_to_compute) for c in costs],
            [c.docs for c in costs], sum(rates) / len(rates) if rates else None)


def plan_grid(command: str, configs: list[tuple[str, RunConfig]], err: Console | None = None,
              rounds: list[list[int]] | None = None) -> DryRun:
    """Plan ``configs`` (label, configuration) without running them.

    With ``rounds`` (the doc ids of each round of ``--precision``), each configuration is planned as
    the runs of its rounds, whose batches are the ones the doc-adaptive audit stores; the totals are
    those of every round (the audit may stop earlier).

    Raises:
        RepauditError: a configuration that would fail (checked as a run checks it).
    """
    from repaudit.run.pool import BackendPool

    err = err or Console(stderr=True, quiet=True)
    pool = BackendPool()
    costs: list[ConfigCost] = []
    speeds: dict[str, float | None] = {}
    source = "measured by earlier runs in this batch store"
    for label, whole in configs:
        parts = [whole] if rounds is None else [whole.model_copy(update={"doc_ids": c}) for c in rounds]
        cost, measured = _config_cost(label, parts, pool, speeds, err)
        costs.append(cost)
        if measured:
            source = f"measured now on {_CALIBRATION_REQUESTS} requests (nothing stored yet)"
    rates = [r for r in speeds.values() if r]
    note = "" if rounds is None else (f"With --precision each configuration runs in {len(rounds)} rounds (counted "
                                      "above, batches of finished rounds are in the store); it may stop before "
                                      "the last.")
    return DryRun(command=command, configurations=costs, tokens_per_s=rates[0] if len(rates) == 1 else (
        sum(rates) / len(rates) if rates else None), throughput_source=source if rates else "not measured",
        rounds_note=note)
