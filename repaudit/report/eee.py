"""``repaudit export --format eee``: runs as Every Eval Ever 0.3.0 records, in EEE's layout, repeatable byte for
byte, validated against the vendored schemas before anything is written (``docs/eee.md`` has the field map).

Every run ``compare`` reads (a repaudit run file, lm-eval results with their samples, lighteval, inspect_ai, an
EEE record) becomes one aggregate record per task, ``OUT/data/<task>/<developer>/<model>/<uuid>.json``, and a
sidecar ``<uuid>_samples.jsonl`` of its per-doc results (:mod:`repaudit.report.eee_rows`), its checksum and row
count in the record. EEE's native fields get what they can hold; everything else goes under ``repaudit.`` keys
(:mod:`repaudit.importers.eee.schema`): a repaudit run's whole run file and its digest, another harness's factors
and outcomes as compare read them — so that the EEE adapter rebuilds the run exactly.

Repeatable: the uuid is sha256(run, task) shaped as a version-4 uuid (EEE's datastore path pattern requires
version 4), no clock is read (``retrieved_timestamp`` is the run's own time where its file records one, else
"0"), keys are sorted. Nothing is written unless every record and row validates; files are written to a
temporary folder inside ``OUT`` and renamed into place.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from repaudit.errors import OutputError, RepauditError, UsageError
from repaudit.hashing import sha256_text
from repaudit.importers.adapter import Loaded
from repaudit.importers.comparable import DocOutcome
from repaudit.importers.eee.schema import dumps
from repaudit.report.eee_records import ExportOptions, Source, outcome_payload, run_files
from repaudit.run.records import RunRecord

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


def check_options(opts: ExportOptions, out_dir: Path) -> None:
    """The options and the output folder, before any run is read.

    Raises:
        UsageError: no or an unknown evaluator relationship, no organisation, a malformed model id.
        OutputError: ``out_dir`` is a file, or neither it nor its parent is a folder.
    """
    if opts.relationship is None:
        raise UsageError("export needs --evaluator-relationship (first_party, third_party, collaborative or other): "
                         "EEE records who ran the evaluation relative to the model's developer")
    if opts.relationship not in RELATIONSHIPS:
        raise UsageError(f"--evaluator-relationship must be one of {', '.join(RELATIONSHIPS)}, got "
                         f"'{opts.relationship}'")
    if opts.organization is None or not opts.organization.strip():
        raise UsageError("export needs --organization: EEE's source_metadata.source_organization_name, who provides "
                         "the records (a person, a team or an organisation)")
    if opts.model_id is not None and (not opts.model_id.strip() or any(not p for p in opts.model_id.split("/"))):
        raise UsageError(f"--model-id '{opts.model_id}' is not a model id (org/name)")
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"output '{out_dir}' is a file: give the folder to export into")
    if not out_dir.exists() and not out_dir.parent.is_dir():
        raise OutputError(f"output '{out_dir}' cannot be created: folder '{out_dir.parent}' does not exist")


def export(paths: list[Path], out_dir: Path, opts: ExportOptions) -> tuple[list[Path], list[str]]:
    """Export runs as EEE records under ``out_dir``; ``(the files written, notes)``.

    Raises:
        UsageError / OutputError: as :func:`check_options`.
        InputError / RepauditError: a run that cannot be read, a model id that cannot be told, a record that fails
            EEE's schema, a file already there with other bytes. Nothing is written then.
    """
    from repaudit.importers.detect import load_source

    check_options(opts, out_dir)
    files: dict[str, bytes] = {}
    notes: list[str] = []
    for path in paths:
        src = prepare(load_source(Path(path)), opts)
        if src.prompt_note:
            notes.append(f"{path}: {src.prompt_note}")
        for rel, data in run_files(src, opts, notes):
            if files.get(rel, data) != data:
                raise RepauditError(f"two runs export to '{rel}' with different content: export them apart")
            files[rel] = data
    return write(out_dir, files), notes


def prepare(loaded: Loaded, opts: ExportOptions) -> Source:
    """The payload of a run: a repaudit run file's JSON (read again through the boundary, so that a schema-2 file
    keeps the bytes its digest was made from) or every task's outcome as compare read it."""
    from repaudit.boundary import read_json

    parsed = loaded.parsed
    record = parsed if isinstance(parsed, RunRecord) else getattr(parsed, "record", None)
    if record is not None:
        raw = getattr(parsed, "raw", None) or read_json(loaded.path, what="run file")
        src = Source(loaded, "run", sha256_text(dumps(raw)), record=record, raw=raw)
        task = record.fingerprint.data.task
        src.payloads[task] = list(raw["docs"])
        src.prompts[task], src.prompt_note = _rebuilt_prompts(record, opts)
        return src
    run = loaded.run
    src = Source(loaded, "comparable", "")
    for task, outcome in run.tasks.items():
        src.payloads[task] = [{f.name: getattr(d, f.name) for f in fields(DocOutcome)}
                              for d in (outcome.docs or {}).values()]
        src.prompts[task] = {d.doc_id: d.prompt for d in (outcome.docs or {}).values()
                             if d.prompt is not None and _checked(d)}
    factors = {t: {p: v.model_dump(mode="json", exclude_defaults=True) for p, v in rec.items()}
               for t, rec in run.factors.items()}
    src.run_sha = sha256_text(dumps({"source": run.source, "notes": run.notes, "factors": factors,
                                     "outcomes": {t: outcome_payload(run, t) for t in run.tasks},
                                     "docs": src.payloads}))
    return src


def _checked(d: DocOutcome) -> bool:
    """A prompt text is shown only where it hashes to the recorded ``prompt_hash`` (or none is recorded)."""
    return d.prompt is not None and (d.prompt_hash is None or sha256_text(d.prompt) == d.prompt_hash)


def _rebuilt_prompts(record: RunRecord, opts: ExportOptions) -> tuple[dict[int, str], str]:
    """A repaudit run's prompts, rebuilt from its fingerprint and the data and kept where their sha256 is the
    recorded ``prompt_hash`` (:func:`repaudit.audit.doctext.rebuild_prompts`)."""
    from repaudit.audit.doctext import rebuild_prompts

    got = rebuild_prompts(record, opts.data_dir)
    hint = got.note and opts.data_dir is None and "--data-dir" not in got.note
    return got.texts, got.note + ("; pass --data-dir" if hint else "")


def write(out_dir: Path, files: dict[str, bytes]) -> list[Path]:
    """Every file under ``out_dir``: written into a temporary folder there, then renamed into place; a file already
    there must hold the same bytes (:func:`repaudit.outputs.write_folder`).

    Raises:
        UsageError: a file's path names a directory, a link, a device or a FIFO (nothing written).
        OutputError: a file there with other bytes (nothing written), or the folder cannot be written.
    """
    from repaudit.outputs import write_folder

    return write_folder(out_dir, files)
