"""What a kernel's or an operator's name says, asked once per string of the part's table:
category, precision, memcpy kind and step number (``tracefmt.names`` holds the rules), kept as
arrays indexed by string id so that a batch is classified with one lookup per column."""

from __future__ import annotations

import numpy as np

from tracefmt import names
from tracefmt.strings import StringTable

PRECISIONS = ["unknown", "FP64", "FP32", "TF32", "FP16", "BF16", "FP8", "INT64", "INT32"]
PRECISIONS += ["INT16", "INT8", "UINT8", "BOOL", "COMPLEX64", "COMPLEX128"]
_PRECISION_CODE = {p: i for i, p in enumerate(PRECISIONS)}
CATEGORIES = [names.COMP, names.COMM, names.MEM, names.OTHER]
_CATEGORY_CODE = {c: i for i, c in enumerate(CATEGORIES)}


class NameRules:
    """Per-name answers (category, precision, memcpy kind, step number), grown with the table."""

    def __init__(self, strings: StringTable) -> None:
        self.strings = strings
        self.category = np.empty(0, np.int8)
        self.precision = np.empty(0, np.int8)
        self.memcpy = np.empty(0, np.uint8)
        self.step = np.empty(0, np.int64)
        self.types_precision: dict[int, int] = {}

    def update(self) -> None:
        known, total = len(self.category), len(self.strings)
        if known == total:
            return
        new = self.strings.strings[known:total]
        self.category = np.r_[
            self.category, [_CATEGORY_CODE[names.kernel_category(n)] for n in new]
        ].astype(np.int8)
        self.precision = np.r_[
            self.precision, [_PRECISION_CODE[names.precision_from_name(n)] for n in new]
        ].astype(np.int8)
        self.memcpy = np.r_[self.memcpy, [int(names.memcpy_kind(n)) for n in new]]
        self.memcpy = self.memcpy.astype(np.uint8)
        steps = [names.step_number(n) for n in new]
        self.step = np.r_[self.step, [-1 if s is None else s for s in steps]].astype(np.int64)

    def input_types_precision(self, type_ids: np.ndarray) -> np.ndarray:
        out = np.empty(len(type_ids), dtype=np.int8)
        uniq, inverse = np.unique(type_ids, return_inverse=True)
        codes = []
        for type_id in uniq.tolist():
            if type_id not in self.types_precision:
                text = self.strings.strings[type_id]
                self.types_precision[type_id] = _PRECISION_CODE[
                    names.precision_from_input_types(text)
                ]
            codes.append(self.types_precision[type_id])
        out[:] = np.asarray(codes, dtype=np.int8)[inverse.reshape(-1)]
        return out
