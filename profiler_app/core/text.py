"""Text as Postgres stores it: names from traces are cleaned before they are written.

Postgres refuses NUL characters in text and lone UTF-16 surrogates in any encoding, and a
btree index refuses an entry over about 2.7 KB, so a name that breaks any of these would fail
the whole part. Such names are kept readable instead: NUL becomes U+FFFD, a lone surrogate
becomes "?", and an over-long name is cut with a marker that says how long it was and a short
hash, so that two long names that share a beginning stay apart.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

# Well under Postgres' btree limit (2,704 bytes per index entry, with the other columns).
MAX_NAME_BYTES = 2000
REPLACEMENT = "\ufffd"


def truncation_marker(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:8]
    return f"… [{len(text)} characters, cut; #{digest}]"


def storable(text: str) -> str:
    """``text`` without NUL or lone surrogates."""
    return text.replace("\x00", REPLACEMENT).encode("utf-8", "replace").decode("utf-8")


def clean_text(text: str, max_chars: int | None = None) -> str:
    """``storable(text)``, at most ``max_chars`` characters and ``MAX_NAME_BYTES`` bytes of
    UTF-8."""
    cleaned = storable(text)
    fits_chars = max_chars is None or len(cleaned) <= max_chars
    if fits_chars and len(cleaned.encode("utf-8")) <= MAX_NAME_BYTES:
        return cleaned
    marker = truncation_marker(text)
    if max_chars is not None and len(marker) >= max_chars:  # a short code column: just cut
        return cleaned[:max_chars]
    keep_chars = (len(cleaned) if max_chars is None else max_chars) - len(marker)
    keep_bytes = MAX_NAME_BYTES - len(marker.encode("utf-8"))
    head = cleaned[: max(keep_chars, 0)].encode("utf-8")[:keep_bytes].decode("utf-8", "ignore")
    return head + marker


def clean_column(values: pd.Series, max_chars: int | None = None) -> pd.Series:
    """``clean_text`` of every string in ``values``. Names repeat, so each distinct one is
    checked once and the column is only rebuilt when one of them needed cleaning."""
    if not (values.dtype == object or pd.api.types.is_string_dtype(values.dtype)):
        return values
    codes, distinct = pd.factorize(values)
    cleaned = [clean_text(v, max_chars) if isinstance(v, str) else v for v in distinct]
    if all(c == v for c, v in zip(cleaned, distinct, strict=True)):
        return values
    table = np.array([*cleaned, None], dtype=object)  # code -1 (missing) -> None
    return pd.Series(table[codes], index=values.index, dtype=object)


def storable_json(value) -> str:
    """``value`` as JSON text, every string (keys too) storable: the text is checked once, and
    only a value that holds NUL or a lone surrogate is cleaned string by string (6 MB of a
    1,024-rank job's insights: 0.05 s, where ``clean_json`` took 0.8 s)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")  # fails on a lone surrogate
    except UnicodeEncodeError:
        return json.dumps(clean_json(value), ensure_ascii=False)
    if "\\u0000" in text:  # NUL (or a string that spells it: cleaned alike, harmlessly)
        return json.dumps(clean_json(value), ensure_ascii=False)
    return text


def clean_json(value):
    """A JSON value with every string (keys too) storable, for a jsonb column."""
    if isinstance(value, dict):
        return {storable(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    if isinstance(value, str):
        return storable(value)
    return value
