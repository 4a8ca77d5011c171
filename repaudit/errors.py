"""The one exception type that the CLI turns into a single clear error line."""


class RepauditError(Exception):
    """A user-facing error: bad input, a missing file, an unknown choice.

    The message is one line that names the thing at fault and what to do about it;
    the CLI prints it as ``error: <message>`` and exits with status 1.
    """


class UsageError(RepauditError):
    """An option value or combination that is wrong whatever the input files (``--n-boot 0``, ``--max-drop``
    with ``--margin``, ``--doc-ids 0,abc``): checked before any file is read; the CLI exits with its usage code (2;
    ``gate`` and ``determinism`` 64)."""


class UnsafeOutputError(UsageError):
    """An output path (``-o``, ``--junit``, ``--docs-csv``, a plot) that names a directory, a symbolic link, a device
    or a FIFO: writing would replace it, so it is refused before any work and left unchanged; every command exits
    sysexits' EX_USAGE (64), the code issue 63 asked for, apart from the command's other usage errors."""


class OutputError(RepauditError):
    """A report, plot or run file that cannot be written where it was asked for (a missing folder without
    ``--mkdir``, no permission, a write that fails: a full disk); nothing is written; the CLI exits 1 (``gate`` 74)."""


class EndpointError(RepauditError):
    """A served model's endpoint that cannot be reached or answers with an error after the retries (an unreachable
    host, 401, a model it does not serve, 429 or 5xx that persist, a timeout, a body that is not JSON, no prompt
    log-probabilities): every command exits with sysexits' EX_UNAVAILABLE (69); the requests already answered are
    kept in the batch store, so the same command resumes."""


#: success (``gate``: GO)
EXIT_OK = 0
#: bad input or an output that cannot be written, every command but ``gate`` and ``determinism``
EXIT_INPUT = 1
#: a usage error, every command but ``gate`` and ``determinism`` (click's convention)
EXIT_USAGE = 2
#: sysexits' EX_USAGE, EX_DATAERR and EX_IOERR: ``gate``'s and ``determinism``'s errors (their 0–2 are decisions)
EX_USAGE, EX_DATAERR, EX_IOERR = 64, 65, 74
#: sysexits' EX_UNAVAILABLE: an endpoint that cannot serve the requests (:class:`EndpointError`), every command
EX_UNAVAILABLE = 69
#: interrupted (Ctrl-C)
EXIT_INTERRUPTED = 130

#: every exit code: (code, what it means for every command but ``gate``, what it means for ``gate``). The table of
#: docs/reference/cli/index.md is generated from it (:func:`exit_code_table`); ``tests/test_readme.py`` runs a real
#: case of every row.
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "success", "GO"),
    (EXIT_INPUT, "bad input (one `error:` line naming the file and the JSON path), or an output that cannot be "
                 "written (a missing folder without `--mkdir`, no permission, a failed write: a full disk; nothing "
                 "is written)", "NO-GO"),
    (EXIT_USAGE, "usage error: an unknown option, a bad value or combination (`--n-boot 0`, `--adjust foo`, "
                 "`run --limit 0`, `run --task nosuch`, `run --doc-ids 0,abc`, `sweep --factor nosuch`, "
                 "`variance --across checkpoint` without two files), checked before any file is read",
     "INCONCLUSIVE (`--strict`: 1)"),
    (EX_USAGE, "an output path (`-o`, `--junit`, `--docs-csv`) naming a directory, a symbolic link, a device or a "
               "FIFO: refused before any work, the target unchanged",
     "usage error (no policy, `--max-drop` with `--margin`, `--format latex`, `-o gate.tex`, an output path naming "
     "a directory, a symbolic link, a device or a FIFO)"),
    (EX_DATAERR, "—", "bad input (a run or the policy file)"),
    (EX_UNAVAILABLE, "a served model's endpoint that cannot answer (unreachable, 401, an unknown model, 429 or 5xx "
                     "after the retries, a timeout, a body that is not JSON, no prompt log-probabilities); the "
                     "requests already answered are kept, so the same command resumes", "the same"),
    (EX_IOERR, "—", "an output that cannot be written (a missing folder without `--mkdir`, no permission, a failed "
                    "write: a full disk; nothing is written)"),
    (EXIT_INTERRUPTED, "interrupted (finished work is kept)", "interrupted"),
)


def exit_code_table() -> str:
    """The Markdown table of :data:`EXIT_CODES`, as the command-line reference shows it."""
    rows = ["| code | every command but `gate` | `gate` |", "|---:|---|---|"]
    rows += [f"| {code} | {other} | {gate} |" for code, other, gate in EXIT_CODES]
    return "\n".join(rows) + "\n"
