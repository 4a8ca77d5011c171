"""``repaudit factors``: every factor, and what each command does with it (the registry, printed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from repaudit.cli.common import Format, MkdirOption, out, user_errors
from repaudit.escape import rich_text

if TYPE_CHECKING:
    from rich.table import Table


def factors_command(
    fmt: Annotated[Format, typer.Option("--format", help="rich (terminal), markdown or json.")] = Format.rich,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the table here (.md, .json).")
                      ] = None,
    mkdir: MkdirOption = False,
) -> None:
    """List every factor that can move a score, with its support per command: recorded, compared, a run option,
    set by protocols, checked by conformance, replayed by attribute, swept, moved by reproduce — or why not.

    Example: repaudit factors --format markdown
    """
    from repaudit.cli.common import check_outputs, report_format, write_report
    from repaudit.report.factors import factors_markdown
    from repaudit.run.factors import support

    with user_errors():
        check_outputs(output, None, fmt, False, mkdir=mkdir)
        chosen = report_format(fmt, output, False)
        if chosen is Format.latex:
            from repaudit.errors import UsageError

            raise UsageError("repaudit factors writes the terminal table, Markdown or JSON")
        text = (json.dumps(support(), indent=1) if chosen is Format.json else
                factors_markdown() if chosen is Format.markdown else None)
        if text is not None:
            if output is not None:
                write_report(output, text)
            else:
                typer.echo(text, nl=False)
            return
        out.print(_support_table(support()))


#: terminal column headers, short so the table fits 80 columns (the Markdown and JSON use the full names)
_SHORT = {"recorded": "rec", "compared": "cmp", "option": "opt", "protocol": "proto", "conformance": "conf",
          "replay": "replay", "sweep": "sweep", "reproduce": "repro"}


def _support_table(rows: list[dict]) -> Table:
    """The registry as a terminal table that fits 80 columns: ✓, or a numbered note (the reason, under the table,
    one per distinct text) for each unsupported cell."""
    from rich import box
    from rich.table import Table

    from repaudit.run.factors import COMMANDS

    notes: dict[str, int] = {}
    table = Table(title="factors: ✓ supported, —N not (note N below)", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0),
                  show_edge=False, caption_justify="left")
    table.add_column("factor", no_wrap=True)
    table.add_column("stage", no_wrap=True)
    for c in COMMANDS:
        table.add_column(_SHORT[c], no_wrap=True)
    for r in rows:
        cells = []
        for c in COMMANDS:
            if r[c] is True:
                cells.append("✓")
            else:
                cells.append(f"—{notes.setdefault(r[c], len(notes) + 1)}")
        stage = {"inference": "infer", "scoring": "score"}.get(r["stage"], r["stage"])
        table.add_row(rich_text(r["factor"]), stage, *cells)
    legend = ", ".join(f"{v} = {k}" for k, v in _SHORT.items() if k != v)
    table.caption = "\n".join([legend, *(f"{n}. {rich_text(text)}" for text, n in notes.items())])
    return table
