"""A TCP proxy in front of the S3 test server that passes every byte through unchanged and
counts what each request puts: the length of its body, as the request declares it (S3 clients
always send Content-Length; a body in aws-chunked framing declares its payload in
x-amz-decoded-content-length)."""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Sent:
    method: str
    target: str  # the path and query
    body_bytes: int


class _RequestReader:
    """Follows the requests in one connection's client-to-server bytes."""

    def __init__(self, sent: list[Sent], lock: threading.Lock) -> None:
        self.sent, self.lock = sent, lock
        self.head = b""
        self.body_left = 0

    def feed(self, data: bytes) -> None:
        while data:
            if self.body_left:
                taken = min(self.body_left, len(data))
                self.body_left -= taken
                data = data[taken:]
                continue
            self.head += data
            data = b""
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end], self.head[end + 4 :]
            self.head = b""
            self._request(head.decode("latin-1"))

    def _request(self, head: str) -> None:
        line, *fields = head.split("\r\n")
        method, target, _ = line.split(" ", 2)
        headers = {}
        for field in fields:
            name, _, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.body_left = int(headers.get("content-length", "0"))
        body = int(headers.get("x-amz-decoded-content-length", self.body_left))
        with self.lock:
            self.sent.append(Sent(method, target, body))


class CountingProxy:
    def __init__(self, upstream: str) -> None:
        where = urlsplit(upstream)
        self.upstream = (where.hostname, where.port)
        self.sent: list[Sent] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def put_bytes(self) -> int:
        """The bytes of every request body sent so far, but those of POSTs (which create and
        complete multipart uploads, and delete objects: no file's bytes)."""
        with self._lock:
            return sum(s.body_bytes for s in self.sent if s.method == "PUT")

    def requests(self) -> list[Sent]:
        with self._lock:
            return list(self.sent)

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self.upstream)
            reader = _RequestReader(self.sent, self._lock)
            threading.Thread(target=_pump, args=(client, server, reader.feed), daemon=True).start()
            threading.Thread(target=_pump, args=(server, client, None), daemon=True).start()


def _pump(source: socket.socket, dest: socket.socket, watch) -> None:
    try:
        while data := source.recv(1024 * 1024):
            if watch is not None:
                watch(data)
            dest.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, dest):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
