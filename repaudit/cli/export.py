"""``repaudit export``: runs as Every Eval Ever records (:mod:`repaudit.report.eee`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from repaudit.cli.common import err, out, user_errors
from repaudit.cli.groups import StatOptions, grouped
from repaudit.escape import rich_text
from repaudit.importers.detect import run_files


class ExportFormat(str, Enum):
    """Export formats."""

    eee = "eee"


class Relationship(str, Enum):
    """EEE's ``evaluator_relationship``: who ran the evaluation relative to the model's developer."""

    first_party = "first_party"
    third_party = "third_party"
    collaborative = "collaborative"
    other = "other"


@dataclass
class RecordOptions:
    """What EEE requires that a run cannot know: who ran it, the model's id and developer, who provides it."""

    relationship: Annotated[Optional[Relationship], typer.Option(
        "--evaluator-relationship", help="Required by EEE: who ran the evaluation relative to the model's "
                                         "developer.", show_default=False)] = None
    model_id: Annotated[Optional[str], typer.Option("--model-id", help="model_info.id as org/name (default: the "
                                                                       "run's model where it is a hub id).",
                                                    show_default=False)] = None
    developer: Annotated[Optional[str], typer.Option(help="model_info.developer (default: the id's org).",
                                                     show_default=False)] = None
    organization: Annotated[Optional[str], typer.Option(
        help="Required by EEE: source_organization_name, who provides the records (a person, team or organisation).",
        show_default=False)] = None


@grouped
def export_command(
    runs: Annotated[list[Path], typer.Argument(help=f"Runs: anything compare reads ({run_files()}).",
                                               show_default=False, readable=False)],
    output: Annotated[Path, typer.Option("-o", "--output", help="The datastore folder: records go under "
                                                                "OUTPUT/data/<task>/<developer>/<model>/ (created "
                                                                "if missing; its parent must exist).",
                                         show_default=False)],
    record: RecordOptions,
    stats: StatOptions,
    fmt: Annotated[ExportFormat, typer.Option("--format", help="eee: Every Eval Ever schema 0.3.0.")
                   ] = ExportFormat.eee,
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data as run --data-dir reads it, to rebuild "
                                                          "a repaudit run's prompts.", show_default=False)] = None,
) -> None:
    """Export runs as Every Eval Ever (EEE) 0.3.0 records: one aggregate record per task and a sidecar of its
    per-doc results, in EEE's layout, every fingerprint field under repaudit. keys (docs/eee.md), validated
    against EEE's schemas before anything is written. The same run gives the same bytes; compare, gate and
    variance read the records back as the run.

    Example: repaudit export tests/fixtures/lmeval_config/openbookqa_0shot --model-id
    HuggingFaceTB/SmolLM2-135M-Instruct --evaluator-relationship third_party --organization "My Lab" -o eee/

    Example: repaudit compare tests/fixtures/lmeval_config/openbookqa_0shot eee/
    """
    from repaudit.report.eee import ExportOptions, export

    rec = record
    with user_errors():
        stat = stats.settings()
        opts = ExportOptions(relationship=rec.relationship.value if rec.relationship is not None else None,
                             model_id=rec.model_id, developer=rec.developer, organization=rec.organization,
                             data_dir=data_dir, alpha=stat.alpha)
        written, notes = export(runs, output, opts)
        for note in notes:
            err.print(rich_text("note: " + note), highlight=False, soft_wrap=True)
        for path in written:
            out.print(rich_text(str(path)), highlight=False, soft_wrap=True)
        n_rec = sum(p.suffix == ".json" for p in written)
        err.print(rich_text(f"wrote {n_rec} EEE record(s) and {len(written) - n_rec} sidecar(s) of {fmt.value} "
                            f"schema 0.3.0 under {output}"), highlight=False, soft_wrap=True)
