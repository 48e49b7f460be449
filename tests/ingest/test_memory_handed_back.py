"""A parse hands back the memory each of its steps freed before the next one begins
(``lib.memory.hand_back_freed``), Arrow's included (it allocates through glibc). Counted in
resident pages, not timed."""

from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np
import pytest

from profiler_app.lib.memory import _glibc, hand_back_freed

PAGE = resource.getpagesize()


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


@pytest.mark.skipif(_glibc() is None, reason="glibc's allocator only")
def test_what_a_step_freed_in_the_heap_is_hand_back_freed():
    # 128 MB in blocks under glibc's mmap threshold (so from the heap), then one more block
    # above them that holds the heap's top: free() alone hands none of it back.
    blocks = [np.ones(64 << 10, np.uint8) for _ in range(2048)]
    top = np.ones(64 << 10, np.uint8)
    del blocks
    kept = resident_bytes()
    hand_back_freed()
    assert kept - resident_bytes() > 100 << 20
    assert top.all()  # still there


def test_arrow_allocates_through_glibc_in_every_process_of_the_app():
    code = "import profiler_app, pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert found.stdout.strip() == "system", found.stderr
