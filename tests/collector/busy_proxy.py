"""An HTTP proxy in front of the test server that answers the first ``refusals`` part uploads
with 429 and a Retry-After, as a server whose backlog is full does, and passes everything else
through (so what is stored is stored by the real server)."""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PARTS = re.compile(r"^/api/jobs/\d+/parts/$")


class BusyProxy:
    def __init__(self, target_url: str, refusals: int, retry_after_s: int) -> None:
        target = urlsplit(target_url)
        self.refusals_left = refusals
        self.refused = 0
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and PARTS.match(self.path):
                    with lock:
                        refuse = proxy.refusals_left > 0
                        if refuse:
                            proxy.refusals_left -= 1
                            proxy.refused += 1
                    if refuse:
                        self.send_response(429)
                        self.send_header("Retry-After", str(retry_after_s))
                        self.send_header("Content-Type", "application/json")
                        detail = b'{"detail": "The server is busy parsing; try again."}'
                        self.send_header("Content-Length", str(len(detail)))
                        self.end_headers()
                        self.wfile.write(detail)
                        return
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _relay

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
