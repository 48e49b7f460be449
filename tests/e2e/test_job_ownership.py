"""A team's jobs in headless Chromium: the owner renames, tags, filters by tag and deletes (its
disk space measured back); a teammate sees no such actions; staff preview retention."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from tests.conftest import DATA_DIR, wait_for
from tests.core.disk import data_files, insights_settled
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import add_part, make_job
from tests.ingest.helpers import wait_parsed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"


@pytest.fixture
def team(user, teammate, celery_worker_process):
    """Alice's parsed job (real files on disk), and rows of Alice's and Bob's."""
    now = timezone.now()
    before = data_files()
    parsed = TrainingJob.objects.create(name="resnet-run", owner=user, status="completed")
    with TRACE.open("rb") as f:
        part, _ = store_part(parsed, PartSource("algo-1", 0, "kineto", TRACE.name), f)
    [done] = wait_parsed(part.id)
    assert done.state == PartState.DONE, done.error
    wait_for(lambda: insights_settled(parsed.pk), timeout=300)
    bert = make_job("bert-pretrain", owner=user, created_at=now - timedelta(days=2))
    bert.tags = ["nlp"]
    bert.save()
    old = add_part(bert, "algo-1", rank=0, size_bytes=31_000_000)
    ProfilePart.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=2))
    gpt = make_job("gpt2-bob", owner=teammate, created_at=now - timedelta(days=1))
    gpt.tags = ["nlp", "h100"]
    gpt.save()
    make_job("ancient-sweep", owner=teammate, created_at=now - timedelta(days=400))
    return {"before": before, "parsed": parsed}


def row(page: Page, name: str):
    return page.locator(".jobs-table tbody tr").filter(has=page.locator(".job-name", has_text=name))


def expect_jobs(page: Page, names: list[str]) -> None:
    expect(page.locator(".jobs-table tbody .job-name")).to_have_text(names)


def test_the_owner_renames_tags_filters_and_deletes(live_server, tab, user, team):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    expect_jobs(tab, ["resnet-run", "gpt2-bob", "bert-pretrain", "ancient-sweep"])
    expect(row(tab, "gpt2-bob").get_by_role("cell", name="bob", exact=True)).to_be_visible()

    # Rename and tag.
    row(tab, "resnet-run").get_by_role("button", name="Edit resnet-run").click()
    dialog = tab.get_by_role("dialog", name="Edit resnet-run")
    dialog.get_by_label("Name").fill("resnet50-lr-sweep")
    dialog.get_by_label("Tags").fill("vision, a100")
    dialog.get_by_label("Notes").fill("LR 0.1 diverges after epoch 3.")
    screenshot(tab, "profiles-edit-job")
    dialog.get_by_role("button", name="Save changes").click()
    expect(dialog).to_have_count(0)
    renamed = row(tab, "resnet50-lr-sweep")
    expect(renamed.get_by_role("button", name="vision")).to_be_visible()
    expect(renamed).to_contain_text("LR 0.1 diverges after epoch 3.")
    job = TrainingJob.objects.get(pk=team["parsed"].pk)
    assert (job.name, job.tags) == ("resnet50-lr-sweep", ["vision", "a100"])
    screenshot(tab, "profiles-owner-and-tags")

    # Filter by a tag: the URL holds it, a reload keeps it.
    tab.get_by_label("Filter by tag").select_option("nlp")
    expect_jobs(tab, ["gpt2-bob", "bert-pretrain"])
    expect(tab).to_have_url(live_server.url + "/profiles?tag=nlp")
    tab.get_by_label("Mine", exact=True).click()
    expect_jobs(tab, ["bert-pretrain"])
    tab.reload()
    expect(tab.get_by_label("Mine", exact=True)).to_be_checked()
    expect(tab.get_by_role("button", name="Remove the tag filter nlp")).to_be_visible()
    expect_jobs(tab, ["bert-pretrain"])
    screenshot(tab, "profiles-filtered-by-tag")
    tab.get_by_role("button", name="Clear filters").click()
    expect_jobs(tab, ["resnet50-lr-sweep", "gpt2-bob", "bert-pretrain", "ancient-sweep"])

    # Delete through the confirmation dialog: the disk space comes back.
    assert sum(data_files().values()) > sum(team["before"].values())
    row(tab, "resnet50-lr-sweep").get_by_role("button", name="Delete resnet50-lr-sweep").click()
    confirm = tab.get_by_role("dialog", name="Delete resnet50-lr-sweep?")
    expect(confirm).to_contain_text("This deletes the job resnet50-lr-sweep for everyone")
    expect(confirm.get_by_test_id("delete-size")).to_have_text("1.2 MB")
    screenshot(tab, "profiles-delete-dialog")
    confirm.get_by_role("button", name="Delete job").click()
    expect(confirm).to_have_count(0)
    expect_jobs(tab, ["gpt2-bob", "bert-pretrain", "ancient-sweep"])
    assert not TrainingJob.objects.filter(pk=job.pk).exists()
    assert data_files() == team["before"]


def test_a_teammate_sees_no_edit_or_delete_on_others_jobs(live_server, tab, teammate, team):
    sign_in(tab, live_server.url, "bob", "bob-password-1")
    expect_jobs(tab, ["resnet-run", "gpt2-bob", "bert-pretrain", "ancient-sweep"])
    alices = row(tab, "resnet-run")
    expect(alices.get_by_role("cell", name="alice", exact=True)).to_be_visible()
    expect(alices.get_by_role("button", name="Edit resnet-run")).to_have_count(0)
    expect(alices.get_by_role("button", name="Delete resnet-run")).to_have_count(0)
    expect(tab.get_by_role("button", name="Delete bert-pretrain")).to_have_count(0)
    expect(row(tab, "gpt2-bob").get_by_role("button", name="Edit gpt2-bob")).to_be_visible()
    screenshot(tab, "profiles-teammate")


def test_staff_preview_retention_and_see_the_disk_use(live_server, tab, staff, team):
    sign_in(tab, live_server.url, "carol", "carol-password-1", path="/settings")
    expect(tab.get_by_test_id("disk-use")).to_contain_text("Raw uploads")
    expect(tab.get_by_test_id("retention-preview")).to_contain_text("Nothing")
    tab.get_by_label("Delete inactive jobs after (days)").fill("90")
    preview = tab.get_by_role("table", name="Jobs to delete")
    expect(preview).to_contain_text("ancient-sweep")
    expect(preview.locator("tbody tr")).to_have_count(1)
    expect(tab.get_by_test_id("retention-preview")).to_contain_text(
        "1 job and 0 raw files, freeing 0 B."
    )
    tab.get_by_label("Delete raw uploads after (days)").fill("1")
    expect(tab.get_by_role("table", name="Raw files to delete")).to_contain_text("bert-pretrain")
    tab.get_by_role("heading", name="Retention").scroll_into_view_if_needed()
    screenshot(tab, "settings-retention")
    # Nothing is saved, so nothing goes.
    assert TrainingJob.objects.filter(name="ancient-sweep").exists()
