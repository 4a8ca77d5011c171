"""The one exception type that the CLI turns into a single clear error line."""


class RepauditError(Exception):
    """A user-facing error: bad input, a missing file, an unknown choice.

    The message is one line that names the thing at fault and what to do about it;
    the CLI prints it as ``error: <message>`` and exits with status 1.
    """
