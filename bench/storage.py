"""Object-storage benchmark: the same >= 10M-event, 16-rank job ingested and viewed with its files
in the data directory and in an S3 bucket (moto's S3 server on loopback).

Builds, in a fresh database: a 16-rank job (8 ranks per node, one process each), every rank's
part the largest shared trace replicated ``--copies`` times with shifted timestamps, parsed by
the real ingest in this process (``ingest.logic.claim`` + ``parse_claimed_part``, as the Celery
task does) twice:

* local: the default storage (MEDIA_ROOT in a temp folder);
* bucket: this process switched to a fresh bucket (PROFILER_STORAGE_URL, AWS_* variables,
  django-storages as the default storage, STORE_CACHE_DIR a temp "worker cache"): the raw file
  is saved through the bucket storage, so each parse fetches it from the bucket, and puts its
  timeline store (and index) in the bucket.

Then:

* ingest: wall clock of all the parts' parses (the uploads not counted; one small part parsed
  first, not counted, pays the process's first-call costs), per part with where the time went
  (raw file fetched, store indexed, store put in the bucket, moved into the cache, the rest);
  ``s3_ingest_ratio`` = bucket / local;
* first view on another web machine: an empty STORE_CACHE_DIR ("web cache") and no index open
  in the process (which has served a timeline before), then ``GET …/timeline/tracks/`` and the
  first ``GET …/timeline/viewport/`` (the whole job, 2,000 px, the tracks the page opens with)
  through Django, with the bucket reads each made, by store file, and the bytes the web cache
  fetched; ``first_viewport_ms`` is tracks + viewport. The same for the local job (no index
  open, its files in the page cache) as the baseline;
* warm: the random viewport sequence of ``bench/timeline.py`` (every zoom level, random
  positions) on the bucket job (the web cache as the first view left it: deeper zooms fetch
  the arrays they need), ``s3_viewport_p95_ms``, and, as the baseline, on the local job; then
  once more on the bucket job, every array it reads now cached;
* with ``--profile N``: the bucket job's first view once more from an empty cache, under
  cProfile (the top N functions of the app by cumulative time, and of all by own time).

    .venv/bin/python bench/storage.py [--ranks 16] [--copies 14] [--requests 25] [--profile N]

``--ranks 2 --copies 1`` is a smoke test (well under a minute). Uses DATABASE_URL (else the
embedded PostgreSQL, as ``manage.py`` does); creates and drops its own database, temp folders
and moto server.

Last line: RESULT s3_ingest_ratio=<x.xx> s3_viewport_p95_ms=<n> first_viewport_ms=<n> events=<n>
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gzip
import logging
import os
import pstats
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import DATA, LARGEST_SHARED, ROOT, in_bench_database, synthesize  # noqa: E402
from timeline import (  # noqa: E402
    WIDTH_PX,
    opening_tracks,
    percentile,
    report_server,
    server_side,
    store_parts,
)

sys.path.insert(0, str(ROOT))
from tests.storage import s3  # noqa: E402

SEED = 7
# Where a part's parse spends its time, measured by wrapping the storage calls it makes.
SPLITS = ("fetch", "index", "stage", "place")


class Splits:
    """Seconds spent, per part, in the storage steps of a parse (wrapped while installed)."""

    def __init__(self) -> None:
        self.now: dict[str, float] = defaultdict(float)

    def take(self) -> dict[str, float]:
        taken, self.now = dict(self.now), defaultdict(float)
        return taken

    @contextlib.contextmanager
    def installed(self):
        from profiler_app.core import storage
        from profiler_app.profiles.signals import store_written

        raw_file_on_disk, stage_store, place_store = (
            storage.raw_file_on_disk,
            storage.stage_store,
            storage.place_store,
        )
        send = store_written.send

        @contextlib.contextmanager
        def timed_raw(name):
            began = time.perf_counter()
            with raw_file_on_disk(name) as path:
                self.now["fetch"] += time.perf_counter() - began
                yield path

        def timed(key, function):
            def call(*args, **kwargs):
                began = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.now[key] += time.perf_counter() - began

            return call

        storage.raw_file_on_disk = timed_raw
        storage.stage_store = timed("stage", stage_store)
        storage.place_store = timed("place", place_store)
        store_written.send = timed("index", send)  # the timeline index is built on this signal
        try:
            yield self
        finally:
            storage.raw_file_on_disk, storage.stage_store, storage.place_store = (
                raw_file_on_disk,
                stage_store,
                place_store,
            )
            del store_written.send


class BucketCalls:
    """The bucket's reads (downloads, listings) made while installed: key, seconds, bytes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, int]] = []

    @contextlib.contextmanager
    def installed(self):
        from profiler_app.core.bucket import Bucket

        get_file, listing = Bucket.get_file, Bucket.listing

        def timed_get(bucket, relative, dest):
            began = time.perf_counter()
            try:
                return get_file(bucket, relative, dest)
            finally:
                took = time.perf_counter() - began
                size = dest.stat().st_size if dest.exists() else 0
                self.calls.append(("GET", relative, took, size))

        def timed_list(bucket, relative_prefix):
            began = time.perf_counter()
            items = list(listing(bucket, relative_prefix))
            self.calls.append(("LIST", relative_prefix, time.perf_counter() - began, 0))
            yield from items

        Bucket.get_file, Bucket.listing = timed_get, timed_list
        try:
            yield self
        finally:
            Bucket.get_file, Bucket.listing = get_file, listing

    def take(self) -> list[tuple[str, str, float, int]]:
        taken, self.calls = self.calls, []
        return taken

    @staticmethod
    def summary(calls) -> str:
        kinds: dict[str, list[float]] = defaultdict(list)
        for kind, _, took, _ in calls:
            kinds[kind].append(took)
        size = sum(c[3] for c in calls)
        return (
            ", ".join(
                f"{len(times)} {kind} ({sum(times) * 1000:.0f} ms in all, "
                f"slowest {max(times) * 1000:.0f} ms)"
                for kind, times in sorted(kinds.items())
            )
            or "none"
        ) + f", {size / 2**20:.1f} MiB"

    @staticmethod
    def by_file(calls) -> None:
        """The reads grouped by store file (``timeline/<job>/<part>/<parse>/<file>``)."""
        files: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for kind, key, took, size in calls:
            name = key.split("/", 4)[4] if kind == "GET" and key.count("/") >= 4 else kind
            files[name].append((took, size))
        print(f"    {'file':42} {'reads':>5} {'MiB':>7} {'ms':>7}")
        for name, found in sorted(files.items(), key=lambda kv: -sum(t for t, _ in kv[1])):
            print(
                f"    {name:42} {len(found):5d} {sum(s for _, s in found) / 2**20:7.2f} "
                f"{sum(t for t, _ in found) * 1000:7.0f}"
            )


def parse_parts(label: str, part_ids: list[int], splits: Splits) -> tuple[float, list[dict]]:
    """Each part claimed and parsed by the real ingest, one after the other; the wall clock of
    them all and each part's seconds (total and splits)."""
    from profiler_app.core.models import ProfilePart
    from profiler_app.ingest import logic

    print(f"\n{label}: per part, seconds")
    print(f"{'rank':>6} {'total':>7} " + " ".join(f"{s:>7}" for s in SPLITS) + f" {'rest':>7}")
    per_part = []
    began = time.perf_counter()
    with splits.installed():
        for rank, part_id in enumerate(part_ids):
            splits.take()
            started = time.perf_counter()
            assert logic.claim(part_id, f"bench-{label}")
            logic.parse_claimed_part(part_id, f"bench-{label}")
            took = time.perf_counter() - started
            part = ProfilePart.objects.get(pk=part_id)
            assert part.state == "done", part.error
            split = splits.take()
            rest = took - sum(split.get(s, 0.0) for s in SPLITS)
            per_part.append({"total": took, **split, "rest": rest})
            print(
                f"{rank:>6} {took:7.2f} "
                + " ".join(f"{split.get(s, 0.0):7.2f}" for s in SPLITS)
                + f" {rest:7.2f}",
                flush=True,
            )
    wall = time.perf_counter() - began
    print(
        f"{'all':>6} {wall:7.2f} "
        + " ".join(f"{sum(p.get(s, 0.0) for p in per_part):7.2f}" for s in SPLITS)
        + f" {sum(p['rest'] for p in per_part):7.2f}   (wall clock, {len(part_ids)} parts)"
    )
    return wall, per_part


def cache_files(folder: Path) -> tuple[int, int]:
    """Files and bytes under a store cache (its markers not counted)."""
    n, size = 0, 0
    for path in folder.rglob("*") if folder.exists() else []:
        if path.is_file() and path.name not in (".used", ".complete"):
            n += 1
            size += path.stat().st_size
    return n, size


def first_view(client, job_id: int, calls: BucketCalls | None = None):
    """The tracks, then the first viewport of the whole job with the tracks the page opens
    with: the tracks' body, ms of each, and those tracks. With ``calls`` installed, the bucket
    reads of each request (printed by file)."""
    began = time.perf_counter()
    response = client.get(f"/api/jobs/{job_id}/timeline/tracks/")
    tracks_ms = (time.perf_counter() - began) * 1000
    tracks_reads = calls.take() if calls else []
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    opening = opening_tracks(body["tracks"])
    params = {
        "start_ns": body["start_ns"],
        "end_ns": body["end_ns"],
        "width_px": WIDTH_PX,
        "tracks": ",".join(opening),
    }
    began = time.perf_counter()
    response = client.get(
        f"/api/jobs/{job_id}/timeline/viewport/", params, HTTP_ACCEPT_ENCODING="gzip"
    )
    viewport_ms = (time.perf_counter() - began) * 1000
    viewport_reads = calls.take() if calls else []
    assert response.status_code == 200, response.content[:300]
    raw = (
        gzip.decompress(response.content) if response.get("Content-Encoding") else response.content
    )
    print(
        f"  tracks {tracks_ms:.0f} ms ({len(body['parts'])} parts), viewport {viewport_ms:.0f} ms "
        f"({len(opening)} tracks, {len(response.content) / 1024:.0f} kB sent, "
        f"{len(raw) / 1024:.0f} kB raw): {tracks_ms + viewport_ms:.0f} ms in all"
    )
    if calls:
        for label, reads in (("tracks", tracks_reads), ("viewport", viewport_reads)):
            print(f"  bucket reads of the {label} request: {BucketCalls.summary(reads)}")
            BucketCalls.by_file(reads)
    return body, tracks_ms, viewport_ms, opening


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--copies", type=int, default=14, help="copies of the trace per rank")
    parser.add_argument("--requests", type=int, default=25, help="requests per zoom level")
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "bench")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="profile a second cold first view of the bucket job; print its top N functions",
    )
    args = parser.parse_args()

    # A kill (SIGTERM, SIGHUP) unwinds like an exception: the cleanups below run.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, frame: sys.exit(128 + number))

    args.work.mkdir(parents=True, exist_ok=True)
    synthetic = synthesize(
        DATA / LARGEST_SHARED, args.copies, args.work / f"synthetic-x{args.copies}.pt.trace.json.gz"
    )
    with contextlib.ExitStack() as cleanup:
        temp = Path(tempfile.mkdtemp(prefix="bench-storage-"))
        cleanup.callback(shutil.rmtree, temp, ignore_errors=True)
        endpoint = cleanup.enter_context(s3.moto_server(temp / "moto.log"))
        bucket_name = s3.new_bucket(endpoint)
        print(f"moto S3 server at {endpoint}, bucket {bucket_name}", flush=True)

        # The worker's scratch folder (raw files fetched from the bucket) in the temp folder too.
        os.environ["PROFILER_DATA_DIR"] = str(temp / "data")
        in_bench_database(
            "profiler_bench_storage", lambda: run(args, synthetic, endpoint, bucket_name, temp)
        )


def run(args, synthetic: Path, endpoint: str, bucket_name: str, temp: Path) -> None:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import override_settings

    from profiler_app.core.models import TrainingJob
    from profiler_app.lib.bucket_url import django_storage_options
    from profiler_app.timeline import logic as timeline

    logging.getLogger("botocore").setLevel(logging.WARNING)
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)

    def new_job(name: str):
        return TrainingJob.objects.create(name=name, owner=user, status="completed")

    splits = Splits()
    # Not timed: the first parse of the process pays its imports and first-call costs.
    warm = new_job("warm-up")
    parse_parts("warm-up (not counted)", store_parts(warm, DATA / LARGEST_SHARED, 1), splits)
    # Nor the process's first timeline requests (imports, first calls): a web machine that
    # opens a job for the first time has served others before.
    first_view(client, warm.id)

    print(f"\ningesting a {args.ranks}-rank job twice, {synthetic.name} per rank …", flush=True)
    local_job = new_job(f"local-{args.ranks}-ranks")
    local_parts = store_parts(local_job, synthetic, args.ranks)
    local_s, _ = parse_parts("local (data directory)", local_parts, splits)

    env = s3.storage_env(endpoint, bucket_name)
    os.environ.update(env)
    worker_cache, web_cache = temp / "worker-cache", temp / "web-cache"
    in_bucket = override_settings(
        STORAGE_URL=env["PROFILER_STORAGE_URL"],
        STORAGES={
            **settings.STORAGES,
            "default": {
                "BACKEND": "storages.backends.s3.S3Storage",
                "OPTIONS": django_storage_options(env["PROFILER_STORAGE_URL"]),
            },
        },
        STORE_CACHE_DIR=worker_cache,
    )
    with in_bucket:
        s3_job = new_job(f"s3-{args.ranks}-ranks")
        began = time.perf_counter()
        s3_parts = store_parts(s3_job, synthetic, args.ranks)
        print(
            f"\nraw file saved to the bucket in {time.perf_counter() - began:.2f}s "
            f"({synthetic.stat().st_size / 2**20:.1f} MiB)"
        )
        s3_s, _ = parse_parts("bucket (S3)", s3_parts, splits)
        stored = s3.keys(endpoint, bucket_name)
        print(
            f"bucket: {len(stored)} objects, worker cache: {cache_files(worker_cache)[1] / 2**20:.0f} MiB"
        )
        ratio = s3_s / local_s
        print(f"\ningest wall clock: local {local_s:.1f}s, bucket {s3_s:.1f}s: ratio {ratio:.2f}")

        # Another web machine: nothing of the job cached on disk or open in the process.
        with override_settings(STORE_CACHE_DIR=web_cache):
            forget_open_indexes(timeline)
            print("\nfirst view of the bucket job on a web machine with an empty cache:")
            with BucketCalls().installed() as calls:
                body, tracks_ms, viewport_ms, opening = first_view(client, s3_job.id, calls)
            first_ms = tracks_ms + viewport_ms
            n, fetched = cache_files(web_cache)
            print(f"  the web cache fetched {n} files, {fetched / 2**20:.1f} MiB")
            events = body["n_events"]

            label = f"viewport, {WIDTH_PX} px, the {len(opening)} tracks the page opens with ({events:,} events)"
            s3_times, _ = report_server(
                f"bucket job, {label}; web cache as the first view left it",
                server_side(client, s3_job, body, opening, args.requests, random.Random(SEED)),
            )
            slow(s3_times)
            n_after, fetched_after = cache_files(web_cache)
            print(
                f"  the web cache fetched {n_after - n} files more, "
                f"{(fetched_after - fetched) / 2**20:.1f} MiB"
            )
            again, _ = report_server(
                f"bucket job, {label}; the same sequence again (what it reads all cached)",
                server_side(client, s3_job, body, opening, args.requests, random.Random(SEED)),
            )
            slow(again)

    print("\nfirst view of the local job, no index open in the process (files in the page cache):")
    forget_open_indexes(timeline)
    local_body, local_tracks_ms, local_viewport_ms, local_opening = first_view(client, local_job.id)
    assert local_body["n_events"] == events
    assert local_opening == opening, "the jobs' track trees differ"
    local_times, _ = report_server(
        f"local job (baseline), {label}",
        server_side(client, local_job, local_body, opening, args.requests, random.Random(SEED)),
    )
    slow(local_times)

    if args.profile:
        with override_settings(**{**in_bucket.options, "STORE_CACHE_DIR": temp / "profile-cache"}):
            forget_open_indexes(timeline)
            print("\nthe bucket job's first view again (empty cache), under cProfile:")
            profiler = cProfile.Profile()
            profiler.enable()
            first_view(client, s3_job.id)
            profiler.disable()
            stats = pstats.Stats(profiler)
            stats.sort_stats("cumulative").print_stats(r"profiler_app/", args.profile)
            stats.sort_stats("tottime").print_stats(args.profile)

    s3_p95 = percentile(s3_times, 95)
    print(
        f"\nviewport p95: bucket {s3_p95:.1f} ms (again {percentile(again, 95):.1f} ms), "
        f"local {percentile(local_times, 95):.1f} ms; first view (tracks + viewport): bucket "
        f"{first_ms:.0f} ms (viewport alone {viewport_ms:.0f} ms), local "
        f"{local_tracks_ms + local_viewport_ms:.0f} ms (viewport alone {local_viewport_ms:.0f} ms)"
    )
    print(
        f"RESULT s3_ingest_ratio={ratio:.2f} s3_viewport_p95_ms={s3_p95:.1f} "
        f"first_viewport_ms={first_ms:.0f} events={events}"
    )


def forget_open_indexes(timeline) -> None:
    """As in a process that never opened the jobs' timelines."""
    timeline.part_index.cache_clear()
    timeline._open_job_timeline.cache_clear()


def slow(times: list[float], over_ms: float = 50.0) -> None:
    n = sum(t > over_ms for t in times)
    print(f"  slowest {max(times):.0f} ms; {n} of {len(times)} requests over {over_ms:.0f} ms")


if __name__ == "__main__":
    main()
