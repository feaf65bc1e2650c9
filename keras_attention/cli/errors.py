"""The one error type of the command line: a user error, exit status 2."""

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A mistake of the user (a missing file, bad data, flags that do not
    go together): printed as one line `error: ...`, exit status 2."""


def one_line(message: object, limit: int = 600) -> str:
    """`message` on one line (whitespace runs collapsed), cut to `limit`
    characters."""
    text = " ".join(str(message).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
