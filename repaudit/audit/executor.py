"""Where the configurations of a grid run: in this process (``local``) or as Ray tasks (``ray``).

Both executors return the same :class:`~repaudit.records.RunRecord` for the same configuration:
a Ray task runs :func:`repaudit.runner.run` in a worker process, and every batch it computes is
shipped back and stored in the driver's batch store, so reports, resume and a later local re-run
all read the same cache. A Ray worker reads the driver's store directly when the file is reachable
from it (a local cluster, a shared file system) and otherwise starts from an empty private one.

Each configuration is one Ray task holding ``cpus_per_task`` CPUs (torch uses that many threads);
workers keep their loaded models between tasks (:class:`~repaudit.runner.BackendPool`). On a
remote cluster, repaudit, the model and the data must be installed at the same paths on the
workers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console

from repaudit.errors import RepauditError
from repaudit.run.records import Placement, RunRecord
from repaudit.run.runner import BackendPool, RunConfig, default_cache_dir, run

#: executor names accepted by ``--executor``
EXECUTORS = ("local", "ray")
#: ``progress(done, total)`` after each finished configuration, and inside one its share of docs done (``done`` then
#: a fraction: 2.5 is half of the third configuration)
GridProgress = Callable[[float, int], None]

_QUIET = Console(stderr=True, quiet=True)


class Executor(Protocol):
    """Runs a list of configurations and returns their records in the same order."""

    name: str

    def map(self, cfgs: list[RunConfig], progress: GridProgress | None = None) -> list[RunRecord]:
        """One RunRecord per configuration, in order. Raises RepauditError on bad input."""
        ...


class LocalExecutor:
    """Configurations one after another in this process, sharing loaded models.

    Inside a grid's :func:`~repaudit.run.progress.grid_meter` (every command's grid), each batch of configurations is
    planned first (the tokens each still has to compute, as ``--dry-run`` plans them) and progress is reported
    inside a configuration too: ``progress(i − 1 + share of its docs done, total)``, and the meter hears the same.
    """

    name = "local"

    def __init__(self, run_fn: Callable[[RunConfig], RunRecord] | None = None):
        self._pool = BackendPool()
        self._on_docs: Callable[[float, int], None] | None = None
        self._run_fn = run_fn or (lambda cfg: run(cfg, _QUIET, backends=self._pool, on_docs=self._on_docs))

    def map(self, cfgs: list[RunConfig], progress: GridProgress | None = None) -> list[RunRecord]:
        """See :class:`Executor`."""
        from repaudit.run.progress import GRID_METER

        meter = GRID_METER.get()
        if meter is not None and cfgs:
            from repaudit.audit.plan import grid_work

            meter.plan(*grid_work(cfgs, self._pool))
        out = []
        for i, cfg in enumerate(cfgs, 1):
            if meter is not None:
                meter.start()
                self._on_docs = self._inside(meter, progress, i, len(cfgs))
            try:
                out.append(self._run_fn(cfg))
            finally:
                self._on_docs = None
            if meter is not None:
                meter.finish()
            if progress:
                progress(i, len(cfgs))
        return out

    @staticmethod
    def _inside(meter, progress: GridProgress | None, i: int, n: int) -> Callable[[float, int], None]:
        """The callback of configuration ``i`` of ``n``: the share of its docs done, to the meter and the grid."""
        def on_docs(done: float, total: int) -> None:
            share = done / total if total else 1.0
            meter.share(share)
            if progress:
                progress(i - 1 + min(share, 0.999), n)  # whole only when the configuration is done
        return on_docs


def as_executor(obj) -> Executor:
    """``obj`` if it is an executor, else a :class:`LocalExecutor` around the function ``obj``."""
    return obj if hasattr(obj, "map") else LocalExecutor(obj)


# ------------------------------------------------------------------------ Ray
_WORKER_POOL: BackendPool | None = None


def _ray_task(cfg_json: str, store: str, threads: int) -> tuple[str, list]:
    """Body of one Ray task: run one configuration, return (record JSON, new batches)."""
    import torch

    from repaudit.backends.store import RecordingCache

    global _WORKER_POOL
    torch.set_num_threads(threads)
    if _WORKER_POOL is None:
        _WORKER_POOL = BackendPool()
    cfg = RunConfig.model_validate_json(cfg_json)
    path = Path(store)
    cache = RecordingCache(path if path.parent.is_dir() else None) if cfg.use_batch_cache else None
    try:
        rec = run(cfg, _QUIET, backends=_WORKER_POOL, cache=cache)
    finally:
        if cache is not None:
            cache.close()
    import ray

    node = ray.get_runtime_context().get_node_id()
    rec = rec.model_copy(update={"placement": Placement(executor="ray", ray_node=node)})
    return rec.model_dump_json(), (cache.new if cache is not None else [])


class RayExecutor:
    """Each configuration is a Ray task; see the module docstring.

    Args:
        address: a running cluster (``ray://host:10001`` or ``auto``); ``None`` starts a local one.
        workers: CPUs of the local cluster started here (default: all of this machine's).
        cpus_per_task: CPUs (and torch threads) per configuration.

    Raises:
        RepauditError: Ray is not installed, or the cluster cannot be reached.
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, cpus_per_task: int = 1):
        try:
            import ray
        except ImportError:
            raise RepauditError("--executor ray needs Ray: pip install 'ray>=2.9' (installed by make test)") from None
        if cpus_per_task < 1:
            raise RepauditError(f"--cpus-per-task must be at least 1, got {cpus_per_task}")
        self.ray = ray
        self.cpus_per_task = cpus_per_task
        if not ray.is_initialized():
            # Ray starts workers at niceness 15 so that they yield to its own daemons; here the
            # workers *are* the job, and at 15 any other process on the machine starves them
            # (measured: `import torch` 43 s instead of 2.7 s beside one busy process).
            local: dict[str, Any] = ({"num_cpus": workers, "_system_config": {"worker_niceness": 0}}
                                     if address is None else {})
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False,
                         **local)
            except Exception as exc:
                where = address or "a local cluster"
                raise RepauditError(f"could not start or reach Ray at {where} ({str(exc).splitlines()[0]})") from None
        self._remote = ray.remote(num_cpus=cpus_per_task, max_retries=0)(_ray_task)

    def map(self, cfgs: list[RunConfig], progress: GridProgress | None = None) -> list[RunRecord]:
        """See :class:`Executor`. New batches are stored in the driver's store as tasks finish."""
        from repaudit.backends.store import BatchCache

        ray = self.ray
        stores: dict[Path, BatchCache] = {}
        refs = {}
        for i, cfg in enumerate(cfgs):
            # Resolve the cache here so that workers use the driver's model cache and store.
            cache_dir = cfg.cache_dir or default_cache_dir()
            cfg = cfg.model_copy(update={"cache_dir": cache_dir})
            store = cache_dir / "batches.sqlite"
            refs[self._remote.remote(cfg.model_dump_json(), str(store), self.cpus_per_task)] = (i, store)
        out: list[RunRecord | None] = [None] * len(cfgs)
        pending, done_n = list(refs), 0
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    i, store = refs[ref]
                    try:
                        rec_json, new = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = getattr(exc, "cause", None)
                        if isinstance(cause, RepauditError):
                            raise RepauditError(str(cause)) from None
                        raise RepauditError(f"a Ray task failed: {str(cause or exc).splitlines()[0]}") from None
                    if new:
                        if store not in stores:
                            stores[store] = BatchCache(store)
                        for ckey, bkey, payload in new:
                            stores[store].put(ckey, bkey, payload)
                    out[i] = RunRecord.model_validate_json(rec_json)
                    done_n += 1
                    if progress:
                        progress(done_n, len(cfgs))
        finally:
            for ref in pending:
                ray.cancel(ref)
            for db in stores.values():
                db.close()
        return out  # type: ignore[return-value]


class ReplicaExecutor:
    """Configurations of served runs spread over the replicas of one deployment: one worker thread per endpoint takes
    the next configuration, points it at its endpoint and runs it (each endpoint keeps its own ``max_concurrency``
    requests in flight); a configuration that is not served runs on the first worker as is. Each record's
    :attr:`~repaudit.run.records.RunRecord.placement` names the endpoint (its fingerprint's server facts record it
    too).

    Args:
        endpoints: the replicas (:class:`~repaudit.backends.endpoint.EndpointSettings`), at least one.
        ray: a :class:`RayExecutor` to run each configuration on instead of this process (its node recorded).
    """

    name = "replicas"

    def __init__(self, endpoints: list, ray: RayExecutor | None = None):
        if not endpoints:
            raise RepauditError("replicas need at least one --base-url")
        self.endpoints = list(endpoints)
        self.ray = ray

    def map(self, cfgs: list[RunConfig], progress: GridProgress | None = None) -> list[RunRecord]:
        """See :class:`Executor`; the first failure stops the others after their running configuration."""
        import queue
        import threading

        from repaudit.backends.endpoint import redact_url

        todo: queue.Queue = queue.Queue()
        for i, cfg in enumerate(cfgs):
            todo.put((i, cfg))
        out: list[RunRecord | None] = [None] * len(cfgs)
        failures: list[BaseException] = []
        lock, done = threading.Lock(), [0]

        def worker(ep) -> None:
            pool = BackendPool()
            while not failures:
                try:
                    i, cfg = todo.get_nowait()
                except queue.Empty:
                    return
                if cfg.serving.backend == "openai":
                    cfg = cfg.model_copy(update={"endpoint": ep})
                try:
                    rec = (self.ray.map([cfg])[0] if self.ray is not None else run(cfg, _QUIET, backends=pool))
                except BaseException as exc:  # handed to the caller's thread, which raises it
                    failures.append(exc)
                    return
                where = redact_url(ep.base_url) if cfg.serving.backend == "openai" else None
                rec = rec.model_copy(update={"placement": Placement(
                    executor="ray" if self.ray is not None else "local", endpoint=where,
                    ray_node=rec.placement.ray_node if rec.placement is not None else None)})
                with lock:
                    out[i] = rec
                    done[0] += 1
                    if progress:
                        progress(done[0], len(cfgs))

        threads = [threading.Thread(target=worker, args=(ep,), daemon=True, name=f"repaudit-replica-{k}")
                   for k, ep in enumerate(self.endpoints)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # a timed join lets Ctrl-C reach this thread
                t.join(timeout=0.5)
        if failures:
            raise failures[0]
        return out  # type: ignore[return-value]


def make_executor(name: str, ray_address: str | None = None, workers: int | None = None,
                  cpus_per_task: int = 1, endpoints: list | None = None) -> Executor:
    """The executor called ``name`` (:data:`EXECUTORS`); over the replicas ``endpoints`` where more than one is given
    (each configuration then runs locally or as a Ray task, as ``name`` says).

    Raises:
        RepauditError: an unknown name, or Ray unavailable for ``ray``.
    """
    if name not in EXECUTORS:
        raise RepauditError(f"unknown executor '{name}': choose one of {', '.join(EXECUTORS)}")
    ray = RayExecutor(ray_address, workers, cpus_per_task) if name == "ray" else None
    if endpoints and len(endpoints) > 1:
        return ReplicaExecutor(endpoints, ray)
    return ray if ray is not None else LocalExecutor()
