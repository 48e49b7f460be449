"""A digest of the code that computed a kept result: results kept on disk are named after it, so
a new release computes them again instead of reading what older code wrote."""

import functools
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd


@functools.cache
def code_digest(folders: tuple[Path, ...]) -> str:
    """sha256 of every ``.py`` file below ``folders`` (or of a file named there) and of the
    numpy and pandas versions (a result written by one pandas may read back differently in
    another)."""
    digest = hashlib.sha256(f"{np.__version__} {pd.__version__}".encode())
    for folder in folders:
        for source in [folder] if folder.is_file() else sorted(folder.rglob("*.py")):
            digest.update(source.read_bytes())
    return digest.hexdigest()
