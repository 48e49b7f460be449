"""Retention: the preview lists exactly what is past the day counts, and the daily task deletes
exactly that, freeing the bytes previewed; the settings, the preview and the disk use are
staff's or everyone's as the Settings page shows them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from profiler_app.core import storage
from profiler_app.core.models import AppSettings, PartState, ProfilePart, TrainingJob
from profiler_app.core.tasks import apply_retention
from profiler_app.profiles.models import PartSummary
from tests.conftest import wait_for
from tests.core.disk import data_bytes, data_files, insights_settled
from tests.core.test_delete_frees_disk import TRACES, upload

PREVIEW = "/api/settings/retention/preview/"
DAY = timedelta(days=1)


def age(job: TrainingJob, created_days: float, parts_days: list[float]) -> None:
    """Sets the job's creation and each of its parts' upload this many days ago."""
    now = timezone.now()
    TrainingJob.objects.filter(pk=job.pk).update(created_at=now - created_days * DAY)
    for part, days in zip(job.parts.order_by("id"), parts_days, strict=True):
        ProfilePart.objects.filter(pk=part.pk).update(created_at=now - days * DAY)


def files_of(job_id: int, files: dict[str, int]) -> set[str]:
    return {name for name in files if name.startswith((f"parts/{job_id}/", f"timeline/{job_id}/"))}


@pytest.fixture
def catalog(celery_worker_process, user, client_for):
    """Jobs of several ages, parsed by the worker; then their times set."""
    owner = client_for(user)
    jobs = {}
    for name, traces in [
        ("ancient", TRACES),
        ("old-but-active", [*TRACES, "nccl_rank0.json.gz"]),
        ("recent", TRACES[:1]),
        ("old-empty", []),
    ]:
        jobs[name] = job = TrainingJob.objects.create(name=name, owner=user)
        for rank, trace in enumerate(traces):
            upload(owner, job, trace, rank)

    def all_parsed():
        return set(ProfilePart.objects.values_list("state", flat=True)) == {PartState.DONE}

    wait_for(all_parsed, timeout=180)
    for job in jobs.values():
        wait_for(lambda job=job: insights_settled(job.pk), timeout=300)
    age(jobs["ancient"], 400, [400, 399])
    # Created long ago, but a part arrived 10 days ago: active. Its part of 60 days ago failed
    # (a failed part keeps its raw file, to be reprocessed).
    age(jobs["old-but-active"], 400, [400, 60, 10])
    failed = jobs["old-but-active"].parts.order_by("id")[1]
    ProfilePart.objects.filter(pk=failed.pk).update(state=PartState.FAILED, error="boom")
    age(jobs["recent"], 20, [20])
    age(jobs["old-empty"], 100, [])
    return jobs


def set_retention(raw_days, jobs_days) -> None:
    AppSettings.objects.update_or_create(
        pk=1, defaults={"retention_raw_days": raw_days, "retention_jobs_days": jobs_days}
    )


@pytest.mark.django_db(transaction=True)
def test_it_deletes_exactly_what_the_preview_lists(catalog, staff, client_for):
    set_retention(raw_days=30, jobs_days=90)
    admin = client_for(staff)
    before = data_files()
    ancient, active = catalog["ancient"], catalog["old-but-active"]
    old_raw = active.parts.order_by("id").first()
    old_raw_file = old_raw.file.name

    preview = admin.get(PREVIEW).json()

    assert [job["name"] for job in preview["jobs"]] == ["ancient", "old-empty"]
    ancient_bytes = sum(before[name] for name in files_of(ancient.pk, before))
    assert [(j["owner"], j["bytes"]) for j in preview["jobs"]] == [
        ("alice", ancient_bytes),
        ("alice", 0),
    ]
    assert [(r["part"], r["job_name"], r["file"], r["bytes"]) for r in preview["raw_files"]] == [
        (old_raw.pk, "old-but-active", TRACES[0], old_raw.size_bytes)
    ]
    assert preview["total_bytes"] == ancient_bytes + old_raw.size_bytes
    assert (preview["retention_raw_days"], preview["retention_jobs_days"]) == (30, 90)

    freed = apply_retention.apply().get()

    after = data_files()
    assert freed == preview["total_bytes"] == sum(before.values()) - data_bytes()
    assert set(before) - set(after) == files_of(ancient.pk, before) | {old_raw_file}
    assert not set(after) - set(before)
    assert sorted(TrainingJob.objects.values_list("name", flat=True)) == [
        "old-but-active",
        "recent",
    ]
    # The part whose raw file went keeps its parsed data; reprocessing it says why it cannot.
    old_raw.refresh_from_db()
    assert (old_raw.file.name, old_raw.state) == ("", PartState.DONE)
    assert PartSummary.objects.filter(part=old_raw).exists()
    assert admin.get(f"/api/jobs/{active.pk}/summary/").status_code == 200
    for refused in (
        admin.post(f"/api/parts/{old_raw.pk}/reprocess/"),
        admin.get(f"/api/parts/{old_raw.pk}/download/"),
    ):
        assert refused.status_code in (404, 409)
        assert refused.json()["code"] == "raw_file_gone"
        assert refused.json()["detail"].startswith("The raw file of this part is no longer stored")
    # Nothing is left to go: a second run frees nothing.
    assert admin.get(PREVIEW).json()["total_bytes"] == 0
    assert apply_retention.apply().get() == 0


@pytest.mark.django_db(transaction=True)
def test_it_keeps_everything_while_retention_is_off(catalog, staff, client_for):
    before = data_files()
    assert AppSettings.load().retention_raw_days is None
    preview = client_for(staff).get(PREVIEW).json()
    assert preview == {
        "retention_raw_days": None,
        "retention_jobs_days": None,
        "jobs": [],
        "raw_files": [],
        "total_bytes": 0,
    }
    assert apply_retention.apply().get() == 0
    assert data_files() == before
    assert TrainingJob.objects.count() == 4
    # Day counts typed on the page but not saved yet are previewed, never applied.
    typed = client_for(staff).get(PREVIEW, {"retention_jobs_days": 90, "retention_raw_days": ""})
    assert [job["name"] for job in typed.json()["jobs"]] == ["ancient", "old-empty"]
    assert typed.json()["raw_files"] == []
    assert apply_retention.apply().get() == 0
    assert TrainingJob.objects.count() == 4


@pytest.mark.django_db
def test_only_staff_preview_and_set_retention(user, staff, client_for):
    assert client_for(None).get(PREVIEW).status_code == 401
    refused = client_for(user).get(PREVIEW)
    assert (refused.status_code, refused.json()["detail"]) == (
        403,
        "Only staff members can see this.",
    )
    body = {"retention_raw_days": 30, "retention_jobs_days": 365}
    assert client_for(user).put("/api/settings/", body, format="json").status_code == 403
    saved = client_for(staff).put("/api/settings/", body, format="json")
    assert saved.status_code == 200
    assert (saved.json()["retention_raw_days"], saved.json()["retention_jobs_days"]) == (30, 365)
    assert client_for(user).get("/api/settings/").json()["retention_jobs_days"] == 365
    off = client_for(staff).put("/api/settings/", {"retention_raw_days": None}, format="json")
    assert (off.json()["retention_raw_days"], off.json()["retention_jobs_days"]) == (None, 365)


@pytest.mark.parametrize(
    ("days", "message"),
    [
        (0, "Keep things at least 1 day, or leave the field empty to keep them forever."),
        (40_000, "At most 36500 days (100 years); leave the field empty to keep them forever."),
        ("soon", "Enter a whole number of days, or leave the field empty."),
    ],
)
@pytest.mark.django_db
def test_it_refuses_bad_day_counts(staff, client_for, days, message):
    admin = client_for(staff)
    response = admin.put("/api/settings/", {"retention_jobs_days": days}, format="json")
    assert (response.status_code, response.json()) == (400, {"retention_jobs_days": [message]})
    preview = admin.get(PREVIEW, {"retention_raw_days": days})
    assert (preview.status_code, preview.json()) == (
        400,
        {"retention_raw_days": ["Enter a whole number of days from 1 to 36500, or nothing."]},
    )
    assert AppSettings.load().retention_jobs_days is None


@pytest.mark.django_db(transaction=True)
def test_it_reports_the_data_directorys_disk_use(catalog, user, client_for):
    files = data_files()
    body = client_for(user).get("/api/settings/disk-use/").json()
    assert body["raw_bytes"] == sum(s for n, s in files.items() if n.startswith("parts/"))
    assert body["stores_bytes"] == sum(s for n, s in files.items() if n.startswith("timeline/"))
    assert body["uploads_bytes"] == storage.tree_bytes(storage.uploads_dir())
    assert body["total_bytes"] == body["raw_bytes"] + body["stores_bytes"] + body["uploads_bytes"]
    assert 0 < body["free_bytes"] < body["capacity_bytes"]
    assert client_for(None).get("/api/settings/disk-use/").status_code == 401
