"""The ``repaudit`` command line: parse, call the library, render. No logic of its own.

One module per command; :mod:`repaudit.cli.common` holds what they share. A command's module is imported when the
command is asked for (:data:`COMMANDS`, :class:`_Group`): ``repaudit --version`` and the top-level ``--help`` import
none, ``repaudit compare`` only compare's; each module imports what its command computes with when it runs.

Exit codes (every command but ``gate`` and ``determinism``): 0 success; 1 bad input or any other user error (one
``error:`` line on stderr); 2 a usage error — an unknown option, a bad option value, a missing argument (one
``error:`` line); 130 interrupted (finished work is kept). ``gate`` exits 0 GO, 1 NO-GO, 2 INCONCLUSIVE,
64 usage error, 65 bad input, 74 an output that cannot be written; ``determinism`` 0 bit-identical, 1 predictions
differ, 2 only numbers differ, and 64, 65 (bad input, or nothing measured), 74 as ``gate``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo

from repaudit.errors import EX_USAGE, EXIT_INTERRUPTED
from repaudit.errors import EXIT_USAGE as USAGE_EXIT

#: commands whose exit codes 0-2 are decisions (their usage errors exit 64)
_DECIDING = (" gate", " determinism")


def usage_message(message: str) -> str:
    """click's and pydantic's wording of a bad option value as repaudit words it, naming the option first:
    ``Invalid value for '--format': Value error, 'x' is not one of 'rich', 'json'.`` →
    ``--format: unknown value 'x': choose one of rich, json``."""
    import re

    m = re.fullmatch(r"Invalid value for '([^']+)': (?:Value error, )?(.*?)\.?", message)
    if m is None:
        return message
    option, rest = m.groups()
    choice = re.fullmatch(r"'(.*)' is not one of (.*)", rest)
    if choice:
        return f"{option}: unknown value '{choice.group(1)}': choose one of {choice.group(2).replace(chr(39), '')}"
    return f"{option}: {rest[:1].lower()}{rest[1:]}"


#: every command, in the order the top-level help lists them: name -> (its module, one line for that help; click
#: cuts a docstring's first sentence at ~45 characters)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("repaudit.cli.run", "Evaluate a model on a benchmark; write a fingerprinted run file."),
    "compare": ("repaudit.cli.compare", "What differs between two runs, which docs flipped, is the move beyond noise."),
    "gate": ("repaudit.cli.gate", "GO / NO-GO / INCONCLUSIVE for a candidate run against a baseline (CI)."),
    "sweep": ("repaudit.cli.sweep", "Vary one factor, hold the rest, measure its effect against the noise floor."),
    "attribute": ("repaudit.cli.attribute", "Re-run the hybrids of two runs; attribute the score delta to each "
                                            "factor."),
    "reproduce": ("repaudit.cli.reproduce", "Search the settings of a model that reproduce a reported number."),
    "variance": ("repaudit.cli.variance", "A benchmark's noise: doc bootstrap, seeds, few-shot order, prompt "
                                          "format."),
    "factors": ("repaudit.cli.factors", "Every factor that can move a score, and what each command does with it."),
    "export": ("repaudit.cli.export", "Write runs as Every Eval Ever records, every factor kept."),
    "determinism": ("repaudit.cli.determinism", "Is the serving stack deterministic: repeat, batch, order, cache, "
                                                "threads."),
    "appendix": ("repaudit.cli.appendix", "A paper appendix from the run files: setup, scores, error bars, tables."),
}


class _Commands(MutableMapping):
    """The group's commands, each built the first time it is looked up: its module imported, its function
    (``<name>_command``) turned into a click command by typer (which reads the function's signature)."""

    def __init__(self, markup: Any) -> None:
        self._built: dict[str, Any] = {}
        self._markup = markup

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            module, short = COMMANDS[name]
            fn = getattr(importlib.import_module(module), f"{name}_command")
            self._built[name] = get_command_from_info(CommandInfo(name, callback=fn, short_help=short),
                                                      pretty_exceptions_short=True, rich_markup_mode=self._markup)
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        raise TypeError("repaudit's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS


class _Group(TyperGroup):
    """Typer's group with the commands built when asked for (:class:`_Commands`; the top-level help lists them from
    :data:`COMMANDS` without building any), usage errors as one ``error:`` line (not a box) and a documented exit
    code."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.rich_markup_mode)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        from repaudit.cli.common import err
        from repaudit.escape import rich_text

        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              windows_expand_args=windows_expand_args, **extra)
        except typer.Abort:
            err.print("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except typer.TyperException as exc:  # typer's (vendored) click exceptions: usage errors and the like
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
                typer.echo(ctx.get_help())
                sys.exit(USAGE_EXIT)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            message = usage_message(" ".join(exc.format_message().split()))
            err.print("[bold red]error:[/] " + rich_text(message + hint), highlight=False, soft_wrap=True)
            code = getattr(exc, "exit_code", 1)
            # gate's and determinism's 0-2 are decisions: their usage errors take sysexits' EX_USAGE
            deciding = ctx is not None and ctx.command_path.endswith(_DECIDING)
            sys.exit(EX_USAGE if code == USAGE_EXIT and deciding else code)
        if standalone_mode:
            sys.exit(rv if isinstance(rv, int) else 0)
        return rv


def _list_types_as_repeats() -> None:
    """typer labels a repeatable parameter by its Python type (``<list[Path]>``); show its element and that it
    repeats (``<path>...``), as a user types it. Typers without that label are left alone."""
    from pathlib import PurePath
    from typing import get_args

    from typer import core

    param = getattr(core, "_TyperParameter", None)
    shown = getattr(param, "display_type", None)
    if param is None or shown is None or getattr(shown, "_repeats", False):
        return

    def display_type(self, ctx) -> str:
        label = shown(self, ctx)
        desc = getattr(self, "type_descriptor", None)
        if desc is None or not desc.is_list or not label.startswith("<list["):
            return label
        (item,) = get_args(desc.annotation) or (str,)
        name = "path" if isinstance(item, type) and issubclass(item, PurePath) else getattr(item, "__name__", "value")
        return f"<{name}>..."

    display_type._repeats = True  # type: ignore[attr-defined]
    param.display_type = display_type


_list_types_as_repeats()

app = typer.Typer(cls=_Group, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]},
                  help="repaudit: a reproducibility auditor for language-model evaluations.")


def _version(value: bool) -> None:
    if value:
        from repaudit import __version__

        typer.echo(f"repaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print repaudit's version and exit.")] = False) -> None:
    """repaudit: a reproducibility auditor for language-model evaluations.

    Exit codes: 0 success, 1 bad input (one 'error:' line), 2 usage error, 130 interrupted.
    """



def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
