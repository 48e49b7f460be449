"""The product on several hosts that share no disk, run for real on this machine.

Each host is a network namespace with its own address on a private bridge (tests/multihost/
netns.py), its own host name and its own data directory: PostgreSQL, Redis and an S3 server each
on one, a web host, a scheduler host (beat, sweeper) and two worker hosts, started as
docker/compose.yml starts them (tests/multihost/deployment.py). Traces are sent from this
machine, as a user's would be, by the collector's CLI and by the browser's resumable upload;
the two worker hosts parse them between them; the pages read through the web host show what
the raw JSON says; and a worker host that loses power mid-parse leaves its part to the other.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
import requests

from tests.conftest import wait_for
from tests.multihost.deployment import Deployment, missing
from tests.multihost.netns import Host, Network, can_make_namespaces, remove_leftovers
from tests.timeline.drawn import viewport_totals
from tests.timeline.raw import raw_timeline
from tests.traces.expected import expected, ns
from tests.uploads import send_in_ranges

pytestmark = [pytest.mark.services, pytest.mark.slow]

TRACES = Path("/work/shared/traces")
BIG = TRACES / "gpu_training_rank0.pt.trace.json.gz"  # the browser's upload; parsed longest
RANKS = [TRACES / "multirank_sampled/rank-0.json.gz", TRACES / "multirank_sampled/rank-1.json.gz"]
OTHERS = [TRACES / "nccl_rank0.json.gz", TRACES / "amd_mi250_small.json.gz"]
PAGES = [
    "summary", "dashboard", "headline", "kernels", "capture", "timeline/tracks", "insights",
    "analyses", "cluster", "memory", "calltree", "series", "verdict",
]  # fmt: skip
INGEST = "profiler_app.ingest.tasks.ingest_part"
PARSE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    why_not = can_make_namespaces() or missing()
    if why_not:
        pytest.skip(why_not)
    remove_leftovers()
    network = Network()
    try:
        started = Deployment(network)
        started.start()
        yield started
    finally:
        # The hosts' logs outlive them, in pytest's temporary folder for this run.
        logs = tmp_path_factory.mktemp("hosts")
        for host in network.hosts.values():
            for log in host.root.glob("*.log"):
                shutil.copy(log, logs / f"{host.name}-{log.name}")
        network.remove(keep_files=bool(os.environ.get("PROFILER_KEEP_HOSTS")))


@pytest.fixture(scope="module")
def browser(deployment) -> requests.Session:
    """A signed-in browser session of an administrator the operator made on the web host."""
    password = "multihost-admin-1"
    deployment.manage(
        "createsuperuser",
        "--noinput",
        DJANGO_SUPERUSER_USERNAME="admin",
        DJANGO_SUPERUSER_PASSWORD=password,
        DJANGO_SUPERUSER_EMAIL="",
    )
    session = requests.Session()
    session.headers["Referer"] = deployment.url + "/"
    session.headers["Origin"] = deployment.url
    session.get(f"{deployment.url}/api/auth/me/")  # sets the csrftoken cookie, as the app's
    signed_in = session.post(
        f"{deployment.url}/api/auth/login/",
        json={"username": "admin", "password": password},
        headers=csrf(session),
    )
    assert signed_in.status_code == 200, signed_in.text
    return session


def csrf(session: requests.Session) -> dict[str, str]:
    return {"X-CSRFToken": session.cookies["csrftoken"]}


def collector_upload(deployment: Deployment, token: str, job: str, paths: list[Path]) -> None:
    """`profiler-collect upload`, run on this machine against the web host."""
    collect = Path(sys.executable).parent / "profiler-collect"
    sent = subprocess.run(
        [str(collect), "upload", *map(str, paths), "--job", job,
         "--server", deployment.url, "--token", token],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stdout + sent.stderr


def parts_of(session: requests.Session, url: str, job_id: int) -> list[dict]:
    response = session.get(f"{url}/api/jobs/{job_id}/parts/")
    assert response.status_code == 200, response.text
    body = response.json()
    return body["results"] if isinstance(body, dict) else body


def all_done(session, url: str, job_id: int, count: int) -> list[dict]:
    def final():
        parts = parts_of(session, url, job_id)
        finished = len(parts) == count and all(p["state"] in ("done", "failed") for p in parts)
        return parts if finished else None

    parts = wait_for(final, timeout=PARSE_TIMEOUT_S, interval=0.5)
    assert [p["state"] for p in parts] == ["done"] * count, [p["error"] for p in parts]
    return parts


def job_named(session, url: str, name: str) -> dict:
    [job] = [j for j in session.get(f"{url}/api/jobs/", params={"page_size": 100}).json()
             ["results"] if j["name"] == name]  # fmt: skip
    return job


def ingest_tasks(host: Host, outcome: str) -> list[str]:
    """The ids of the parse tasks a worker host's log says it ``received`` or ``succeeded``."""
    log = (host.root / "worker.log").read_text()
    return re.findall(rf"{re.escape(INGEST)}\[([0-9a-f-]+)\] {outcome}", log)


def ingest_runs(deployment: Deployment) -> list[tuple[int, str]]:
    """Each part's claim: the parse task that holds it (its last, once the part is parsed)."""
    with psycopg.connect(deployment.database_url()) as db:
        return db.execute("SELECT part_id, task_id FROM ingest_ingestrun").fetchall()


def parsed_on(deployment: Deployment) -> dict[int, str]:
    """Part id → the worker host whose log says it parsed that part's current run."""
    runs = ingest_runs(deployment)
    where = {}
    for worker in deployment.workers:
        succeeded = set(ingest_tasks(worker, "succeeded"))
        where.update({part: worker.name for part, task in runs if task in succeeded})
    return where


def raw_kernels(path: Path) -> tuple[Counter, Counter]:
    """Per kernel name: summed duration (ns) and count, from the trace's JSON."""
    with gzip.open(path) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    total, count = Counter(), Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            total[e["name"]] += ns(e["dur"])
            count[e["name"]] += 1
    return total, count


def assert_figures(session, url: str, job_id: int, traces: list[Path]) -> None:
    """The job's pages, read through the web host, say what the raw JSON says."""
    totals, counts = Counter(), Counter()
    for trace in traces:
        total, count = raw_kernels(trace)
        totals += total
        counts += count
    dashboard = session.get(f"{url}/api/jobs/{job_id}/dashboard/").json()
    kernel_time = dashboard["kernel_time"]
    assert kernel_time["total_count"] == sum(counts.values())
    assert kernel_time["total_ns"] == sum(totals.values())
    assert {r["name"]: r["total_ns"] for r in kernel_time["top"]} == {
        r["name"]: totals[r["name"]] for r in kernel_time["top"]
    }
    kernels = session.get(f"{url}/api/jobs/{job_id}/kernels/").json()["kernels"]
    listed = {k["name"]: (k["count"], k["total_ns"]) for k in kernels if k["name"] in totals}
    assert listed == {name: (counts[name], totals[name]) for name in totals}
    raws = [raw_timeline(str(trace)) for trace in traces]
    assert viewport_totals(session, url, job_id) == (
        sum(r.n_events for r in raws),
        sum(sum(r.busy_ns.values()) for r in raws),
    )
    for page in PAGES:
        answer = session.get(f"{url}/api/jobs/{job_id}/{page}/")
        assert answer.status_code == 200, (page, answer.status_code, answer.text[:300])


@pytest.mark.timeout(900)  # starting seven hosts and parsing twice on a busy machine
def test_hosts_that_share_no_disk_parse_across_both_workers_and_survive_losing_one(
    deployment, browser, capsys
):
    url = deployment.url
    token = browser.post(f"{url}/api/tokens/", json={"name": "collector"}, headers=csrf(browser))
    assert token.status_code == 201, token.text
    token = token.json()["token"]

    # The browser sends the largest trace; while a worker host parses it, the collector sends
    # the others, which the idle worker host takes (each takes one parse at a time).
    created = browser.post(f"{url}/api/jobs/", json={"name": "from-browser"}, headers=csrf(browser))
    assert created.status_code == 201, created.text
    browser_job = created.json()["id"]
    # The upload page's path: a resumable upload sent in ranges, then completed.
    big_part = send_in_ranges(
        browser,
        url,
        browser_job,
        BIG,
        node="algo-1",
        rank=0,
        range_bytes=256 * 1024,
        headers=csrf(browser),
    )
    collector_upload(deployment, token, "from-collector", RANKS)
    collector_upload(deployment, token, "others", OTHERS[:1])
    collector_upload(deployment, token, "others-2", OTHERS[1:])
    collector_job = job_named(browser, url, "from-collector")["id"]
    all_done(browser, url, browser_job, 1)
    all_done(browser, url, collector_job, 2)
    for name in ("others", "others-2"):
        all_done(browser, url, job_named(browser, url, name)["id"], 1)

    # A worker logs a task's success just after the part is marked parsed.
    where = wait_for(lambda: len(parsed_on(deployment)) == 5 and parsed_on(deployment))
    assert set(where.values()) == {"worker-1", "worker-2"}, where

    # Nothing went through a shared disk: the raw files and every part's timeline store are in
    # the bucket, and no host keeps a copy of an uploaded file.
    assert len(deployment.bucket_keys("profiles/parts/")) == 5
    for part_id in where:
        job_id = browser.get(f"{url}/api/parts/{part_id}/").json()["job"]
        assert deployment.bucket_keys(f"profiles/timeline/{job_id}/{part_id}/"), part_id
    sent = {path.name for path in (BIG, *RANKS, *OTHERS)}
    for host in (deployment.web, *deployment.workers, deployment.scheduler):
        kept = {path.name for path in (host.root / "data").rglob("*") if path.is_file()}
        assert not any(name.endswith(tuple(sent)) for name in kept), host.name
    assert_figures(browser, url, browser_job, [BIG])
    assert_figures(browser, url, collector_job, RANKS)
    # The SQL page: DuckDB on the web host reads the stores the workers left in the bucket.
    per_rank = [[rank, len(expected(str(path)).events)] for rank, path in enumerate(RANKS)]
    for query in (
        "select rank, count(*) from events group by rank order by 1",
        "select rank, count(*) from events where start_ns > 0 group by 1 order by 1",
    ):
        answer = browser.post(
            f"{url}/api/jobs/{collector_job}/sql/", json={"query": query}, headers=csrf(browser)
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["rows"] == per_rank, query

    # A worker host loses power while it parses: the part goes back to the other, and its
    # figures are the same.
    victim, run = lose_a_worker_mid_parse(deployment, browser, url, big_part)
    [survivor] = [w for w in deployment.workers if w is not victim]
    [part] = all_done(browser, url, browser_job, 1)
    assert part["id"] == big_part
    assert wait_for(lambda: parsed_on(deployment).get(big_part)) == survivor.name
    assert run in ingest_tasks(victim, "received") and run not in ingest_tasks(victim, "succeeded")
    assert_figures(browser, url, browser_job, [BIG])

    with capsys.disabled():
        print(
            f"\n[several hosts] parts parsed per worker host: {dict(Counter(where.values()))}; "
            f"{victim.name} lost power while parsing part {big_part} (task {run}), "
            f"{survivor.name} finished it"
        )


def lose_a_worker_mid_parse(deployment, session, url: str, part_id: int) -> tuple[Host, str]:
    """Reprocesses the part and, once a worker host's task holds its claim (the parse has
    begun), pulls that host's network cable, so it can no longer finish it; if the part is
    still not parsed then, the host loses power. A parse that ended before the cable was
    pulled is tried again. Returns the host and its task's id."""
    for _ in range(10):
        seen = {w.name: set(ingest_tasks(w, "received")) for w in deployment.workers}
        sent = session.post(f"{url}/api/parts/{part_id}/reprocess/", headers=csrf(session))
        assert sent.status_code == 202, sent.text

        def taken(seen=seen):
            for worker in deployment.workers:
                for run in set(ingest_tasks(worker, "received")) - seen[worker.name]:
                    if (part_id, run) in ingest_runs(deployment):
                        return worker, run
            return None

        worker, run = wait_for(taken, timeout=PARSE_TIMEOUT_S, interval=0.05)
        worker.unplug()
        part = session.get(f"{url}/api/parts/{part_id}/").json()
        if part["state"] == "processing" and (part_id, run) in ingest_runs(deployment):
            worker.power_off()
            return worker, run
        worker.plug_in()  # it finished first: try again
        wait_for(lambda: part_state(session, url, part_id) == "done", timeout=PARSE_TIMEOUT_S)
    raise AssertionError("every parse ended before its worker host could be unplugged")


def part_state(session, url: str, part_id: int) -> str:
    return session.get(f"{url}/api/parts/{part_id}/").json()["state"]
