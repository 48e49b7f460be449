"""Memory freed during an insights run is reused by the run, and handed back when it ends
(``profiler_app.lib.memory``). Counted in page faults and resident pages, not timed."""

from __future__ import annotations

import resource

import numpy as np
import pytest

from profiler_app.lib.memory import _glibc, freed_memory_kept

BLOCK = 16 << 20  # a rank's column of two million 64-bit values
PAGE = resource.getpagesize()

pytestmark = pytest.mark.skipif(_glibc() is None, reason="glibc's allocator only")


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def faults_of(allocate) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    allocate()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_freed_blocks_are_reused_without_faulting_their_pages_in_again():
    def next_rank() -> None:  # 256 MB allocated, then freed
        blocks = [np.ones(BLOCK, np.uint8) for _ in range(16)]
        del blocks

    with freed_memory_kept():
        next_rank()
        faults = faults_of(next_rank)
    # Handed back after each (glibc's default), the blocks' pages fault again: 8,000 times on
    # this machine, with huge pages.
    assert faults < 16 * BLOCK // PAGE // 100


def test_what_the_run_freed_is_handed_back_when_it_ends():
    with freed_memory_kept():
        blocks = [np.ones(BLOCK, np.uint8) for _ in range(16)]  # 256 MB
        del blocks
        kept = resident_bytes()
    handed_back = kept - resident_bytes()
    assert handed_back > 128 << 20
