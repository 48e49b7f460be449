"""The index build holds one step's arrays at a time: each array it writes from a generator is
freed before the next is made, and the activity levels share one array of bucket numbers
without any level keeping a view of it."""

import gc
import weakref

import numpy as np

from profiler_app.timeline.pure.activity import build_activity, summarise
from profiler_app.timeline.pure.index_build import _Staging


def test_each_array_written_from_a_generator_is_freed_before_the_next_is_made(tmp_path):
    alive_when_resumed = []

    def arrays():
        previous = None
        for i in range(3):
            if previous is not None:
                gc.collect()
                alive_when_resumed.append(previous() is not None)
            made = np.full(1000, i, dtype=np.int64)
            previous = weakref.ref(made)
            yield f"a{i}", made
            del made

    with _Staging(tmp_path / "index") as out:
        out.save_each(arrays())
    assert alive_when_resumed == [False, False]
    for i in range(3):
        assert (np.load(tmp_path / "index" / f"a{i}.npy") == i).all()


def test_levels_built_over_one_shared_array_equal_each_level_built_alone():
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 1 << 40, 200_000))
    ends = starts + rng.integers(1, 1 << 20, len(starts))
    # Disjoint sorted spans: the running reach of the intervals, merged.
    reach = np.maximum.accumulate(ends)
    new = np.r_[True, starts[1:] > reach[:-1]]
    span_start = starts[new]
    span_end = reach[np.r_[np.flatnonzero(new)[1:] - 1, len(starts) - 1]]

    # Built from the coarsest down, each level over the array the next one overwrites.
    levels = build_activity(starts, span_start, span_end)

    assert len(levels) > 3
    for level in levels:
        alone = summarise(starts, level.k, span_start, span_end)
        assert level.k == alone.k
        np.testing.assert_array_equal(level.bucket, alone.bucket)
        np.testing.assert_array_equal(level.count, alone.count)
        np.testing.assert_array_equal(level.busy_ns, alone.busy_ns)
        assert int(level.count.sum()) == len(starts)
