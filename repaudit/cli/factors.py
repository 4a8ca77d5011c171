"""``repaudit factors``: every factor, and what each command does with it (the registry, printed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from repaudit.cli.common import Format, out, user_errors
from repaudit.escape import rich_text


def factors_command(
    fmt: Annotated[Format, typer.Option("--format", help="rich (terminal), markdown or json.")] = Format.rich,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the table here (.md, .json).")
                      ] = None,
) -> None:
    """List every factor that can move a score, with its support per command: recorded, compared, a run option,
    set by protocols, checked by conformance, replayed by attribute, swept, moved by reproduce — or why not.

    Example: repaudit factors --format markdown
    """
    from repaudit.cli.common import check_outputs, report_format
    from repaudit.report.factors import factors_markdown
    from repaudit.run.factors import COMMANDS, support
    from repaudit.run.records import write_atomic

    with user_errors():
        check_outputs(output, None, fmt, False)
        chosen = report_format(fmt, output, False)
        if chosen is Format.latex:
            from repaudit.errors import RepauditError

            raise RepauditError("repaudit factors writes the terminal table, Markdown or JSON")
        text = (json.dumps(support(), indent=1) if chosen is Format.json else
                factors_markdown() if chosen is Format.markdown else None)
        if text is not None:
            if output is not None:
                write_atomic(output, text)
            else:
                typer.echo(text, nl=False)
            return
        table = Table(title="factors (✓ supported; otherwise why not)")
        for col in ("factor", "stage", *COMMANDS):
            table.add_column(col)
        for r in support():
            table.add_row(rich_text(r["factor"]), r["stage"], *("✓" if r[c] is True else rich_text("— " + r[c])
                                                                 for c in COMMANDS))
        out.print(table)
