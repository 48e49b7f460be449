"""The index build holds one step's arrays at a time: each array it writes from a generator is
freed before the next is made, and the activity levels find where their buckets begin a slice
of the events at a time, never over a column of the part's size."""

import gc
import weakref

import numpy as np

from profiler_app.timeline.pure import activity
from profiler_app.timeline.pure.activity import build_activity
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


def _starts_and_spans(n: int):
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 1 << 40, n))
    ends = starts + rng.integers(1, 1 << 20, n)
    # Disjoint sorted spans: the running reach of the intervals, merged.
    reach = np.maximum.accumulate(ends)
    new = np.r_[True, starts[1:] > reach[:-1]]
    span_end = reach[np.r_[np.flatnonzero(new)[1:] - 1, n - 1]]
    return starts, starts[new], span_end


def test_bucket_starts_found_a_slice_at_a_time_are_those_of_the_whole_column(monkeypatch):
    starts, _, _ = _starts_and_spans(10_000)
    monkeypatch.setattr(activity, "_FIRSTS_AT_ONCE", 999)  # slices end mid-bucket
    for k in (0, 20, 30, 36, 48):
        shifted = starts >> k
        whole = np.flatnonzero(np.r_[True, shifted[1:] != shifted[:-1]])
        np.testing.assert_array_equal(activity.bucket_firsts(starts, k), whole)
    assert len(activity.bucket_firsts(starts[:0], 10)) == 0


def test_levels_built_a_slice_at_a_time_equal_those_built_in_one(monkeypatch):
    starts, span_start, span_end = _starts_and_spans(200_000)
    in_one = build_activity(starts, span_start, span_end)
    monkeypatch.setattr(activity, "_FIRSTS_AT_ONCE", 1000)
    sliced = build_activity(starts, span_start, span_end)

    assert len(in_one) > 3
    assert [level.k for level in sliced] == [level.k for level in in_one]
    for level, whole in zip(sliced, in_one, strict=True):
        np.testing.assert_array_equal(level.bucket, whole.bucket)
        np.testing.assert_array_equal(level.count, whole.count)
        np.testing.assert_array_equal(level.busy_ns, whole.busy_ns)
        assert int(level.count.sum()) == len(starts)
    # A GPU's pyramid has spans and no events starting: every level covers the spans' time.
    gpu = build_activity(starts[:0], span_start, span_end)
    assert gpu
    for level in gpu:
        assert int(level.count.sum()) == 0
        assert int(level.busy_ns.sum()) == int((span_end - span_start).sum())
