"""The catalog tells each job's state as its parts and uploads do: failed, partly failed, an
upload interrupted, which its owner finishes or abandons."""

import io
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from profiler_app.core import logic
from profiler_app.core.models import JobStatus, PartState, ProfilePart, TrainingJob, Upload
from tests.conftest import DATA_DIR
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import add_part, make_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def stopped_upload(job: TrainingJob, name: str, sent: bytes, size: int) -> Upload:
    upload = Upload.objects.create(
        job=job,
        owner=job.owner,
        node_name="algo-1",
        kind="kineto",
        original_name=name,
        size_bytes=size,
    )
    logic.append_to_upload(upload, 0, io.BytesIO(sent), len(sent))
    Upload.objects.filter(pk=upload.pk).update(last_byte_at=timezone.now() - timedelta(minutes=10))
    return upload


def test_it_shows_failed_partial_and_interrupted_jobs_and_ends_uploads(live_server, tab, user):
    now = timezone.now()
    lone = make_job("lone-failed", owner=user, created_at=now - timedelta(minutes=4))
    add_part(lone, "algo-1", rank=0, state=PartState.FAILED, error="not a trace")
    some = make_job("some-failed", owner=user, created_at=now - timedelta(minutes=3))
    for rank, state in enumerate([PartState.FAILED] * 2 + [PartState.DONE] * 3):
        add_part(some, "algo-1", rank=rank, state=state)
    # A real trace: a worker of another test may parse the finished part (an empty one fails).
    whole = (DATA_DIR / "cpu_only_rank34.pt.trace.json.gz").read_bytes()
    kept = make_job(
        "kept", owner=user, status=JobStatus.IN_PROGRESS, created_at=now - timedelta(minutes=2)
    )
    stopped_upload(kept, "rank0.json.gz", whole, len(whole))
    gone = make_job(
        "gone", owner=user, status=JobStatus.IN_PROGRESS, created_at=now - timedelta(minutes=1)
    )
    stopped_upload(gone, "rank0.json.gz", b"x" * 600_000, 1_000_000)

    sign_in(tab, live_server.url, "alice", "alice-password-1", "/profiles")
    row = lambda name: tab.get_by_role("row", name=name)  # noqa: E731
    expect(row("lone-failed").get_by_text("Failed", exact=True)).to_be_visible()
    expect(row("lone-failed").get_by_text("1 of 1 part failed")).to_be_visible()
    expect(row("some-failed").get_by_text("Partly failed")).to_be_visible()
    expect(row("some-failed").get_by_text("2 of 5 parts failed")).to_be_visible()
    expect(row("gone").get_by_text("Upload interrupted")).to_be_visible()
    expect(row("gone").get_by_text("1 upload stopped: 600 kB of 1.0 MB arrived")).to_be_visible()
    expect(row("kept").get_by_text("Upload interrupted")).to_be_visible()
    screenshot(tab, "catalog-states")

    tab.get_by_label("Failed", exact=True).click()
    expect(tab.locator(".jobs-table tbody .job-name")).to_have_text(["some-failed", "lone-failed"])
    tab.get_by_role("button", name="Clear filters").click()
    expect(tab.locator(".jobs-table tbody .job-name")).to_have_count(4)

    tab.get_by_role("button", name="Finish the upload of kept").click()
    expect(row("kept").get_by_text("Completed", exact=True)).to_be_visible()
    assert ProfilePart.objects.get(job=kept).file.read() == whole
    # Abandoning cannot be undone: it asks first, and Cancel leaves the upload as it was.
    tab.get_by_role("button", name="Abandon the upload of gone").click()
    dialog = tab.get_by_role("dialog", name="Abandon the upload of gone?")
    expect(dialog.get_by_test_id("abandon-size")).to_have_text("600 kB of 1.0 MB")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    assert Upload.objects.filter(job=gone).exists()
    tab.get_by_role("button", name="Abandon the upload of gone").click()
    screenshot(tab, "catalog-abandon-dialog")
    dialog.get_by_role("button", name="Abandon upload").click()
    expect(dialog).to_have_count(0)
    expect(row("gone").get_by_text("Stopped", exact=True)).to_be_visible()
    assert not Upload.objects.exists()
    expect(tab.get_by_role("button", name="Finish the upload of kept")).to_have_count(0)
    screenshot(tab, "catalog-states-ended")
