"""Soak, hostile-input and outage benchmark of the whole product, with production settings.

Starts a PostgreSQL cluster, a redis-server and a moto S3 server of its own (never the machine's
shared ones), then ``profiler-app up`` on them with production limits (only the services, the
data folder and the queue prefix differ), a user and an API token, and runs, in phases:

1. **many tracks**: 200,000 operators each on its own thread, and each in its own process
   (issue 31: these exhausted a worker's memory), parsed before the load;
2. **load** for ``--duration`` s: ``--uploaders`` threads uploading jobs of three real traces
   from ``tests/data`` (or collector chunks), ``--readers`` threads reading the job list,
   dashboard, summary, timeline tracks and insights of parsed jobs, ``--tracks-readers``
   threads reading the many-track job's dashboard and track tree, one thread of ≥ 200 hostile
   uploads (``soak_cases.py``) and one of valid large traces (a real one repeated with shifted
   timestamps); then the **drain**: until every part is done or failed and no insights run is
   queued or running;
3. **SQL**: every event of the largest job, one giant value, and twenty 100 MB strings,
   while the web processes' memory is sampled;
4. **outages** (``soak_outages.py``), each ``--outage`` s long, each starting during a parse with
   an upload while it lasts: Redis killed and started again (empty), PostgreSQL stopped and
   started, the worker killed (SIGKILL with its pool); then on a launcher keeping its profiles
   in the bucket, the bucket stalled (moto SIGSTOPped); then on one whose data folder is a small
   tmpfs, the disk full; then on one with its own embedded PostgreSQL, that server SIGKILLed
   (the launcher alone starts it again).

It ends with one line::

    RESULT soak_errors=<n> soak_parts_unfinished=<n> hostile_stuck=<n> outage_survived=<0|1>
    fault_recovery_s=<s> many_tracks_peak_mb=<mb> sql_answer_peak_mb=<mb> read_p95_ms=<ms>
    drain_s=<s> worker_peak_rss_mb=<mb>

soak_errors: 5xx answers and connection errors outside the outages; soak_parts_unfinished and
hostile_stuck: parts not done or failed at the end of the drain; outage_survived: every process
rode out every fault (the killed worker restarted by the launcher) and every fault's parts ended;
fault_recovery_s: the slowest fault's time from its end to its parts ended and insights
computed; many_tracks_peak_mb: the largest worker process while the many-track traces parsed;
sql_answer_peak_mb: what the SQL answers add to a fresh process's peak memory (VmHWM), one at a
time, the web's code loaded (the web processes' sizes are printed too; each query runs in a
process of its own, capped at SQL_PROCESS_MEMORY_MB); read_p95_ms: readers' p95 under
load; drain_s: from the end of the load until its parts (uploaders' and large traces) are done or
failed and their jobs' insights computed (the hostile parts are waited for too, up to
``--drain-timeout``, and counted in hostile_stuck); worker_peak_rss_mb: the peak sum of the
worker's process tree over the load and the drain.

    .venv/bin/python bench/soak.py [--quick] [--duration 120] [--uploaders 50] [--readers 20]
        [--phases load,tracks,sql,outages]

``--quick`` runs each phase small: a third of the hostile cases, the many-thread trace only,
shorter load and faults (23 minutes on the shared 2-core machine with a load average near 10,
13 of them the drain: under the production decompression cap a gzip bomb of valid events parses
in full, for minutes). Needs root for the tmpfs (the disk-full
fault is skipped otherwise) and runs PostgreSQL as the machine's ``postgres`` user. The server's
logs are kept in ``var/bench/soak-logs/<run>/``, each hostile case's outcome in
``var/bench/soak-hostile.tsv``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psutil
from soak_cases import hostile_cases, large_trace, many_track_traces
from soak_load import (
    INSIGHTS_FINAL,
    Api,
    Stats,
    hostile_feeder,
    insights,
    large_uploader,
    many_tracks_reader,
    new_job,
    parts_left,
    reader,
    unfinished,
    upload_part,
    uploader,
)
from soak_outages import (
    Outage,
    bucket_stall,
    disk_full,
    embedded_postgres_kill,
    postgres_stop,
    redis_kill,
    worker_kill,
)
from soak_services import (
    ROOT,
    Bucket,
    Launcher,
    Peak,
    Postgres,
    Redis,
    SmallDisk,
    base_env,
    scratch,
    tree_rss,
)

INTERNAL_FAILURE = ("unexpectedly", "could not be stored", "died while parsing")
# A folder per run: runs on a shared machine must not remove each other's logs.
LOGS = ROOT / "var" / "bench" / "soak-logs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
PHASES = ("load", "tracks", "sql", "outages")
RESULT_NAMES = (
    "errors",
    "unfinished",
    "hostile_stuck",
    "many_tracks_peak_mb",
    "sql_answer_peak_mb",
    "read_p95_ms",
    "drain_s",
    "worker_peak_rss_mb",
)
SQL_QUERIES = [
    "select * from events",  # wide rows
    "select list(e) as all_events from events e",  # one giant value
    "select repeat('x', 100000000) from range(20)",  # wide values
]
# What one answer costs, in a fresh process with the web's code loaded: the growth of its peak
# (VmHWM) while the answers stream, one after another. The web processes' sizes say less:
# they hold whatever the load left in them.
SQL_PROBE = """
import json
import duckdb, pyarrow
from profiler_app.core.models import TrainingJob
from profiler_app.sql import logic, views
from profiler_app.sql.pure.console import QueryFailed, QueryRefused, QueryTimedOut

def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

job = TrainingJob.objects.get(pk={job_id})
before = peak_kib()
sizes = []
for query in {queries!r}:
    try:
        answer = logic.query_job(job, query)
    except (QueryFailed, QueryRefused, QueryTimedOut) as refused:  # the view's 4xx
        sizes.append(type(refused).__name__)
        continue
    try:
        sizes.append(sum(len(chunk) for chunk in answer))
    finally:
        answer.close()
print(json.dumps({{"growth_kib": peak_kib() - before, "base_kib": before, "bytes": sizes}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="every phase small")
    parser.add_argument("--duration", type=float, help="seconds of load (120; quick 40)")
    parser.add_argument("--uploaders", type=int, help="50 (quick 10)")
    parser.add_argument("--readers", type=int, help="20 (quick 5)")
    parser.add_argument(
        "--tracks-readers", type=int, default=3, help="readers of the many-track job (3)"
    )
    parser.add_argument("--upload-pause", type=float, default=2.0, help="seconds between jobs")
    parser.add_argument("--large-copies", type=int, nargs="*", help="(10 40; quick 10)")
    parser.add_argument("--tracks", type=int, default=200_000)
    parser.add_argument("--outage", type=float, help="seconds each fault lasts (40; quick 15)")
    parser.add_argument("--drain-timeout", type=float, default=900)
    parser.add_argument("--skip-outages", action="store_true")
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"the phases to run, of {','.join(PHASES)} (all; sql alone parses a large trace "
        "of its own)",
    )
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    args = parser.parse_args()
    quick = args.quick
    args.duration = args.duration or (40 if quick else 120)
    args.uploaders = args.uploaders or (10 if quick else 50)
    args.readers = args.readers or (5 if quick else 20)
    args.large_copies = args.large_copies or ([10] if quick else [10, 40])
    args.outage = args.outage or (15 if quick else 40)
    phases = set(args.phases.split(",")) - ({"outages"} if args.skip_outages else set())
    if phases - set(PHASES):
        parser.error(f"--phases: one or more of {','.join(PHASES)}")

    work = scratch("soak-")
    LOGS.mkdir(parents=True)
    cases_dir = ROOT / "var" / "bench"
    cases_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    hostile = list(hostile_cases(work))[:: 3 if quick else 1]
    large = [large_trace(cases_dir, n) for n in args.large_copies]
    fault_trace = large_trace(cases_dir, 4)
    tracks = many_track_traces(cases_dir, args.tracks)[: 1 if quick else 2]
    print(
        f"{len(hostile)} hostile cases, {len(large)} large and {len(tracks)} many-track "
        f"traces ready in {time.monotonic() - started:.0f} s",
        flush=True,
    )

    postgres, redis = Postgres(), Redis(work)
    bucket: Bucket | None = None
    disk: SmallDisk | None = None
    launchers: list[Launcher] = []
    result: dict[str, float] = {}
    outages: list[Outage] = []
    try:
        postgres.start()
        redis.start()
        env = base_env(work, postgres, redis)
        env.update(dict(item.split("=", 1) for item in args.env))
        postgres.create_database("profiler")
        launcher = Launcher(env, LOGS, "launcher")
        launchers.append(launcher)
        token = launcher.token("soak")
        print(f"server at {launcher.url}, logs in {LOGS}", flush=True)

        result.update(dict.fromkeys(RESULT_NAMES, float("nan")))
        large_jobs: list[int] = []
        many_tracks_job = None
        if "tracks" in phases:
            result["many_tracks_peak_mb"], many_tracks_job = many_tracks_phase(
                launcher, token, tracks
            )
        if "load" in phases:
            loaded, large_jobs = load(args, launcher, token, hostile, large, many_tracks_job)
            result.update(loaded)
        if "sql" in phases:
            job_id = max(large_jobs, default=None) or large_job(launcher, token, large[-1])
            result["sql_answer_peak_mb"] = sql_phase(launcher, token, job_id)
        if "outages" in phases:
            outages += [
                redis_kill(launcher, token, redis, args.outage, fault_trace),
                postgres_stop(launcher, token, postgres, args.outage, fault_trace),
                worker_kill(launcher, token, args.outage, fault_trace),
            ]
            print("\n".join(o.line() for o in outages), flush=True)
            launcher.stop()

            bucket = Bucket(LOGS / "moto.log")
            postgres.create_database("profiler_bucket")
            in_bucket = Launcher(
                {
                    **env,
                    **bucket.env,
                    "DATABASE_URL": postgres.url_of("profiler_bucket"),
                    "PROFILER_DATA_DIR": str(work / "data-bucket"),
                    "CELERY_QUEUE_PREFIX": "soakb-",
                },
                LOGS,
                "launcher-bucket",
            )
            launchers.append(in_bucket)
            outages.append(
                bucket_stall(in_bucket, in_bucket.token("soak"), bucket, args.outage, fault_trace)
            )
            print(outages[-1].line(), flush=True)
            in_bucket.stop()

            if os.geteuid() == 0:
                disk = SmallDisk(work / "small", 512)
                postgres.create_database("profiler_disk")
                on_disk = Launcher(
                    {
                        **env,
                        "DATABASE_URL": postgres.url_of("profiler_disk"),
                        "PROFILER_DATA_DIR": str(disk.path / "data"),
                        "CELERY_QUEUE_PREFIX": "soakd-",
                    },
                    LOGS,
                    "launcher-disk",
                )
                launchers.append(on_disk)
                outages.append(
                    disk_full(on_disk, on_disk.token("soak"), disk, args.outage, fault_trace)
                )
                print(outages[-1].line(), flush=True)
                on_disk.stop()

            # The launcher's own PostgreSQL (no DATABASE_URL), in a folder its user may enter.
            embedded_env = {
                **env,
                "PROFILER_DATA_DIR": str(scratch("soak-embedded-") / "data"),
                "CELERY_QUEUE_PREFIX": "soake-",
            }
            del embedded_env["DATABASE_URL"]
            embedded = Launcher(embedded_env, LOGS, "launcher-embedded")
            launchers.append(embedded)
            outages.append(embedded_postgres_kill(embedded, embedded.token("soak"), fault_trace))
            print(outages[-1].line(), flush=True)
            embedded.stop()
            shutil.rmtree(embedded.data.parent, ignore_errors=True)
    finally:
        for each in launchers:
            each.stop()
        if bucket is not None:
            bucket.stop()
        if disk is not None:
            disk.unmount()
        redis.kill()
        postgres.remove()
        shutil.rmtree(work, ignore_errors=True)
    survived = bool(outages) and all(o.survived and o.recovery_s == o.recovery_s for o in outages)
    recovery = max((o.recovery_s for o in outages), default=float("nan"))
    print(
        f"RESULT soak_errors={result['errors']:.0f} "
        f"soak_parts_unfinished={result['unfinished']:.0f} "
        f"hostile_stuck={result['hostile_stuck']:.0f} outage_survived={int(survived)} "
        f"fault_recovery_s={recovery:.1f} "
        f"many_tracks_peak_mb={result['many_tracks_peak_mb']:.0f} "
        f"sql_answer_peak_mb={result['sql_answer_peak_mb']:.0f} "
        f"read_p95_ms={result['read_p95_ms']:.0f} drain_s={result['drain_s']:.0f} "
        f"worker_peak_rss_mb={result['worker_peak_rss_mb']:.0f}"
    )


def worker_roots(launcher: Launcher):
    return lambda: [pid for role, pid in launcher.children().items() if role == "worker"]


def tree_cpu_s(roots: list[int]) -> float:
    """CPU seconds the processes under ``roots`` used, the exited children they waited for
    included (a worker replaces its pool processes)."""
    total = 0.0
    for root in roots:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = psutil.Process(root).cpu_times()
            total += times.children_user + times.children_system
            for process in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = process.cpu_times()
                    total += times.user + times.system
    return total


def web_roots(launcher: Launcher):
    return lambda: [pid for role, pid in launcher.children().items() if role == "web"]


def load(
    args, launcher: Launcher, token: str, hostile, large: list[Path], many_tracks_job: int | None
) -> tuple[dict[str, float], list[int]]:
    """The load and its drain: the numbers of the RESULT line, and the large traces' jobs."""
    stats = Stats()
    peak = Peak(worker_roots(launcher))
    web_cpu, worker_cpu = tree_cpu_s(web_roots(launcher)()), tree_cpu_s(worker_roots(launcher)())
    deadline = time.monotonic() + args.duration
    url = launcher.url
    threads = [
        threading.Thread(
            target=uploader,
            args=(Api(url, token, stats, deadline), i, deadline, args.upload_pause, stats),
        )
        for i in range(args.uploaders)
    ]
    threads += [
        threading.Thread(target=reader, args=(Api(url, token, stats), i, deadline, stats))
        for i in range(args.readers)
    ]
    if many_tracks_job is not None:
        threads += [
            threading.Thread(
                target=many_tracks_reader,
                args=(Api(url, token, stats), many_tracks_job, deadline, stats),
            )
            for _ in range(args.tracks_readers)
        ]
    # The hostile cases wait out a busy server for as long as the drain may last: each case is
    # still sent and judged, after the load if need be (the drain is timed from the load's end).
    hostile_thread = threading.Thread(
        target=hostile_feeder,
        args=(Api(url, token, stats, deadline + args.drain_timeout), hostile, deadline, stats),
    )
    threads.append(
        threading.Thread(
            target=large_uploader,
            args=(Api(url, token, stats, deadline), large, deadline, stats),
        )
    )
    for thread in [*threads, hostile_thread]:
        thread.start()
    for thread in threads:
        thread.join(args.duration + 600)
    load_end = time.monotonic()
    web_cpu = tree_cpu_s(web_roots(launcher)()) - web_cpu
    print(
        f"load over: {stats.uploads} uploads, {len(stats.reader_ms)} reads, "
        f"{stats.hostile_cases} hostile cases; {stats.busy_waits} uploads told the server was "
        f"busy and sent again after Retry-After, {stats.busy_unsent} still busy at the end; "
        f"the web used {web_cpu:.0f} CPU s; draining",
        flush=True,
    )

    api = Api(url, token, stats)
    drain_deadline = load_end + args.drain_timeout
    drained_at = None
    settled: set[int] = set()
    while True:
        # Counted from the job list, a page per 50 jobs: asking each job for its parts, as the
        # report below does, would cost the server as much as the parses being waited for.
        soak_left = parts_left(api, stats.soak_parts)
        hostile_left = parts_left(api, stats.hostile_parts)
        busy = insights_busy(api, stats, settled) if drained_at is None and soak_left == 0 else 0
        if drained_at is None and soak_left == 0 and not busy:
            drained_at = time.monotonic()
            print(
                f"  drained: the load's parts and insights {drained_at - load_end:.0f} s after "
                f"it stopped",
                flush=True,
            )
        hostile_sending = hostile_thread.is_alive()
        if (drained_at and hostile_left == 0 and not hostile_sending) or (
            time.monotonic() > drain_deadline
        ):
            break
        print(
            f"  {time.monotonic() - load_end:4.0f} s: unfinished {soak_left} soak, "
            f"{hostile_left} hostile parts{' (more being sent)' if hostile_sending else ''}, "
            f"{busy} insights runs",
            flush=True,
        )
        time.sleep(5)
    drain_s = (drained_at or time.monotonic()) - load_end
    hostile_thread.join(60)
    worker_cpu = tree_cpu_s(worker_roots(launcher)()) - worker_cpu
    peak.stop()
    soak_left, soak_parts = unfinished(api, stats.soak_parts)
    hostile_left, hostile_parts = unfinished(api, stats.hostile_parts)
    soak_insights = insights(api, list(stats.soak_parts), time.monotonic() + 30)
    hostile_insights = insights(api, list(stats.hostile_parts), time.monotonic() + 30)
    report(stats, soak_parts, hostile_parts, soak_insights, hostile_insights, peak)
    print(worker_time(launcher.log_path))
    parsed = sum(1 for p in soak_parts.values() if p["state"] == "done")
    print(
        f"the worker used {worker_cpu:.0f} CPU s over the load and its drain "
        f"({worker_cpu / max(1, parsed):.2f} s per part of the load parsed, {parsed})"
    )
    by_path = {k: float(np.percentile(v, 95)) for k, v in stats.reads_by_path.items()}
    print("read p95 by path (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in by_path.items()))
    return {
        "errors": len(stats.errors),
        "unfinished": soak_left,
        "hostile_stuck": hostile_left,
        "read_p95_ms": float(np.percentile(stats.reader_ms, 95)) if stats.reader_ms else np.nan,
        "drain_s": drain_s,
        "worker_peak_rss_mb": peak.total / 2**20,
    }, stats.large_jobs


TASK_DONE = re.compile(r"Task profiler_app\.[\w.]*?(\w+)\[[\w-]+\] succeeded in ([\d.]+)s")
INSIGHTS_RUN = re.compile(r"Insights of job (\d+) \(\w+\) (?:done|failed) \(generation \d+\) in")


def worker_time(log_path: Path) -> str:
    """Where the worker's time went over the load and the drain, from its log: tasks and their
    seconds (wall, in the pool's processes and the sweeper) by task, and how many insights runs
    computed a job (a run_insights task that found its run merged or waiting computes none)."""
    text = log_path.read_text(errors="replace")
    seconds: Counter[str] = Counter()
    tasks: Counter[str] = Counter()
    for name, took in TASK_DONE.findall(text):
        tasks[name] += 1
        seconds[name] += float(took)
    runs = Counter(INSIGHTS_RUN.findall(text))
    by_task = ", ".join(
        f"{n} {tasks[n]} tasks {seconds[n]:.0f} s" for n, _ in seconds.most_common()
    )
    return (
        f"worker time: {by_task}; insights computed {sum(runs.values())} times for "
        f"{len(runs)} jobs (at most {max(runs.values(), default=0)} runs of one job)"
    )


def insights_busy(api: Api, stats: Stats, settled: set[int]) -> int:
    """Jobs whose insights are queued or running (asked job by job: what a user sees), once
    every part of the load ended; a job seen settled then stays so and is not asked again."""
    pending = [job_id for job_id in stats.soak_parts if job_id not in settled]
    found = insights(api, pending, time.monotonic())
    settled.update(j for j, i in found.items() if i.get("status") in INSIGHTS_FINAL)
    return sum(1 for job_id in pending if job_id not in settled)


def many_tracks_phase(
    launcher: Launcher, token: str, paths: list[Path]
) -> tuple[float, int | None]:
    """The largest worker process while the many-track traces parse, and their job."""
    stats = Stats()
    api = Api(launcher.url, token, stats)
    peak = Peak(worker_roots(launcher))
    started = time.monotonic()
    job_id = new_job(api, "many-tracks", stats)
    for path in paths:
        upload_part(api, job_id, path, stats)
    while unfinished(api, stats.soak_parts)[0] and time.monotonic() - started < 900:
        time.sleep(1)
    peak.stop()
    left, parts = unfinished(api, stats.soak_parts)
    for part in parts.values():
        message = part["error"][:160] or f"{part.get('n_events', '')}"
        print(f"many tracks: {part['original_name']} {part['state']} {message}")
    print(
        f"many tracks: {time.monotonic() - started:.0f} s, largest worker process "
        f"{peak.single / 2**20:.0f} MB, {left} unfinished, errors {stats.errors[:3]}"
    )
    return (peak.single / 2**20 if not left else float("inf")), job_id


def large_job(launcher: Launcher, token: str, path: Path) -> int | None:
    """A job of the large trace at ``path``, parsed (the SQL phase's, run without the load)."""
    stats = Stats()
    api = Api(launcher.url, token, stats)
    job_id = new_job(api, "sql-large", stats)
    if job_id is None or upload_part(api, job_id, path, stats) is None:
        return None
    started = time.monotonic()
    while unfinished(api, stats.soak_parts)[0] and time.monotonic() - started < 900:
        time.sleep(1)
    return job_id


def sql_phase(launcher: Launcher, token: str, job_id: int | None) -> float:
    """Every event of the largest job, twice at once, then one giant value, twice at once."""
    if job_id is None:
        print("sql: no large job was parsed")
        return float("nan")
    api = Api(launcher.url, token, Stats())
    before = tree_rss(web_roots(launcher)())
    peak = Peak(web_roots(launcher))
    answers: list[str] = []

    def ask(query: str) -> None:
        reply, took = api.call("POST", f"/api/jobs/{job_id}/sql/", json={"query": query})
        if reply is None:
            return
        try:
            body = reply.json()
        except ValueError:
            body = {}
        answers.append(
            f"{query[:24]!r}: {reply.status_code}, {len(reply.content) >> 10} KiB "
            f"in {took:.1f} s, {len(body.get('rows', ()))} rows, truncated by "
            f"{body.get('truncated_by')}"
        )

    for query in SQL_QUERIES:
        threads = [threading.Thread(target=ask, args=(query,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    time.sleep(2)
    peak.stop()
    after = tree_rss(web_roots(launcher)())
    mb = lambda sizes: ", ".join(f"{rss >> 20}" for rss in sizes.values())  # noqa: E731
    print(
        f"sql on job {job_id}: {'; '.join(answers)}; web processes (MB) before: {mb(before)}, "
        f"at the peak: {mb(peak.by_pid)}, after: {mb(after)}; errors {api.stats.errors[:3]}"
    )
    probe = json.loads(launcher.manage(SQL_PROBE.format(job_id=job_id, queries=SQL_QUERIES)))
    print(
        f"sql answers in a fresh process: {probe['bytes']} (bytes answered), its peak grew "
        f"{probe['growth_kib'] >> 10} MB over {probe['base_kib'] >> 10} MB with the code loaded"
    )
    return probe["growth_kib"] / 1024


def report(stats, soak_parts, hostile_parts, soak_insights, hostile_insights, peak) -> None:
    """What went wrong, in a few lines; every hostile case's outcome in a file."""
    states = Counter(p["state"] for p in soak_parts.values())
    print(
        f"soak parts: {dict(states)}; insights of the soak jobs: "
        f"{dict(Counter(i.get('status') for i in soak_insights.values()))}, of the hostile jobs: "
        f"{dict(Counter(i.get('status') for i in hostile_insights.values()))}"
    )
    for part in [p for p in soak_parts.values() if p["state"] == "failed"][:5]:
        print(f"  soak part {part['id']} ({part['original_name']}) failed: {part['error'][:200]}")
    for job_id, found in {**soak_insights, **hostile_insights}.items():
        if found.get("status") not in ("done", "no_data"):
            print(
                f"  insights of job {job_id}: {found.get('status')} {found.get('error', '')[:200]}"
            )
    hostile_states = Counter(p["state"] for p in hostile_parts.values())
    print(
        f"hostile answers: {dict(sorted(stats.hostile_answers.items()))}; hostile parts: "
        f"{dict(hostile_states)}"
    )
    outcomes = ROOT / "var" / "bench" / "soak-hostile.tsv"
    with outcomes.open("w") as out:
        for part_id, name in stats.hostile_names.items():
            part = hostile_parts.get(part_id, {})
            error = part.get("error") or part.get("warning") or ""
            out.write(f"{name!r}\t{part.get('state')}\t{error!r}\n")
            if any(words in error for words in INTERNAL_FAILURE):
                print(f"  hostile case {name!r} failed inside the server: {error[:200]}")
        for name, code, detail in stats.hostile_refused:
            out.write(f"{name!r}\t{code}\t{detail!r}\n")
    print(f"every hostile case's outcome: {outcomes}")
    print(
        "worker tree at its peak (pid: MB): "
        + ", ".join(f"{pid}: {rss / 2**20:.0f}" for pid, rss in peak.by_pid.items())
    )
    for line in stats.errors[:10]:
        print(f"  error: {line}")
    for line in stats.unexpected_4xx[:10]:
        print(f"  unexpected answer: {line}")


if __name__ == "__main__":
    main()
