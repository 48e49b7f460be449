"""Uploading traces from the Profiles page in headless Chromium: dropped files become the parts
of a new job through the resumable ranged-upload API, a range refused once is resumed, and a
cancelled upload leaves nothing on the server."""

import base64
import hashlib
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from profiler_app.core.models import JobStatus, PartState, ProfilePart, TrainingJob, Upload
from tests.conftest import DATA_DIR
from tests.core.disk import upload_file
from tests.e2e.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RANK_0 = DATA_DIR / "multirank_sampled" / "rank-0.json.gz"
RANK_1 = DATA_DIR / "multirank_sampled" / "rank-1.json.gz"
CHUNK = 8 * 1024 * 1024  # the page's range size
UPLOAD_URL = re.compile(r"/api/uploads/[0-9a-f-]+/$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def drop_files(page: Page, files: dict[str, bytes]) -> None:
    """Drops files on the upload area as a file manager would: a DataTransfer holding them,
    dragged over and dropped."""
    transfer = page.evaluate_handle(
        """(files) => {
            const transfer = new DataTransfer();
            for (const [name, b64] of Object.entries(files)) {
                const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
                transfer.items.add(new File([bytes], name, { type: "application/gzip" }));
            }
            return transfer;
        }""",
        {name: base64.b64encode(data).decode() for name, data in files.items()},
    )
    zone = page.get_by_test_id("upload-drop-zone")
    zone.dispatch_event("dragenter", {"dataTransfer": transfer})
    zone.dispatch_event("dragover", {"dataTransfer": transfer})
    expect(zone).to_have_class(re.compile("drop-over"))
    zone.dispatch_event("drop", {"dataTransfer": transfer})


class HeldRanges:
    """Holds the browser's range PUTs until released (other requests pass), and records them."""

    def __init__(self, page: Page) -> None:
        self.held: list[Route] = []
        self.ranges: list[str] = []
        self.page = page
        page.route(UPLOAD_URL, self.handle)

    def handle(self, route: Route) -> None:
        if route.request.method != "PUT":
            route.continue_()
            return
        self.ranges.append(route.request.headers["content-range"])
        self.held.append(route)

    def release(self) -> None:
        for route in self.held:
            route.continue_()
        self.held.clear()
        self.page.unroute(UPLOAD_URL, self.handle)


def poll(page: Page, predicate, timeout_ms: int = 20_000) -> None:
    """Waits for predicate() while the page runs (route handlers only run inside Playwright)."""
    for _ in range(timeout_ms // 100):
        if predicate():
            return
        page.wait_for_timeout(100)
    raise AssertionError("condition not met in time")


def job_row(page: Page, name: str):
    return page.locator(".jobs-table tbody tr", has_text=name)


def test_it_uploads_dropped_traces_of_two_ranks_into_a_new_job(
    live_server, tab, user, celery_worker_process
):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/profiles")
    held = HeldRanges(tab)
    # Named so that only the traces' distributedInfo can tell their ranks.
    rank_1, rank_0 = RANK_1.read_bytes(), RANK_0.read_bytes()
    drop_files(tab, {"trace-a.json.gz": rank_1, "trace-b.json.gz": rank_0})

    table = tab.get_by_role("table", name="Files to upload")
    expect(tab.get_by_label("Rank of trace-a.json.gz")).to_have_value("1")
    expect(tab.get_by_label("Rank of trace-b.json.gz")).to_have_value("0")
    expect(table.get_by_text("from the trace")).to_have_count(2)
    tab.get_by_label("New job name").fill("two-rank-upload")
    tab.get_by_role("button", name="Upload 2 files").click()

    # The job is listed at once, In Progress, while its first file is on its way.
    expect(job_row(tab, "two-rank-upload").get_by_text("In Progress")).to_be_visible()
    job = TrainingJob.objects.get(name="two-rank-upload")
    assert (job.status, job.owner, job.instance_count) == (JobStatus.IN_PROGRESS, user, 1)
    first = table.locator("tr", has_text="trace-a.json.gz")
    expect(first.get_by_test_id("upload-progress")).to_contain_text(
        f"0 B of {len(rank_1) / 1000:.0f} kB (0%)"
    )
    expect(table.locator("tr", has_text="trace-b.json.gz")).to_contain_text("Waiting")
    expect(tab.get_by_label("Rank of trace-a.json.gz")).to_be_disabled()
    screenshot(tab, "upload-in-progress")
    held.release()

    expect(first).to_contain_text("Uploaded · parsed", timeout=120_000)
    expect(table.locator("tr", has_text="trace-b.json.gz")).to_contain_text(
        "Uploaded · parsed", timeout=120_000
    )
    row = job_row(tab, "two-rank-upload")
    expect(row.get_by_text("Completed")).to_be_visible()
    expect(row.get_by_text("2/2")).to_be_visible()
    expect(tab.get_by_test_id("upload-target")).to_contain_text("2 of 2 parts parsed")
    screenshot(tab, "upload-parsed")

    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED
    parts = {p.original_name: p for p in job.parts.select_related("node")}
    assert {name: (p.rank, p.node.name, p.kind, p.state) for name, p in parts.items()} == {
        "trace-a.json.gz": (1, "algo-1", "kineto", PartState.DONE),
        "trace-b.json.gz": (0, "algo-1", "kineto", PartState.DONE),
    }
    assert parts["trace-a.json.gz"].sha256 == sha256(rank_1)
    assert parts["trace-b.json.gz"].sha256 == sha256(rank_0)
    assert not Upload.objects.exists()


def test_it_resumes_ranges_the_network_dropped_or_the_server_refused(
    live_server, tab, user, tmp_path: Path
):
    existing = TrainingJob.objects.create(name="long-run", owner=user)
    big = tmp_path / "worker-rank7.pt.trace.json.gz"
    content = os.urandom(2 * CHUNK + 12_345)
    big.write_bytes(content)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/profiles")

    sent: list[str] = []

    def blip(route: Route) -> None:
        request = route.request
        sent.append(f"{request.method} {request.headers.get('content-range', '')}".strip())
        if len(sent) == 2:  # the second range: the connection drops
            route.abort("connectionreset")
        elif len(sent) == 5:  # the third range: the server refuses it once
            route.fulfill(status=503, json={"detail": "Service Unavailable"})
        else:
            route.continue_()

    tab.route(UPLOAD_URL, blip)
    tab.get_by_label("Trace files").set_input_files(str(big))
    expect(tab.get_by_label(f"Rank of {big.name}")).to_have_value("7")
    expect(tab.get_by_test_id("upload-row")).to_contain_text("from the name")
    tab.get_by_label("Existing job").check()
    tab.get_by_label("Job to add to").select_option(label="long-run")
    tab.get_by_role("button", name="Upload 1 file").click()

    row = tab.get_by_test_id("upload-row")
    expect(row).to_contain_text("Resuming in", timeout=20_000)
    screenshot(tab, "upload-resuming")
    expect(row).to_contain_text("Uploaded", timeout=60_000)
    total = len(content)
    middle, last = (
        f"bytes {CHUNK}-{2 * CHUNK - 1}/{total}",
        f"bytes {2 * CHUNK}-{total - 1}/{total}",
    )
    # Each failed range is sent again from the byte the server says it holds: never from 0.
    assert sent == [
        f"PUT bytes 0-{CHUNK - 1}/{total}",
        f"PUT {middle}",
        "GET",
        f"PUT {middle}",
        f"PUT {last}",
        "GET",
        f"PUT {last}",
    ]
    part = ProfilePart.objects.get(job=existing)
    assert (part.rank, part.original_name, part.size_bytes) == (7, big.name, total)
    assert part.sha256 == sha256(content)
    assert sha256(part.file.read()) == sha256(content)
    existing.refresh_from_db()
    assert existing.status == JobStatus.IN_PROGRESS  # a job it did not create keeps its status


def test_it_cancels_uploads_and_leaves_nothing_on_the_server(live_server, tab, user):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/profiles")
    held = HeldRanges(tab)
    drop_files(tab, {"rank-0.json.gz": RANK_0.read_bytes(), "rank-1.json.gz": RANK_1.read_bytes()})
    tab.get_by_label("New job name").fill("cancelled-upload")
    tab.get_by_role("button", name="Upload 2 files").click()

    # The first file's range is on its way (held): the server holds an upload for it.
    poll(tab, lambda: len(held.held) == 1)
    upload = Upload.objects.get()
    assert upload.original_name == "rank-0.json.gz"
    tab.get_by_role("button", name="Cancel rank-0.json.gz").click()
    table = tab.get_by_role("table", name="Files to upload")
    expect(table.locator("tr", has_text="rank-0.json.gz")).to_contain_text("Cancelled")
    poll(tab, lambda: not Upload.objects.filter(pk=upload.pk).exists())
    assert not upload_file(upload).exists()

    # The second file starts; cancelling all stops it too.
    poll(tab, lambda: len(held.held) == 2)
    second = Upload.objects.get()
    assert second.original_name == "rank-1.json.gz"
    tab.get_by_role("button", name="Cancel all").click()
    expect(table.locator("tr", has_text="rank-1.json.gz")).to_contain_text("Cancelled")
    job = TrainingJob.objects.get(name="cancelled-upload")
    poll(tab, lambda: TrainingJob.objects.get(pk=job.pk).status == JobStatus.STOPPED)
    expect(job_row(tab, "cancelled-upload").get_by_text("Stopped")).to_be_visible()
    expect(tab.get_by_role("button", name="Upload 2 files to cancelled-upload")).to_be_enabled()
    screenshot(tab, "upload-cancelled")
    for route in held.held:  # the browser gave these up: nothing reaches the server
        route.abort()
    assert not Upload.objects.exists()
    assert not ProfilePart.objects.exists()
    assert not upload_file(second).exists()
