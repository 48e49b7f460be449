"""Request bodies the database can store: JSON strings without NUL or unpaired surrogates; and
uploaded files spooled to the scratch folder that never outlive a failed request."""

import contextlib
from pathlib import Path
from typing import Any

from django.core.files.uploadhandler import TemporaryFileUploadHandler
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _storable(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate (\ud800 ... \udfff)
        return False
    return True


class StrictJSONParser(JSONParser):
    """JSON whose strings (keys too) Postgres accepts: it refuses NUL in text and jsonb, and
    Python cannot encode a lone surrogate, so either would fail a request with a 500 deep in
    the database layer instead of a 400 here."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        pending: list[Any] = [data]
        while pending:  # iterative: the JSON's depth is not bounded by Python's stack here
            value = pending.pop()
            if isinstance(value, dict):
                pending.extend(value.keys())
                pending.extend(value.values())
            elif isinstance(value, list):
                pending.extend(value)
            elif isinstance(value, str) and not _storable(value):
                raise ParseError(
                    "JSON strings must not contain NUL characters (\\u0000) or unpaired "
                    "surrogates (\\ud800-\\udfff)."
                )
        return data


class ScratchFileUploadHandler(TemporaryFileUploadHandler):
    """Django's handler for a large uploaded file (written to FILE_UPLOAD_TEMP_DIR as it
    arrives), whose file goes at once when a write fails (a full disk) rather than whenever the
    garbage collector finds it: the request is answered with nothing of it left."""

    def receive_data_chunk(self, raw_data, start):
        try:
            return super().receive_data_chunk(raw_data, start)
        except BaseException:
            self._discard()
            raise

    def file_complete(self, file_size):
        try:
            return super().file_complete(file_size)  # flushes what is buffered
        except BaseException:
            self._discard()
            raise

    def _discard(self) -> None:
        path = self.file.temporary_file_path()
        with contextlib.suppress(OSError):  # flushing the buffer meets the full disk again
            self.file.close()
        Path(path).unlink(missing_ok=True)
