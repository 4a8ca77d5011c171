"""The one exception type that the CLI turns into a single clear error line."""


class RepauditError(Exception):
    """A user-facing error: bad input, a missing file, an unknown choice.

    The message is one line that names the thing at fault and what to do about it;
    the CLI prints it as ``error: <message>`` and exits with status 1.
    """


class UsageError(RepauditError):
    """An option value or combination that is wrong whatever the input files (``--n-boot 0``, ``--max-drop``
    with ``--margin``): checked before any file is read; the CLI exits with its usage code (2; ``gate`` 64)."""


class OutputError(RepauditError):
    """A report, plot or run file that cannot be written where it was asked for (a missing folder without
    ``--mkdir``, a directory at the path, no permission); the CLI exits 1 (``gate`` 74)."""
