"""The timeline in headless Chromium on a parsed real trace: zoom with keys, select a kernel,
see its launch→run arrow and the bottom pane, share the view by link."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Locator, Page, expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in, wait_until
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KERNEL = "volta_sgemm_64x64_nt"  # a cuBLAS GEMM, launched by cudaLaunchKernel on thread 1102
ARROW_RGB = (0, 166, 200)


def wait_for_paint(page: Page) -> None:
    page.wait_for_function(
        "() => window.timelineFrameStats && window.timelineFrameStats.firstDataPaintMs !== null"
    )
    expect(page.get_by_text(re.compile(r"events in \d+ parts"))).to_be_visible()


def select_by_search(page: Page, name: str) -> Locator:
    """Selects the first event the timeline's search lists for ``name``; returns the selection
    pane once it shows that event."""
    page.get_by_placeholder("Search events by name").fill(name)
    page.get_by_role("option").first.click()
    pane = page.get_by_role("region", name="Selection details")
    expect(pane.get_by_label("Selected")).to_contain_text(name)
    return pane


def view_range(page: Page) -> tuple[int, int]:
    """The time range the URL holds (it follows the view a moment after it moves)."""
    expect(page).to_have_url(re.compile(r"[?&]t=\d+_\d+"))
    t = parse_qs(urlparse(page.url).query)["t"][0]
    start, end = t.split("_")
    return int(start), int(end)


def hold_until(page: Page, key: str, enough) -> tuple[int, int]:
    """Holds ``key`` (a zoom or pan key acts while held) until ``enough(view range)``. A loaded
    machine draws fewer frames meanwhile, so the key is held again until the view has moved far
    enough (the URL follows once the view rests); returns the view range then."""
    shown = view_range(page)
    for _ in range(20):
        page.keyboard.down(key)
        page.wait_for_timeout(700)
        page.keyboard.up(key)
        try:
            expect(page).not_to_have_url(re.compile(rf"t={shown[0]}_{shown[1]}"), timeout=5_000)
        except AssertionError:
            continue
        shown = view_range(page)
        if enough(shown):
            break
    return shown


def arrow_pixels(page: Page) -> int:
    """Pixels of the canvas in the arrow's colour."""
    return page.evaluate(
        """([r, g, b]) => {
            const canvas = document.querySelector('[data-testid=timeline-canvas]');
            const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
            let n = 0;
            for (let i = 0; i < data.length; i += 4)
                if (Math.abs(data[i] - r) < 8 && Math.abs(data[i + 1] - g) < 8 && Math.abs(data[i + 2] - b) < 8) n++;
            return n;
        }""",
        list(ARROW_RGB),
    )


@pytest.fixture
def job(user):
    job = parse_job(
        user,
        "resnet-ddp",
        [("algo-1", 0, "gpu_training_rank0.pt.trace.json.gz")],
        status="completed",
    )
    LoadedProfile.objects.create(user=user, job=job)
    return job


def test_it_zooms_selects_a_kernel_and_shows_its_launch(live_server, tab, job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/timeline")
    wait_for_paint(tab)
    tree = tab.get_by_role("list", name="Timeline tracks")
    for label in (
        "algo-1",
        "GPUs",
        "HOST-0 PID-1102",
        "GPU-0 utilisation",
        "GPU-0 device",
        "stream 7",
        "GPU-0 host",
    ):
        expect(tree.get_by_text(label, exact=True)).to_be_visible()
    screenshot(tab, "timeline-overview")

    start, end = view_range(tab)
    tab.locator("[data-testid=timeline-canvas]").hover()

    # Holding W zooms while it is held, until the view is a third as wide.
    zoomed = hold_until(tab, "w", lambda shown: shown[1] - shown[0] < (end - start) / 3)
    assert zoomed[1] - zoomed[0] < (end - start) / 3

    pane = select_by_search(tab, KERNEL)
    # Click the kernel itself: the search centred it on the stream's row.
    stream_row = tab.locator("[data-track='algo-1/1102/gpu0/s7']")
    canvas = tab.locator("[data-testid=timeline-canvas]").bounding_box()
    row = stream_row.bounding_box()
    tab.keyboard.press("Escape")
    expect(pane).to_contain_text("Click an event on the timeline")
    selected = pane.get_by_label("Selected")

    def clicked_the_kernel() -> bool:
        # Until the view the search centred has its events drawn, a click there finds nothing
        # under it (a loaded machine draws later): click again until it selects the kernel.
        tab.mouse.click(canvas["x"] + canvas["width"] / 2, row["y"] + 11)
        return selected.count() > 0 and KERNEL in selected.inner_text()

    wait_until(clicked_the_kernel, "a click on the kernel to select it")
    expect(selected).to_contain_text(KERNEL)
    expect(selected).to_contain_text("algo-1 › GPUs › HOST-0 PID-1102 › GPU-0 device › stream 7")
    expect(pane.get_by_label("Connected launch")).to_contain_text("cudaLaunchKernel")
    expect(pane.get_by_label("Latency")).to_contain_text("Launch latency")
    wait_until(lambda: arrow_pixels(tab) > 40, "the arrow to be drawn")
    screenshot(tab, "timeline-kernel-selected")

    tab.mouse.move(canvas["x"] + canvas["width"] / 2, row["y"] + 11)
    tooltip = tab.get_by_test_id("timeline-tooltip")
    expect(tooltip).to_contain_text(KERNEL)
    expect(tooltip).to_contain_text("Grid / block")
    screenshot(tab, "timeline-tooltip")

    focused = view_range(tab)
    zoomed_out = hold_until(tab, "s", lambda shown: shown[1] - shown[0] > focused[1] - focused[0])
    tab.keyboard.press("f")
    # F frames the selection again: a narrower view than the zoomed-out one, around it.
    expect(tab).not_to_have_url(re.compile(rf"t={zoomed_out[0]}_{zoomed_out[1]}"))
    framed = view_range(tab)
    assert framed[1] - framed[0] < zoomed_out[1] - zoomed_out[0]

    pane.get_by_role("tab", name="Connections").click()
    first = pane.get_by_role("row").nth(1)
    expect(first.get_by_role("cell").first).to_have_text(re.compile(r"^cuda"))
    run_name = first.get_by_role("cell").nth(2).inner_text()
    screenshot(tab, "timeline-connections")
    first.click()
    pane.get_by_role("tab", name="Current selection").click()
    expect(pane.get_by_label("Selected")).to_contain_text(run_name)


def test_it_lists_the_keyboard_shortcuts(live_server, tab, job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/timeline")
    wait_for_paint(tab)
    tab.get_by_role("button", name="Keyboard shortcuts").click()
    panel = tab.get_by_role("complementary", name="Keyboard shortcuts")
    for keys in ("W / ↑", "S / ↓", "A / ←", "D / →", "F"):
        expect(panel.get_by_role("rowheader", name=keys, exact=True)).to_be_visible()
    screenshot(tab, "timeline-shortcuts")


def test_it_opens_a_shared_link_on_the_same_view(live_server, new_tab, job, teammate):
    alice = new_tab()
    sign_in(alice, live_server.url, "alice", "alice-password-1", path="/timeline")
    wait_for_paint(alice)
    alice.get_by_placeholder("Search events by name").fill(KERNEL)
    alice.get_by_role("option").first.click()
    expect(alice).to_have_url(re.compile(r"sel=\d+(%3A|:)\d+"))
    link = alice.url

    bob = new_tab()
    sign_in(
        bob,
        live_server.url,
        "bob",
        "bob-password-1",
        path=urlparse(link).path + "?" + urlparse(link).query,
    )
    wait_for_paint(bob)
    expect(
        bob.get_by_role("region", name="Selection details").get_by_label("Selected")
    ).to_contain_text(KERNEL)
    assert view_range(bob) == view_range(alice)
    screenshot(bob, "timeline-shared-link")
