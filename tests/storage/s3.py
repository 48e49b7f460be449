"""A real S3 API on loopback for the object-storage tests and benchmarks: moto's standalone
server, one per test session, a fresh bucket per test."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import boto3
import requests

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "profiler-tests",
    "AWS_SECRET_ACCESS_KEY": "profiler-tests-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def moto_server(log_path: Path):
    """moto's S3 server on a free loopback port; yields its endpoint URL."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    requests.get(f"{endpoint}/moto-api/data.json", timeout=1)
                    break
                except requests.ConnectionError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"moto server did not start:\n{log_path.read_text()}"
                        ) from None
                    time.sleep(0.1)
            yield endpoint
        finally:
            process.terminate()
            process.wait(10)


def client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
    )


def new_bucket(endpoint: str) -> str:
    name = f"profiles-{uuid.uuid4().hex[:12]}"
    client(endpoint).create_bucket(Bucket=name)
    return name


def storage_env(endpoint: str, bucket: str, prefix: str = "profiles") -> dict[str, str]:
    """The environment of a process keeping its profiles in ``bucket``."""
    return {
        **CREDENTIALS,
        "PROFILER_STORAGE_URL": f"s3://{bucket}/{prefix}",
        "AWS_ENDPOINT_URL": endpoint,
    }


def keys(endpoint: str, bucket: str, prefix: str = "") -> list[str]:
    found = []
    for page in (
        client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    ):
        found += [item["Key"] for item in page.get("Contents", ())]
    return sorted(found)


def _refuse_nothing(method: str, path: str) -> bool:
    return False


class Relay(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint in front of moto: passes each request through to ``upstream``, but answers
    AccessDenied to the requests ``refuse`` picks."""

    upstream = ""
    refuse = staticmethod(_refuse_nothing)

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.refuse(self.command, self.path):
            status, headers = 403, {"Content-Type": "application/xml"}
            content = (
                b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
                b"<Message>Access Denied</Message></Error>"
            )
        else:
            sent = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            answer = requests.request(
                self.command,
                self.upstream + self.path,
                data=body,
                headers=sent,
                timeout=30,
                stream=True,
            )
            # The bytes as sent (a .gz object may come with Content-Encoding: gzip).
            content = answer.raw.read(decode_content=False)
            status, headers = answer.status_code, answer.headers
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(content)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


def relay(upstream: str, refuse: Callable[[str, str], bool] = _refuse_nothing) -> type[Relay]:
    """A ``Relay`` handler class in front of ``upstream`` refusing what ``refuse`` picks."""
    return type("Handler", (Relay,), {"upstream": upstream, "refuse": staticmethod(refuse)})


class SlowJoin(Relay):
    """A bucket whose join of a multipart upload's parts answers after longer than any other
    request may keep the app waiting (S3 may take minutes to join a large object's parts)."""

    held_s = 0.0

    def do_POST(self) -> None:
        if "uploadId=" in self.path:  # CompleteMultipartUpload
            time.sleep(self.held_s)
        self._answer()


@contextmanager
def serving(handler: type[Relay]):
    """An endpoint on a free loopback port answering with ``handler``; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def slow_join(upstream: str, held_s: float):
    """A ``SlowJoin`` endpoint in front of ``upstream``; yields its URL."""
    return serving(type("Handler", (SlowJoin,), {"upstream": upstream, "held_s": held_s}))
