"""The one error the parsers raise: its message is shown to the person who uploaded the file."""


class TraceFormatError(ValueError):
    """The input is not a trace this package can read; ``str(exc)`` says why, in plain words."""
