"""The Every Eval Ever adapter (:mod:`repaudit.importers.adapter`): an aggregate record with its sidecar, or a folder
of one run's records (EEE writes one record per task), for ``compare``, ``gate``, ``variance --base`` and
``export``'s round trip.

A record written by ``repaudit export`` rebuilds the run it came from exactly (:mod:`.payload`: a repaudit run file
with its digest checked, or another harness's run as compare read it); any other record is read for what EEE
carries (:mod:`.native`). Only a repaudit run file can be replayed from a record: nothing else EEE holds says how
the prompts were built, the few-shot examples drawn or the model served.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repaudit.errors import RepauditError
from repaudit.importers.adapter import Adapter, Loaded, Recognition, Replay, register

if TYPE_CHECKING:  # the reader's modules are imported when a record is read (start-up: issue 62)
    from repaudit.importers.comparable import ComparableRun
    from repaudit.run.records import RunRecord

@dataclass
class EeeParsed:
    """What a load of EEE records keeps for the replay and for a re-export.

    Attributes:
        records: the aggregate files read, in path order.
        kind: ``run`` (a repaudit run file rebuilt), ``comparable`` (another harness's run rebuilt) or ``native``
            (a record of any other converter).
        record: kind ``run``: the rebuilt run file; raw: its JSON as the original file held it.
    """

    records: list[Path]
    kind: str
    record: RunRecord | None = None
    raw: dict[str, Any] | None = None
    sources: list[str] = field(default_factory=list)


@register
class EeeAdapter(Adapter):
    """Every Eval Ever records (``schema_version``, ``evaluation_id``, ``model_info``, ``evaluation_results``) of
    schema 0.3.0 with their ``<uuid>_samples.jsonl`` sidecars, and of schemas 0.1.x/0.2.x (sidecars, inline rows);
    a folder of one run's records."""

    name = "eee"
    harness = "Every Eval Ever"
    files = "Every Eval Ever records or folders of them"
    replays = "Every Eval Ever records that repaudit export wrote"
    folder_runs = True
    map_name = "eee"

    @classmethod
    def sources(cls) -> tuple[str, ...]:
        from repaudit.importers.eee.native import SOURCES

        return SOURCES

    def recognise(self, obj: Any) -> Recognition:
        from repaudit.importers.eee.files import is_aggregate, is_row  # the last adapter asked: rarely reached

        if is_aggregate(obj):
            return Recognition(True)
        if is_row(obj):
            return Recognition(False, "one Every Eval Ever sidecar row, not an aggregate record: pass the "
                                      "<uuid>.json beside its <uuid>_samples.jsonl, or their folder")
        return Recognition(False)

    def load(self, path: Path, obj: Any, samples: list[Path] | None = None, tokenizer: Any = None) -> Loaded:
        from repaudit.boundary import InputError
        from repaudit.importers.eee.files import folder_records, read_record

        path = Path(path)
        if samples:
            raise InputError(path, None, "is an Every Eval Ever record, whose record names its own sidecar: drop "
                                         "--samples")
        paths = folder_records(path) if path.is_dir() else [path]
        records = [read_record(p, obj if p == path else None) for p in paths]
        run, parsed = assemble(records, path)
        return Loaded(run=run, parsed=parsed, adapter=self, path=path)

    def replay(self, loaded: Loaded, task: str, data_dir: Path | None, model: str | None, cache_dir: Path | None,
               task_config: dict[str, Any] | None = None) -> Replay:
        from repaudit.importers.runfile import config_from_record

        parsed: EeeParsed = loaded.parsed
        if parsed.record is None:
            what = ("another harness's run exported by repaudit: replay the original file" if parsed.kind ==
                    "comparable" else "a record of another converter: EEE does not record the prompt format, "
                    "few-shot examples, batching or seeds a replay needs")
            raise RepauditError(f"'{loaded.path}' cannot be replayed: it is {what}")
        cfg = config_from_record(parsed.record, data_dir, model, cache_dir)
        outcome = loaded.run.tasks[task]
        return Replay(path=loaded.path, source=loaded.run.source, task=task, config=cfg,
                      factors=loaded.run.factors[task], docs=outcome.docs or {})


def assemble(records: list[Any], origin: Path) -> tuple[ComparableRun, EeeParsed]:
    """One run of one or more records (:class:`~repaudit.importers.eee.files.Record` of 0.3.0,
    :class:`~repaudit.importers.eee.legacy.LegacyRecord` of 0.1.x/0.2.x): they must be one run's (repaudit
    exports: the same ``repaudit.run_sha256``; other records: the same model and library, or source), each task
    once. Another converter's per-doc rows whose mean is not its reported score are a warning of the run.

    Raises:
        InputError: no record, records of several runs, a task twice, or a record that fails its checks.
        RepauditError: a repaudit export's per-doc means that differ from its reported scores.
    """
    from repaudit.boundary import InputError
    from repaudit.importers.comparable import ComparableRun, TaskOutcome
    from repaudit.importers.eee import legacy_record, native, payload
    from repaudit.importers.eee.legacy import LegacyRecord, library_label, source_line
    from repaudit.vocabulary import Recorded

    if not records:
        raise InputError(origin, None, "holds no Every Eval Ever record")
    factors: dict[str, Recorded] = {}
    tasks: dict[str, TaskOutcome] = {}
    runs: dict[str, str] = {}
    notes: list[str] = []
    parsed = EeeParsed(records=[r.path for r in records], kind="native")
    warnings: list[str] = []
    for rec in records:
        if isinstance(rec, LegacyRecord):
            runs.setdefault(f"{rec.agg.model_info.id}\0{source_line(rec.agg)}", rec.path.name)
            fs, outs, warned = legacy_record.tasks(rec)
            got = {t: (fs[t], outs[t]) for t in outs}
            notes += [n for n in rec.notes if n not in notes]
            warnings += warned
            parsed.sources.append(source_line(rec.agg))
        elif payload.is_export(rec):
            piece = payload.rebuild(rec)
            runs.setdefault(piece.run_sha, rec.path.name)
            parsed.kind = "run" if piece.record is not None else "comparable"
            parsed.record, parsed.raw = piece.record, piece.raw
            got = {piece.task: (piece.factors, piece.outcome)}
            notes += [n for n in piece.notes if n not in notes]
            parsed.sources.append(piece.source)
        else:
            agg = rec.agg
            runs.setdefault(f"{agg.model_info.id}\0{agg.eval_library.name}\0{agg.eval_library.version}", rec.path.name)
            fs, outs, warned = native.tasks(rec)
            got = {t: (fs[t], outs[t]) for t in outs}
            warnings += warned
            parsed.sources.append(f"EEE {agg.schema_version}: "
                                  + library_label(agg.eval_library.name, agg.eval_library.version))
        for task, (f, o) in got.items():
            if task in tasks:
                raise InputError(origin, None, f"holds two records of task '{task[:60]}' ({rec.path.name} and "
                                               "another): pass one record, or a folder of one run's records")
            factors[task], tasks[task] = f, o
    if len(runs) > 1 or len(set(parsed.sources)) > 1:
        raise InputError(origin, None, f"holds the records of {max(len(runs), len(set(parsed.sources)))} runs (e.g. "
                                       f"{', '.join(sorted(runs.values())[:3])}): pass one record, or a folder of one "
                                       "run's records")
    return ComparableRun(path=str(origin), source=parsed.sources[0], factors=factors, tasks=tasks,
                         notes=notes, warnings=warnings, timestamp=_timestamp(records)), parsed


def _timestamp(records: list[Any]) -> str | None:
    """The run's time its records state (``evaluation_timestamp``, the first that has one), else ``None``."""
    return next((t for r in records if isinstance(t := getattr(getattr(r, "agg", None), "evaluation_timestamp",
                                                                None), str) and t), None)
