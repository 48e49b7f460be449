"""Each query runs in a process of its own whose memory the kernel caps: what DuckDB builds
(100 MB strings it then cuts) never grows the web process; past the cap the query stops with a
message, and an answer whose process died mid-way still ends as JSON saying so."""

import json
import subprocess
import sys
import textwrap

import pytest

from profiler_app.sql.pure.answer import MAX_VALUE_CHARS
from profiler_app.sql.pure.console import Limits, QueryFailed, QueryRefused
from profiler_app.sql.pure.isolated import open_isolated

WIDE = "select repeat('x', 100000000) as r from range(20)"

MEASURE = """
import json, sys
from profiler_app.sql.pure.console import Limits
from profiler_app.sql.pure.isolated import open_isolated

def peak_mb():
    line = next(x for x in open("/proc/self/status") if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024

open_isolated([], "select 1", Limits(), 1024).close()  # the query server started, as in a server
base = peak_mb()
answer = open_isolated([], sys.argv[1], Limits(), 1024)
document = json.loads(b"".join(answer))
answer.close()
print(json.dumps({"growth": peak_mb() - base, "document": document}))
"""


def test_twenty_100_mb_values_do_not_grow_the_process_that_asks():
    # Run in the asking process, this query grew it by 512 MB (its values cut all the same);
    # its own process may take 1 GB here.
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MEASURE), WIDE],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    rows = got["document"]["rows"]
    assert [len(value) for [value] in rows] == [MAX_VALUE_CHARS] * 20
    assert got["document"]["values_cut"] and not got["document"]["truncated"]
    assert got["growth"] < 32, got["growth"]


def test_a_query_past_the_memory_cap_stops_with_a_message():
    with pytest.raises(QueryFailed) as refused:
        open_isolated([], "select repeat('x', 1000000000) as r", Limits(), 512)
    assert str(refused.value).startswith(
        "The query needed more than 512 MB of memory (SQL_PROCESS_MEMORY_MB) and was stopped. "
        "Select narrower values, fewer rows, or aggregate. (Out of Memory Error"
    )


def test_an_answer_whose_process_died_still_ends_as_json_saying_so():
    answer = open_isolated([], "select * from range(1000000000)", Limits(max_rows=10**9), 512)
    pieces = iter(answer)
    sent = next(pieces) + next(pieces)  # the columns, then the first rows
    answer.process.kill()
    document = json.loads(sent + b"".join(pieces))
    answer.close()
    assert document["truncated"] and document["truncated_by"] == "error"
    assert "stopped" in document["note"]
    assert document["rows"][:3] == [[0], [1], [2]]


def test_refusals_and_bad_sql_raise_as_in_the_asking_process():
    with pytest.raises(QueryRefused, match="Only SELECT"):
        open_isolated([], "drop table events", Limits(), 512)
    with pytest.raises(QueryFailed, match="not_a_column"):
        open_isolated([], "select not_a_column", Limits(), 512)
