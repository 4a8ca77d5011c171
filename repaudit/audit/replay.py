"""Runs to replay, and the hybrids between two of them — whatever harness wrote them: each harness's adapter
(:mod:`repaudit.importers.adapter`) rebuilds its runs' configurations; nothing here knows a file format.

A factor is *replayable* when this machine can set it: everything a RunConfig controls. The
machine, the library versions and weights that are not on disk are not; they are listed as such
and their effect ends up in the attribution's residual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.importers.adapter import Replay as ReplaySource
from repaudit.run.config import RunConfig, field_value

__all__ = ["ReplaySource", "differing_factors", "hybrid", "load_replay_source", "replay_values", "replayable",
           "serve_from"]


def replayable() -> dict[str, tuple[tuple[str, ...], Any]]:
    """Replayable factor -> (RunConfig fields it sets, reader of the values used from a fingerprint): a view of
    :mod:`repaudit.run.factors`."""
    from repaudit.run.factors import replayable as _replayable

    return {name: (f.fields, f.fingerprint) for name, f in _replayable().items()}


#: what this machine cannot set, with the words the report uses for it: vocabulary groups, or single paths of a
#: group that matter (a model *name* may differ while the weights are the same). ``data.limit`` is not among them:
#: every hybrid evaluates the docs both runs scored (:func:`repaudit.audit.attribution.attribution_configs`), so a
#: limit that differs moves no score the attribution compares
NOT_REPLAYABLE: dict[str, tuple[str, ...] | None] = {
    "hardware": None, "software": None,
    "model": ("model.weights_sha256", "model.num_parameters"),
    "tokenizer": ("tokenizer.sha256",), "data": ("data.task", "data.split", "data.content_sha256"),
    "server": ("server.kind", "server.version", "server.model_root")}
_WORDS = {"hardware": "hardware", "software": "library versions", "model": "model weights", "tokenizer": "tokenizer",
          "data": "data", "server": "the serving endpoint's server"}


def load_replay_source(path: Path, data_dir: Path | None, model: str | None = None,
                       cache_dir: Path | None = None, task_config: dict[str, Any] | None = None,
                       need_docs: bool = True) -> ReplaySource:
    """Read anything ``compare`` reads as a run to replay: its harness's adapter
    (:mod:`repaudit.importers.adapter`) rebuilds the configuration of its one task. ``task_config`` (from
    ``--task-config``) defines the task of an lm-eval run whose file records no configuration; ``need_docs=False``
    (a grid's ``--base``) accepts a run without per-doc results. The file is read once per process.

    Raises:
        RepauditError: unreadable or foreign file, more than one task, no per-doc results, or the real reason
            its task cannot be rebuilt (a lighteval prompt function or an inspect solver not rebuilt, …).
    """
    from repaudit.importers.detect import load_source

    loaded = load_source(Path(path))
    crun, path = loaded.run, loaded.path  # a directory resolves to its results file
    if len(crun.tasks) != 1:
        raise RepauditError(f"'{path}' holds {len(crun.tasks)} tasks ({', '.join(sorted(crun.tasks))}): "
                            "attribution needs runs of one task")
    task, outcome = next(iter(crun.tasks.items()))
    if not outcome.docs and need_docs:
        raise RepauditError(f"'{path}' has no per-doc results for {task}: run lm-eval with --log_samples")
    return loaded.adapter.replay(loaded, task, data_dir, model, cache_dir, task_config)


def serve_from(sources: list[ReplaySource], endpoints: list | None, allow_model_mismatch: bool = False,
               model: str | None = None) -> list[ReplaySource]:
    """The replay sources of served runs pointed at the endpoint they re-execute through: ``endpoints`` (the
    ``--base-url`` given: every configuration runs there; several are replicas of one deployment, the executor spreads
    configurations over them, so the first stands in the configuration), else the URL each run records. With
    ``allow_model_mismatch`` a run's recorded model id is replaced by the one model the endpoint serves (or
    ``model``); without it the backend refuses an endpoint that does not serve the recorded id.

    Raises:
        UsageError: endpoints given for runs that were not served; served runs recording different endpoints with
            none given (their hybrids need one).
    """
    from repaudit.errors import UsageError

    served = [s.config.serving.backend == "openai" for s in sources]
    if endpoints and not any(served):
        raise UsageError("--base-url re-executes served runs (--backend openai, lm-eval's local-completions, …); "
                         "these runs ran in-process")
    if not any(served):
        return sources
    if not endpoints:
        lacking = [s for s, on in zip(sources, served) if on and s.config.endpoint is None]
        if lacking:
            raise UsageError(f"'{lacking[0].path}' records no endpoint (its base URL): give --base-url")
        urls = {s.config.endpoint.base_url for s, on in zip(sources, served) if on and s.config.endpoint}
        if len(urls) > 1:
            raise UsageError(f"the runs record {len(urls)} endpoints ({', '.join(sorted(urls))}): every configuration "
                             "re-executes on one deployment; name it with --base-url")
    out = []
    for s, on in zip(sources, served):
        if on:
            update: dict[str, Any] = {}
            if endpoints:
                update["endpoint"] = endpoints[0]
            if allow_model_mismatch:
                update["model"] = model or "default"
            s.config = s.config.model_copy(update=update) if update else s.config
        out.append(s)
    return out


def replay_values(cfg: RunConfig, factor: str) -> tuple:
    """The RunConfig values that make up ``factor``, as compared between two runs (a recorded task
    configuration by its template part: its n-shot and metadata are other factors, or none)."""
    from repaudit.tasks.lmeval_config import NOT_TEMPLATE

    values = []
    for f in replayable()[factor][0]:
        v = field_value(cfg, f)
        if f == "task_config" and v is not None:
            v = {k: x for k, x in v.items() if k not in NOT_TEMPLATE}
        values.append(v)
    return tuple(values)


def differing_factors(a: ReplaySource, b: ReplaySource) -> tuple[list[str], list[str], list[str]]:
    """``(replayable factors that differ, non-replayable parts that differ, parts one run does not record)``."""
    from repaudit.audit.compare import diff_factors

    replay = [name for name in replayable() if replay_values(a.config, name) != replay_values(b.config, name)]
    rows = diff_factors(a.task, a.factors, b.factors)
    fixed, unknown = [], []
    served = "openai" in (a.config.serving.backend, b.config.serving.backend)
    for group, paths in NOT_REPLAYABLE.items():
        if group == "server" and not served:  # an in-process pair has no endpoint to differ in
            continue
        mine = [r for r in rows if r.group == group and (paths is None or r.path in paths)]
        status = {r.status for r in mine}
        # a fact neither run records (lm-eval records no weights hash) is not known to be the same
        absent = not mine if paths is None else any(p not in {r.path for r in mine} for p in paths)
        if "differs" in status:
            fixed.append(_WORDS[group])
        elif "unknown" in status or absent:
            unknown.append(_WORDS[group])
    return replay, fixed, unknown


def hybrid(cfg_a: RunConfig, cfg_b: RunConfig, factors: list[str], subset: frozenset[int]) -> RunConfig:
    """A's configuration with B's values for the factors whose indices are in ``subset``."""
    update = {}
    fields = replayable()
    for i in subset:
        for f in fields[factors[i]][0]:
            update[f] = field_value(cfg_b, f)
    # examples recorded per doc (a lighteval run's details) go with B's n-shot: without them a hybrid with B's
    # n-shot would draw other examples than B's
    if "num_fewshot" in update and (cfg_b.fewshot_from is not None or cfg_b.fewshot_by_doc is not None):
        update.update(fewshot_from=cfg_b.fewshot_from, fewshot_by_doc=cfg_b.fewshot_by_doc)
    elif "num_fewshot" in update and (cfg_a.fewshot_from is not None or cfg_a.fewshot_by_doc is not None):
        update.update(fewshot_from=None, fewshot_by_doc=None)
    return cfg_a.model_copy(update=update)
