"""``profiler-collect``: upload existing PyTorch profiler traces, or what a job left in its spool.

One module on purpose (near 450 lines): the commands' options and the commands share the
server options, the patience and the progress bar; the upload itself is ``collector.api``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

from collector.api import ApiClient, ApiError
from collector.config import default_spool_dir
from collector.identity import safe_name
from collector.spool import iter_spools
from collector.trace_files import XPLANE_SUFFIX, TraceFile, describe, find_traces
from collector.uploader import SpoolSender

DESCRIPTION = "Send PyTorch training profiles to a profiler-app server."

T = TypeVar("T")
# How long upload and flush wait, in all, for a busy (429, 503) or unreachable server.
DEFAULT_MAX_WAIT_S = 900.0

EPILOG = """\
examples:
  profiler-collect upload ./log/resnet50 --job resnet50-baseline
  profiler-collect upload rank-0.json.gz rank-1.json.gz --job nccl-test --wait
  profiler-collect flush
  profiler-collect check --job resnet50-run-8 --threshold 5

The server and token default to $PROFILER_SERVER_URL and $PROFILER_TOKEN.
"""


class Patience:
    """Calls to the server that wait out a busy or unreachable one: the server's Retry-After
    where it gave one, else a growing pause, and ``max_wait_s`` of waiting in all."""

    def __init__(self, max_wait_s: float, stream: TextIO) -> None:
        self.max_wait_s = max_wait_s
        self.stream = stream
        self.waited_s = 0.0

    def call(self, what: str, fn: Callable[[], T]) -> T:
        tries = 0
        while True:
            try:
                return fn()
            except ApiError as err:
                if not err.retryable:
                    raise
                tries += 1
                asked = err.retry_after_s
                delay = asked if asked is not None else min(30.0, 2.0**tries)
                left = self.max_wait_s - self.waited_s
                if delay > left:
                    raise ApiError(
                        f"{err} (gave up: {self.waited_s:.0f} s of --max-wait "
                        f"{self.max_wait_s:g} s spent waiting)",
                        err.status,
                    ) from err
                why = f"server busy ({err.status})" if err.status else "server unreachable"
                if asked is not None:
                    why += ", as it asked"
                self.stream.write(
                    f"\n{what}: {why}: waiting {delay:.0f} s before trying again "
                    f"({left - delay:.0f} s of --max-wait left)\n"
                )
                self.stream.flush()
                time.sleep(delay)
                self.waited_s += delay


class ProgressBar:
    """``name [#####-----]  52%  0.9/1.7 MB`` on a terminal; one line per file otherwise."""

    WIDTH = 24

    def __init__(self, label: str, stream: TextIO) -> None:
        self.label = label
        self.stream = stream
        self.tty = stream.isatty()
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._sent = self._total = 0

    def __call__(self, sent: int, total: int) -> None:
        self._sent, self._total = sent, total
        now = time.monotonic()
        if self.tty and (now - self._last_draw > 0.1 or sent >= total):
            self._last_draw = now
            self.stream.write("\r" + self._line())
            self.stream.flush()

    def finish(self, note: str) -> None:
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}{self._line()}  {note}\n")
        self.stream.flush()

    def _line(self) -> str:
        total = max(self._total, 1)
        filled = int(self.WIDTH * self._sent / total)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        mb_s = self._sent / 1e6 / max(time.monotonic() - self.started, 1e-6)
        return (
            f"{self.label} [{bar}] {100 * self._sent / total:3.0f}%  "
            f"{self._sent / 1e6:.1f}/{self._total / 1e6:.1f} MB  {mb_s:.1f} MB/s"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="profiler-collect",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(title="commands", dest="command", required=True, metavar="COMMAND")
    _upload_command(sub)
    _check_command(sub)
    _flush_command(sub)
    return parser


def _server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server",
        default=os.environ.get("PROFILER_SERVER_URL"),
        help="server URL, e.g. http://profiler:8000 (default $PROFILER_SERVER_URL)",
    )
    p.add_argument(
        "--token",
        default=os.environ.get("PROFILER_TOKEN"),
        help="API token (default $PROFILER_TOKEN)",
    )


def _wait_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-wait",
        type=float,
        default=DEFAULT_MAX_WAIT_S,
        metavar="SECONDS",
        help="how long to wait in all for a busy (429, 503) or unreachable server before "
        "giving up (default %(default)g)",
    )


def _upload_command(sub: Any) -> None:
    up = sub.add_parser(
        "upload",
        help="upload existing PyTorch profiler traces (*.pt.trace.json[.gz]), one file per "
        "rank, as one job",
        description="Upload PyTorch profiler traces as one job, one part per file. A file's rank "
        "comes from its distributedInfo, else from a name like rank-1.json.gz.",
    )
    up.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="trace files, or directories searched for *.json / *.json.gz",
    )
    up.add_argument("--job", required=True, help="job name (created if it does not exist)")
    up.add_argument(
        "--series",
        default=os.environ.get("PROFILER_SERIES"),
        help="the model or experiment this job is a run of (default $PROFILER_SERIES, else "
        "the job name without its run suffix)",
    )
    _server_options(up)
    up.add_argument(
        "--node", help="node name for every file (default: the trace's host name, else algo-1)"
    )
    up.add_argument("--rank", type=int, help="rank for a single file whose rank cannot be inferred")
    up.add_argument(
        "--wait", action="store_true", help="wait until the server has processed every part"
    )
    _wait_option(up)


def _check_command(sub: Any) -> None:
    ck = sub.add_parser(
        "check",
        help="judge a job against its baseline for CI: exit 0 no regression, 1 regression, "
        "2 could not judge",
        description="Wait until the job (and its baseline) are parsed, print the regression "
        "verdict and its top causes, and exit 0 (no regression), 1 (regression) or 2 (could "
        "not judge, with why).",
    )
    ck.add_argument("--job", required=True, help="name of the job to judge")
    ck.add_argument(
        "--baseline", help="name of the job to judge against (default: the series' baseline)"
    )
    ck.add_argument(
        "--threshold",
        type=float,
        metavar="PCT",
        help="median step time growth (%%) that is a regression (default: the series' setting)",
    )
    ck.add_argument("--json", action="store_true", help="print the verdict as JSON")
    ck.add_argument(
        "--timeout", type=float, default=3600, help="seconds to wait for parsing (default 3600)"
    )
    _server_options(ck)


def _flush_command(sub: Any) -> None:
    fl = sub.add_parser(
        "flush",
        help="upload what profiled jobs left in the local spool while the server was "
        "unreachable (nothing is sent twice)",
        description="Upload chunks that training jobs spooled locally while the server was "
        "unreachable, then their final status. Uploaded chunks are removed from the spool.",
    )
    fl.add_argument(
        "--spool",
        default=os.environ.get("PROFILER_SPOOL_DIR") or default_spool_dir(),
        help="spool directory (default $PROFILER_SPOOL_DIR or %(default)s)",
    )
    fl.add_argument(
        "--end",
        action="store_true",
        help="end the flushed jobs whose process never sent a final status (killed or crashed): "
        "they are marked Stopped, as of the last chunk they recorded, and judged",
    )
    _server_options(fl)
    _wait_option(fl)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "upload":
            return upload(args)
        if args.command == "check":
            return check(args)
        return flush(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _is_xplane(info: TraceFile) -> bool:
    return info.path.name.endswith(XPLANE_SUFFIX)


def upload(args: argparse.Namespace) -> int:
    if not args.server:
        print("error: no server: pass --server or set PROFILER_SERVER_URL", file=sys.stderr)
        return 2
    try:
        files = [describe(p) for p in find_traces(args.paths)]
    except (OSError, EOFError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not files:
        print("error: no *.json, *.json.gz or *.xplane.pb traces found", file=sys.stderr)
        return 2
    ranks = _assign_ranks(files, args.rank)
    nodes = [args.node or _node_of(f) for f in files]
    client = ApiClient(args.server, args.token)
    patience = Patience(args.max_wait, sys.stderr)
    try:
        job, created = patience.call(
            "creating the job",
            lambda: client.ensure_job(
                {
                    "name": args.job,
                    "status": "in_progress",
                    # An XPlane profile names its framework itself (the server records it).
                    "framework": "" if any(_is_xplane(f) for f in files) else "PyTorch",
                    "instance_count": len(set(nodes)),
                    "series": args.series,
                }
            ),
        )
    except ApiError as err:
        print(f"error: cannot create job {args.job!r}: {err}", file=sys.stderr)
        return 1
    verb = "created" if created else "adding to existing"
    print(f"{verb} job {job['name']!r} (id {job['id']}) on {args.server}", file=sys.stderr)
    failed = stored = 0
    try:
        for info, rank, node in zip(files, ranks, nodes, strict=True):
            bar = ProgressBar(f"{info.path.name} (rank {rank}, {node})", sys.stderr)
            fields = {"node": node, "rank": rank, "kind": "kineto"}
            try:
                part, new = patience.call(
                    info.path.name,
                    partial(client.upload_part, job["id"], info.path, info.path.name, fields, bar),
                )
            except (ApiError, OSError) as err:
                bar.finish(f"FAILED: {err}")
                failed += 1
                continue
            stored += 1
            bar.finish("uploaded" if new else f"already on the server (part {part['id']})")
    finally:
        if created and not stored:
            _remove_empty_job(client, job)
    if created and not failed:
        client.update_job(job["id"], {"status": "completed"})
    if args.wait and not failed:
        failed += _wait_for_processing(client, job["id"])
    return 1 if failed else 0


def _remove_empty_job(client: ApiClient, job: dict) -> None:
    """The job this command created holds nothing: it goes, so no empty job stays behind."""
    try:
        client.delete_job(job["id"])
    except ApiError as err:
        print(f"could not remove the empty job {job['name']!r}: {err}", file=sys.stderr)
        return
    print(f"removed the empty job {job['name']!r}: nothing was stored", file=sys.stderr)


# Exit codes of ``check``: what a CI step branches on.
NO_REGRESSION, REGRESSION, UNJUDGED = 0, 1, 2
EXIT_CODES = {"no_regression": NO_REGRESSION, "regression": REGRESSION}
TOP_CAUSES = 8


def check(args: argparse.Namespace) -> int:
    if not args.server:
        print("error: no server: pass --server or set PROFILER_SERVER_URL", file=sys.stderr)
        return UNJUDGED
    client = ApiClient(args.server, args.token)
    try:
        job = client.find_job(args.job)
        baseline = client.find_job(args.baseline) if args.baseline else None
        missing = [n for n, j in ((args.job, job), (args.baseline, baseline)) if n and not j]
        if missing or job is None:
            print(f"could not judge: no job named {missing[0]!r}", file=sys.stderr)
            return UNJUDGED
        for each in (job, baseline):
            if each is not None and _wait_for_processing(client, each["id"], args.timeout):
                print(f"could not judge: {each['name']!r} did not parse", file=sys.stderr)
                return UNJUDGED
        verdict = client.check(job["id"], baseline["id"] if baseline else None, args.threshold)
    except ApiError as err:
        print(f"could not judge: {err}", file=sys.stderr)
        return UNJUDGED
    if args.json:
        print(json.dumps(verdict, indent=2))
    else:
        print(describe_verdict(verdict))
    return EXIT_CODES.get(verdict["status"], UNJUDGED)


def describe_verdict(verdict: dict) -> str:
    """The verdict in a few lines: status, against what, why, and the top causes."""
    label = {"regression": "REGRESSION", "no_regression": "no regression"}
    head = label.get(verdict["status"], "could not judge")
    against = f" against {verdict['baseline_name']}" if verdict.get("baseline_name") else ""
    lines = [f"{verdict['job_name']}{against}: {head}", f"  {verdict['reason']}"]
    test = verdict.get("test")
    if test:
        lines.append(
            f"  {test['name']}: U = {test['u']:g}, p = {test['p_value']:.3g} ({test['method']})"
        )
    for cause in verdict.get("causes", [])[:TOP_CAUSES]:
        lines.append(f"  - {cause['name'][:80]}: {cause['detail']}")
    return "\n".join(lines)


# A spool whose process never recorded a final status (killed, crashed): flushed without --end,
# its job stays in progress until the server's silence sweep ends it.
UNENDED = (
    "unchanged: its process never sent one, so the job reads In progress until the server "
    "ends it after its silence (COLLECTOR_SILENCE_MINUTES), or flush it with --end"
)


def flush(args: argparse.Namespace) -> int:
    spools = list(iter_spools(args.spool))
    if not spools:
        print(f"nothing to flush in {args.spool}", file=sys.stderr)
        return 0
    failed = 0
    for spool in spools:
        info = spool.read_job()
        server = args.server or info.get("server_url")
        label = f"{info['job']['name']} {spool.path.name}"
        if not server:
            print(f"{label}: no server known: pass --server", file=sys.stderr)
            failed += 1
            continue
        sender = SpoolSender(spool, ApiClient(server, args.token))
        patience = Patience(args.max_wait, sys.stderr)
        pending = spool.pending()
        # Read before anything is sent: each upload writes to the spool's ledger.
        last_recorded = spool.last_recorded_at() if args.end else None
        try:
            for path in pending:
                bar = ProgressBar(f"{label} {path.name}", sys.stderr)
                patience.call(path.name, partial(sender.send_chunk, path, progress=bar))
                bar.finish("done")
            patience.call(label, sender.flush)
            if args.end and not info.get("final_status"):
                ended_at = last_recorded.isoformat() if last_recorded else None
                patience.call(label, partial(sender.send_status, "stopped", ended_at))
                info["final_status"] = "stopped (--end)"
        except (ApiError, OSError) as err:
            print(f"{label}: {err}", file=sys.stderr)
            failed += 1
            continue
        print(
            f"{label}: {sender.sent_chunks} chunk(s) uploaded, {sender.known_chunks} already "
            f"on the server, status {info.get('final_status') or UNENDED}",
            file=sys.stderr,
        )
        spool.remove_if_empty()
    return 1 if failed else 0


def _assign_ranks(files: list[TraceFile], forced: int | None) -> list[int]:
    if forced is not None:
        return [forced] * len(files)
    known = [f.rank for f in files]
    if all(r is not None for r in known):
        return [r for r in known if r is not None]
    # Files without a rank take the lowest ranks nobody claimed, in file-name order.
    taken = {r for r in known if r is not None}
    free = (r for r in range(len(files) + len(taken)) if r not in taken)
    ranks = [r if r is not None else next(free) for r in known]
    for f, r in zip(files, ranks, strict=True):
        if f.rank is None:
            print(f"note: {f.path.name} has no rank; using rank {r}", file=sys.stderr)
    return ranks


def _node_of(info: TraceFile) -> str:
    return safe_name(info.host_name) if info.host_name else "algo-1"


def _wait_for_processing(client: ApiClient, job_id: int, timeout_s: float = 3600) -> int:
    """Polls until every part of the job is processed; returns how many failed (or 1 on
    timeout)."""
    deadline = time.monotonic() + timeout_s
    # Redrawn in place on a terminal; in a CI log, one line each time the count moves.
    tty = sys.stderr.isatty()
    shown = ""
    while time.monotonic() < deadline:
        parts = client.list_parts(job_id)
        done = sum(p["state"] == "done" for p in parts)
        failed = [p for p in parts if p["state"] == "failed"]
        line = f"processed {done + len(failed)}/{len(parts)}"
        if tty:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        elif line != shown:
            print(line, file=sys.stderr, flush=True)
        shown = line
        if done + len(failed) == len(parts):
            if tty:
                print(file=sys.stderr)
            for p in failed:
                print(f"part {p['original_name']} failed: {p['error']}", file=sys.stderr)
            return len(failed)
        time.sleep(1)
    print(("\n" if tty else "") + "timed out waiting for processing", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
