"""The Memory page in headless Chromium, on the real CPU trace recorded with profile_memory."""

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job
from tests.timeline.jobs import parse_paths
from tests.traces.memory_expected import (
    MEMORY_TRACE,
    memory_expected,
    running_sum,
    write_without_totals,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_shows_the_peak_the_top_allocators_and_the_events(tab: Page, live_server, user):
    loaded_job(user, "cpu-memory", [("algo-1", 0, MEMORY_TRACE)], status="completed")
    raw = memory_expected()
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/memory")
    expect(tab.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
    expect(tab.get_by_role("link", name="Memory")).to_be_visible()
    peak = tab.get_by_label("Peak")
    expect(peak).to_contain_text("Peak: 1.7 MB allocated")
    for name in raw.running:
        expect(peak).to_contain_text(name)
    allocators = tab.get_by_role("table", name="Top allocating operators (CPU)")
    expect(allocators.locator("tbody tr").first).to_contain_text("aten::convolution_backward")
    expect(allocators.locator("tbody tr").first).to_contain_text("8.0 MB")
    events = tab.get_by_role("table", name="Memory events (CPU)")
    expect(tab.get_by_text(f"{len(raw.events)} events", exact=True)).to_be_visible()
    # The chart is drawn (its library loads lazily), the peak pinned on it.
    expect(tab.locator("svg text", has_text="peak")).to_be_visible()
    screenshot(tab, "memory-page")
    tab.get_by_label("Minimum size (kB)").fill("1000")
    big = [e for e in raw.events if abs(e[1]) >= 1_000_000]
    expect(tab.get_by_text(f"{len(big)} events", exact=True)).to_be_visible()
    expect(events.locator("tbody tr")).to_have_count(len(big))
    screenshot(tab, "memory-page-filtered")


def test_it_draws_a_trace_without_totals_from_its_bytes(tab: Page, live_server, user, tmp_path):
    """A PyTorch 1.9-style trace: the curve is the running sum of Bytes, reserved is unknown."""
    trace = write_without_totals(tmp_path / "bytes-only.json.gz")
    job = parse_paths(user, "pytorch-1.9", [("algo-1", 0, trace)], status="completed")
    LoadedProfile.objects.create(user=user, job=job)
    [(peak_time_ns, peak_bytes)] = running_sum(trace).peaks.values()
    assert peak_bytes == 1_723_440
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/memory")
    peak = tab.get_by_label("Peak")
    expect(peak).to_contain_text("Peak: 1.7 MB allocated (reserved not recorded)")
    expect(peak).to_contain_text("s after the trace's start")
    expect(tab.get_by_text("running sum of those sizes", exact=False)).to_be_visible()
    expect(tab.locator("svg text", has_text="peak")).to_be_visible()
    expect(tab.locator("svg text", has_text="Time since the trace's start")).to_be_visible()
    # Only the allocated curve is drawn: no "Reserved" legend entry.
    expect(tab.locator("svg text", has_text="Allocated")).to_be_visible()
    expect(tab.locator("svg text", has_text="Reserved")).to_have_count(0)
    # The time axis starts at or after 0: no negative times.
    labels = tab.locator("svg text").all_text_contents()
    assert not [t for t in labels if t.startswith("-") and t.endswith(" s")], labels
    screenshot(tab, "memory-page-bytes-only")
