"""The ``repaudit`` command line: parse, call the library, render. No logic of its own.

One module per command; :mod:`repaudit.cli.common` holds what they share.
"""

from __future__ import annotations

import typer

from repaudit.cli.attribute import attribute_command
from repaudit.cli.compare import compare_command
from repaudit.cli.reproduce import reproduce_command
from repaudit.cli.run import run_command
from repaudit.cli.sweep import sweep_command
from repaudit.cli.variance import variance_command

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="repaudit: a reproducibility auditor for language-model evaluations.")


@app.callback()
def _root() -> None:
    """repaudit: a reproducibility auditor for language-model evaluations."""


app.command("run")(run_command)
app.command("compare")(compare_command)
app.command("sweep")(sweep_command)
app.command("attribute")(attribute_command)
app.command("reproduce")(reproduce_command)
app.command("variance")(variance_command)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
