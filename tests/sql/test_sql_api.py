"""SQL console API on a two-rank job parsed by the real ingest, against the raw JSON."""

import gzip
import json
from collections import Counter

import pytest
from django.conf import settings as django_settings
from drf_spectacular.generators import SchemaGenerator
from openapi_schema_validator import OAS30Validator

from profiler_app.sql import logic
from profiler_app.sql.pure.console import EXAMPLES
from profiler_app.traces.store_layout import TOTALS_FILE
from tests.sql.raw import raw_events
from tests.timeline.jobs import parse_job
from tests.traces.expected import DATA, expected

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"
SQL_MAX_CONCURRENT = django_settings.SQL_MAX_CONCURRENT


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture
def job(user):
    return parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])


def sql(client, job, query: str):
    """The answer; a streamed one read to its end (``.json()`` parses it, as for the others)."""
    response = client.post(f"/api/jobs/{job.id}/sql/", {"query": query}, format="json")
    if response.streaming:
        body = b"".join(response.streaming_content)  # the test client closes it at the end
        response.json = lambda: json.loads(body)
    return response


@pytest.mark.django_db
def test_it_counts_events_per_rank_as_the_raw_json_does(api, job):
    body = sql(api, job, "select rank, node, count(*) from events group by all order by 1").json()
    assert body["columns"] == ["rank", "node", "count_star()"]
    assert body["types"] == ["INTEGER", "VARCHAR", "BIGINT"]
    assert body["rows"] == [
        [0, "algo-1", len(expected(RANK0).events)],
        [1, "algo-2", len(expected(RANK1).events)],
    ]
    assert body["truncated"] is False and body["elapsed_ms"] > 0


@pytest.mark.django_db
def test_the_worker_writes_each_parts_totals_and_group_by_reads_them(api, job):
    parts = logic.job_parts(job)
    assert len(parts) == 2
    assert all((p.directory / TOTALS_FILE).exists() for p in parts)  # before any query
    body = sql(api, job, "select rank, count(*) from events group by rank order by 1").json()
    assert body["read_from"] == "totals"
    assert body["rows"] == [[0, len(expected(RANK0).events)], [1, len(expected(RANK1).events)]]
    body = sql(api, job, "select rank, count(*) from events where start_ns > 0 group by 1").json()
    assert body["read_from"] == "events"


@pytest.mark.django_db
def test_it_sums_a_kernels_time_on_one_rank_as_the_raw_json_does(api, job):
    raw = expected(RANK1)
    name = max(
        (n for n in raw.kernel_count if not n.startswith(("Memcpy", "Memset"))),
        key=lambda n: raw.kernel_total_ns[n],
    )
    quoted = name.replace("'", "''")
    body = sql(
        api,
        job,
        "select count(*) as n, sum(dur_ns) as total, min(dur_ns), max(dur_ns) from kernels "
        f"where rank = 1 and name = '{quoted}'",
    ).json()
    assert body["rows"] == [
        [
            raw.kernel_count[name],
            raw.kernel_total_ns[name],
            raw.kernel_min_ns[name],
            raw.kernel_max_ns[name],
        ]
    ]


@pytest.mark.django_db
def test_it_answers_the_all_reduce_example_as_the_raw_json_does(api, job):
    [query] = [q for n, q in EXAMPLES if "all-reduce" in n]
    waits = [
        (e["start_ns"], e["start_ns"] + e["dur_ns"])
        for e in raw_events(RANK1)
        if e["cat"] in ("cpu_op", "user_annotation") and "all_reduce" in e["name"].lower()
    ]
    want: Counter = Counter()
    total: Counter = Counter()
    for rank, trace in ((0, RANK0), (1, RANK1)):
        for e in raw_events(trace):
            if e["cat"] != "kernel":
                continue
            end = e["start_ns"] + e["dur_ns"]
            for lo, hi in waits:
                if e["start_ns"] < hi and end > lo:
                    want[rank, e["name"]] += 1
                    total[rank, e["name"]] += e["dur_ns"]
    body = sql(api, job, query).json()
    assert body["columns"] == ["rank", "name", "kernels", "total_ns"]
    assert len(body["rows"]) > 0
    assert {(r, n): (k, t) for r, n, k, t in body["rows"]} == {
        key: (want[key], total[key]) for key in want
    }


@pytest.mark.django_db
def test_it_answers_every_example(api, job):
    for name, query in EXAMPLES:
        response = sql(api, job, query)
        assert response.status_code == 200, (name, response.json())
        # The two-rank trace recorded no [memory] events: the memory view is there, empty.
        assert bool(response.json()["rows"]) != ("memory" in name.lower()), name


@pytest.mark.django_db
def test_it_answers_the_memory_example_as_the_raw_json_does(api, user):
    job = parse_job(user, "memory", [("algo-1", 0, "cpu_memory_profile.json.gz")])
    with gzip.open(DATA / "cpu_memory_profile.json.gz") as f:
        events = json.load(f)["traceEvents"]
    peak = max(e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]")
    [query] = [q for n, q in EXAMPLES if "memory" in n.lower()]
    rows = sql(api, job, query).json()["rows"]
    assert len(rows) == 1 and int(rows[0][-1]) == peak == 1_723_440


@pytest.mark.django_db
def test_it_sends_epoch_nanoseconds_as_text(api, job):
    body = sql(api, job, "select min(start_ns) as first from events where rank = 0").json()
    assert body["rows"] == [[str(expected(RANK0).start_ns)]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("DELETE FROM events", "Only SELECT queries can run here"),
        ("INSERT INTO strings VALUES (1, 'a', 0, 0, 'x')", "Only SELECT queries can run here"),
        ("select 1; select 2", "Send one statement at a time."),
        ("select nope from events", 'column "nope" not found'),
        ("select * from read_parquet('/etc/passwd')", "file system operations are disabled"),
        ("", "This field may not be blank."),
    ],
)
def test_it_answers_400_with_duckdbs_message(api, job, query, says):
    response = sql(api, job, query)
    assert response.status_code == 400
    assert says in str(response.json())


@pytest.mark.django_db
def test_it_answers_once_past_the_time_limit_with_a_status_browsers_do_not_resend(
    api, job, settings
):
    settings.SQL_TIMEOUT_S = 0.5
    response = sql(
        api,
        job,
        "select count(*) from events a, events b, range(1000) c where a.dur_ns + c.range = -b.dur_ns",
    )
    assert response.status_code == 422  # a 408 the browser would send again
    assert response.json()["code"] == "query_timeout"
    assert "longer than 0.5 s" in response.json()["detail"]


@pytest.mark.django_db
def test_it_caps_the_rows_it_returns(api, job, settings):
    settings.SQL_MAX_ROWS = 100
    body = sql(api, job, "select name from events").json()
    assert len(body["rows"]) == 100 and body["truncated"] is True and body["max_rows"] == 100
    assert body["truncated_by"] == "rows" and "only the first 100 came back" in body["note"]


@pytest.mark.django_db
def test_it_cuts_an_answer_past_the_byte_bound_and_says_why(api, job, settings, schema):
    settings.SQL_MAX_BYTES = 50_000
    response = sql(api, job, "select * from events")
    assert response.status_code == 200 and response.streaming
    body = response.json()
    assert body["truncated"] is True and body["truncated_by"] == "bytes"
    assert body["max_bytes"] == 50_000 and 0 < len(body["rows"]) < 1000
    assert len(json.dumps(body["rows"], separators=(",", ":"), ensure_ascii=False)) <= 50_002
    assert body["note"].startswith(
        f"The answer reached 50,000 bytes after {len(body['rows'])} rows"
    )
    content = schema["paths"]["/api/jobs/{job_id}/sql/"]["post"]["responses"]["200"]["content"]
    validator = OAS30Validator(
        {**content["application/json"]["schema"], "components": schema["components"]}
    )
    assert not list(validator.iter_errors(body))


@pytest.mark.django_db
def test_it_frees_its_query_slot_when_the_answer_is_closed(job, settings):
    settings.SQL_TIMEOUT_S = 0.5
    for _ in range(SQL_MAX_CONCURRENT + 1):  # read in part, then closed: the client has gone
        answer = logic.query_job(job, "select * from events")
        next(iter(answer))
        answer.close()  # what the server does once the response ends, read out or not
    answer = logic.query_job(job, "select 1 as one")
    assert b'"rows":[[1]]' in b"".join(answer)
    answer.close()


@pytest.mark.django_db
def test_it_lets_teammates_query_and_strangers_not(client_for, job, teammate):
    assert sql(client_for(teammate), job, "select 1 as one").json()["rows"] == [[1]]
    assert sql(client_for(None), job, "select 1").status_code == 401
    assert client_for(None).get("/api/sql/schema/").status_code == 401
    assert (
        client_for(teammate).post("/api/jobs/999999/sql/", {"query": "select 1"}).status_code == 404
    )


@pytest.mark.django_db
def test_it_documents_the_views(api):
    body = api.get("/api/sql/schema/").json()
    assert [v["name"] for v in body["views"]] == [
        "events",
        "kernels",
        "steps",
        "tracks",
        "strings",
        "memory",
    ]
    events = next(v for v in body["views"] if v["name"] == "events")
    start = next(c for c in events["columns"] if c["name"] == "start_ns")
    assert start == {
        "name": "start_ns",
        "type": "BIGINT",
        "description": "start, ns since the unix epoch",
    }
    assert [e["name"] for e in body["examples"]] == [n for n, _ in EXAMPLES]
