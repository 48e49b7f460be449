"""Profiles kept in an S3 bucket (moto's real S3 API on loopback), this process as both web and
worker: a part parsed into the bucket, a timeline read from a cold cache fetching only what the
view needs, and a deleted job leaving nothing in the bucket (resumable uploads:
test_ranged_upload)."""

import hashlib
import io
import os
import random
import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.core.files import File

from profiler_app.core import bucket as bucket_module
from profiler_app.core import logic, storage, store_cache
from profiler_app.core.bucket import Bucket
from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob
from profiler_app.ingest import logic as ingest
from profiler_app.lib import bucket_url
from profiler_app.profiles.models import KernelStat, PartSummary
from profiler_app.profiles.store_products import upgrade_stores
from profiler_app.timeline import logic as timeline
from profiler_app.timeline.pure.index import INDEX_DIR_NAME
from profiler_app.traces.event_model import MODEL_COLUMNS
from profiler_app.traces.store_layout import EVENTS_FILE, MANIFEST_FILE
from tests.conftest import DATA_DIR
from tests.storage import s3

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = DATA_DIR / "multirank_sampled" / "rank-0.json.gz"
MiB = 1024 * 1024


def parsed_in_bucket(user, name: str) -> ProfilePart:
    """A part whose raw file went to the bucket, parsed by this process as a worker would
    (no task queued: a worker of another test's storage must not take it)."""
    job = TrainingJob.objects.create(name=name, owner=user)
    node = Node.objects.create(job=job, name="algo-1")
    raw = TRACE.read_bytes()
    part = ProfilePart(
        job=job,
        node=node,
        rank=0,
        kind="kineto",
        original_name=TRACE.name,
        size_bytes=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    part.file.save(TRACE.name, File(io.BytesIO(raw)), save=True)
    assert ingest.claim(part.pk, "bucket-task")
    assert ingest.parse_claimed_part(part.pk, "bucket-task")
    part.refresh_from_db()
    assert part.state == PartState.DONE, part.error
    return part


def test_a_part_parsed_into_the_bucket_is_read_back_from_a_cold_cache(
    in_bucket, s3_endpoint, bucket, user, api, settings
):
    part = parsed_in_bucket(user, "in-bucket")
    summary = PartSummary.objects.get(part=part)
    key = f"timeline/{part.job_id}/{part.pk}/bucket-task"
    assert summary.store_path == key
    stored = s3.keys(s3_endpoint, bucket, "profiles/")
    assert f"profiles/parts/{part.job_id}/{part.sha256}-{TRACE.name}" in stored
    assert f"profiles/{key}/events.parquet" in stored
    assert f"profiles/{key}/{INDEX_DIR_NAME}/meta.json" in stored
    assert not (Path(settings.MEDIA_ROOT) / "parts" / str(part.job_id)).exists()
    assert storage.job_raw_bytes(part.job_id) == TRACE.stat().st_size

    # Another machine: nothing cached. The timeline opens from the index's meta and the few
    # arrays a whole-job view reads; the events file stays in the bucket.
    shutil.rmtree(store_cache.root())
    timeline.part_index.cache_clear()
    tree = api.get(f"/api/jobs/{part.job_id}/timeline/tracks/").json()
    view = api.get(
        f"/api/jobs/{part.job_id}/timeline/viewport/",
        {
            "start_ns": tree["start_ns"],
            "end_ns": str(int(tree["end_ns"]) + 1),
            "width_px": 1000,
            "tracks": ",".join(root["id"] for root in tree["tracks"]),
        },
    )
    assert view.status_code == 200, view.content
    cached = store_cache.folder_of(key)
    assert (cached / INDEX_DIR_NAME / "meta.json").exists()
    assert not (cached / "events.parquet").exists()
    fetched = sorted(p.name for p in (cached / INDEX_DIR_NAME).iterdir())
    assert len(fetched) < len(
        list(s3.keys(s3_endpoint, bucket, f"profiles/{key}/{INDEX_DIR_NAME}/"))
    )

    # The kernels table and a store-wide read (the folder) agree with what the parse stored.
    kernels = KernelStat.objects.filter(part=part).count()
    assert kernels > 0
    assert (summary.fetch_store() / "events.parquet").exists()


def test_deleting_a_job_empties_its_keys_and_cache(in_bucket, s3_endpoint, bucket, user):
    part = parsed_in_bucket(user, "to-delete")
    job_id = part.job_id
    assert s3.keys(s3_endpoint, bucket, f"profiles/timeline/{job_id}/")
    logic.delete_job(TrainingJob.objects.get(pk=job_id))
    assert s3.keys(s3_endpoint, bucket, "profiles/") == []
    assert not (store_cache.root() / "timeline" / str(job_id)).exists()


def test_kept_insights_results_are_in_the_bucket_for_every_worker_and_go_with_the_job(
    in_bucket, s3_endpoint, bucket, user, monkeypatch
):
    from profiler_app.insights import logic as insights
    from profiler_app.insights import rank_results
    from profiler_app.insights.models import InsightsStatus, JobInsights
    from profiler_app.traces.window import WHOLE_TRACE

    part = parsed_in_bucket(user, "kept insights")
    job_id = part.job_id
    stores = storage.job_store_bytes(job_id)
    read: list[int] = []
    real = rank_results.read_rank
    monkeypatch.setattr(
        rank_results, "read_rank", lambda rank, *a: read.append(rank) or real(rank, *a)
    )

    def run() -> dict:
        generation = insights.request_run(job_id, delay_s=3600, window=WHOLE_TRACE)
        insights.compute(job_id, generation, WHOLE_TRACE)
        row = JobInsights.objects.get(job_id=job_id, window=WHOLE_TRACE)
        assert row.status == InsightsStatus.DONE, row.error
        return row.analyses

    first = run()
    assert read == [0]
    # The rank's facts (beside the part's analyses its parse kept).
    [key] = s3.keys(s3_endpoint, bucket, f"profiles/timeline/{job_id}/insights/rank-0/")
    assert key.startswith(f"profiles/timeline/{job_id}/insights/rank-0/{WHOLE_TRACE}/")
    assert s3.keys(s3_endpoint, bucket, f"profiles/timeline/{job_id}/insights/part-")
    assert storage.job_store_bytes(job_id) > stores

    # Another worker, nothing of this one's disk: it finds the result in the bucket.
    shutil.rmtree(store_cache.root())
    assert run() == first and read == [0]

    logic.delete_job(TrainingJob.objects.get(pk=job_id))
    assert s3.keys(s3_endpoint, bucket, "profiles/") == []


def test_a_reprocessed_part_replaces_its_store_and_drops_the_old_one(
    in_bucket, s3_endpoint, bucket, user
):
    part = parsed_in_bucket(user, "reprocessed")
    first = PartSummary.objects.get(part=part).store_path
    # Queued again without a task (a worker of another test's storage must not take it).
    ProfilePart.objects.filter(pk=part.pk).update(state=PartState.PENDING)
    assert ingest.claim(part.pk, "second-task")
    assert ingest.parse_claimed_part(part.pk, "second-task")
    second = PartSummary.objects.get(part=part).store_path
    assert second != first
    assert s3.keys(s3_endpoint, bucket, f"profiles/{first}/") == []
    assert s3.keys(s3_endpoint, bucket, f"profiles/{second}/")


def test_the_sweep_indexes_a_store_in_the_bucket_that_lacks_one(
    in_bucket, s3_endpoint, bucket, user, api
):
    part = parsed_in_bucket(user, "needs-index")
    key = PartSummary.objects.get(part=part).store_path
    index_keys = s3.keys(s3_endpoint, bucket, f"profiles/{key}/{INDEX_DIR_NAME}/")
    client = s3.client(s3_endpoint)
    for gone in index_keys:  # a store from before this index version
        client.delete_object(Bucket=bucket, Key=gone)
    shutil.rmtree(store_cache.root())
    timeline.part_index.cache_clear()

    assert api.get(f"/api/jobs/{part.job_id}/timeline/tracks/").status_code == 503
    assert upgrade_stores() == [part.pk]
    assert s3.keys(s3_endpoint, bucket, f"profiles/{key}/{INDEX_DIR_NAME}/") == index_keys
    assert upgrade_stores() == []  # fresh: asked for its manifest and index meta only
    shutil.rmtree(store_cache.root())  # another machine reads the index from the bucket
    timeline.part_index.cache_clear()
    assert api.get(f"/api/jobs/{part.job_id}/timeline/tracks/").status_code == 200


def test_the_sweep_gives_a_store_in_the_bucket_without_model_columns_a_new_key(
    in_bucket, s3_endpoint, bucket, user, api
):
    part = parsed_in_bucket(user, "needs-model")
    old = PartSummary.objects.get(part=part).store_path
    client = s3.client(s3_endpoint)
    # A store of the previous format: events without the event model, no manifest.
    events = pq.read_table(store_cache.folder(old) / EVENTS_FILE)
    model = {name: events.column(name).to_numpy() for name in MODEL_COLUMNS}
    stripped = io.BytesIO()
    pq.write_table(events.drop_columns(list(MODEL_COLUMNS)), stripped)
    client.put_object(Bucket=bucket, Key=f"profiles/{old}/{EVENTS_FILE}", Body=stripped.getvalue())
    client.delete_object(Bucket=bucket, Key=f"profiles/{old}/{MANIFEST_FILE}")
    shutil.rmtree(store_cache.root())

    assert upgrade_stores() == [part.pk]
    new = PartSummary.objects.get(part=part).store_path
    assert new != old and new.startswith(f"timeline/{part.job_id}/{part.pk}/upgrade-")
    assert s3.keys(s3_endpoint, bucket, f"profiles/{old}/") == []
    assert f"profiles/{new}/{MANIFEST_FILE}" in s3.keys(s3_endpoint, bucket, f"profiles/{new}/")
    shutil.rmtree(store_cache.root())  # another machine reads the new store from the bucket
    upgraded = pq.read_table(store_cache.folder(new) / EVENTS_FILE)
    for name, values in model.items():
        assert (upgraded.column(name).to_numpy() == values).all(), name
    assert upgrade_stores() == []
    timeline.part_index.cache_clear()
    assert api.get(f"/api/jobs/{part.job_id}/timeline/tracks/").status_code == 200


def test_disk_use_names_the_bucket_and_this_servers_cache(in_bucket, user, client_for, staff):
    part = parsed_in_bucket(user, "weighed")
    body = client_for(staff).get("/api/settings/disk-use/").json()
    assert body["where"] == in_bucket["PROFILER_STORAGE_URL"]
    assert body["raw_bytes"] == TRACE.stat().st_size
    assert body["stores_bytes"] == storage.job_store_bytes(part.job_id) > 0
    assert body["free_bytes"] is None and body["capacity_bytes"] is None
    assert body["cache_bytes"] == store_cache.size() > 0


def test_the_cache_evicts_the_least_recently_used_stores_beyond_its_bound(
    in_bucket, settings, monkeypatch
):
    monkeypatch.setattr(store_cache, "GRACE_S", 0.0)
    monkeypatch.setattr(store_cache, "TOUCH_EVERY_S", 0.0)
    stores = []
    for n, used in enumerate((300.0, 100.0, 200.0)):  # seconds ago
        entry = store_cache.folder_of(f"timeline/1/{n}/parse")
        entry.mkdir(parents=True)
        (entry / "events.parquet").write_bytes(b"x" * 1000)
        (entry / store_cache.USED).touch()
        stamp = time.time() - used
        os.utime(entry / store_cache.USED, (stamp, stamp))
        stores.append(entry)
    settings.STORE_CACHE_BYTES = 2500
    assert store_cache.evict() == 1000
    assert [s.exists() for s in stores] == [False, True, True]  # the oldest use went
    store_cache.touch(stores[1])  # used now: the other one is the oldest
    settings.STORE_CACHE_BYTES = 1500
    assert store_cache.evict() == 1000
    assert [s.exists() for s in stores] == [False, True, False]


def test_a_bucket_out_of_reach_answers_503_with_the_reason(
    in_bucket, staff, client_for, monkeypatch
):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{s3.free_port()}")  # nobody there
    response = client_for(staff).get("/api/settings/disk-use/")
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "storage_unavailable"
    assert body["detail"].startswith("The object store could not list parts/ (")


def test_a_large_store_file_goes_in_parts_that_the_bucket_may_join_slowly(
    s3_endpoint, bucket, monkeypatch, tmp_path
):
    # A request gives up after 0.5 s without its next byte; the bucket joins the parts in 2 s.
    monkeypatch.setattr(bucket_url, "READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(bucket_module, "FILE_IN_PARTS_BYTES", 6 * MiB)
    monkeypatch.setattr(bucket_module, "PART_BYTES", 5 * MiB)  # the bucket's part minimum
    raw = random.Random(7).randbytes(12 * MiB + 1000)  # three parts, the last short
    path = tmp_path / "column.npy"
    path.write_bytes(raw)
    with s3.slow_join(s3_endpoint, held_s=2.0) as endpoint:
        for name, value in s3.storage_env(endpoint, bucket).items():
            monkeypatch.setenv(name, value)
        Bucket(f"s3://{bucket}/profiles").put_file("stores/1/2/column.npy", path)

    client = s3.client(s3_endpoint)
    stored = client.get_object(Bucket=bucket, Key="profiles/stores/1/2/column.npy")
    assert stored["Body"].read() == raw
    assert stored["ETag"].endswith('-3"')  # joined from three parts
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
