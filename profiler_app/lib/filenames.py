"""Download names made of user text (job names) that are safe in a response header."""

import re

from django.utils.http import content_disposition_header

_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]")


def attachment(filename: str) -> str:
    """The Content-Disposition of a download named ``filename``: control characters (a newline
    would end the header) and path separators become "_"; quotes and non-ASCII are encoded."""
    return content_disposition_header(True, _UNSAFE.sub("_", filename))  # type: ignore[return-value]
