"""Small client for the profiler-app REST API (token auth), used by the uploader and the CLI."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import requests
from requests_toolbelt import MultipartEncoder, MultipartEncoderMonitor

ProgressFn = Callable[[int, int], None]

# A server that has not taken the connection in this long is out of reach (a lost SYN is sent
# again after 1 s and 3 s): the next try, or a job's exit, need not wait the whole request
# timeout, which is for an upload's answer.
CONNECT_TIMEOUT_S = 10.0


class ApiError(Exception):
    """The server answered with an error. ``retryable`` says whether trying later can help, and
    ``retry_after_s`` how long the server asked to wait first (its Retry-After), if it did."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class ServerUnreachable(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(message, None, retryable=True)


class ApiClient:
    def __init__(
        self,
        server_url: str,
        token: str | None,
        timeout_s: float = 30.0,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.server_url = server_url.rstrip("/")
        self._timeouts = (min(connect_timeout_s, timeout_s), timeout_s)
        self._session = requests.Session()
        self._session.headers["User-Agent"] = "profiler-app-collector/1"
        if token:
            self._session.headers["Authorization"] = f"Token {token}"
        # requests.Session is not thread-safe; the uploader thread and a signal handler share one.
        self._lock = threading.Lock()

    def close(self) -> None:
        self._session.close()

    def find_job(self, name: str) -> dict[str, Any] | None:
        found = self._request("GET", "/api/jobs/", params={"name": name})
        results = found.get("results", [])
        return results[0] if results else None

    def ensure_job(self, payload: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Create the job, or find it when another rank (or an earlier run) created it; a
        ``series`` in ``payload`` puts the job in that series (the server's default: the job
        name without its run suffix)."""
        payload = dict(payload)
        series = payload.pop("series", None)
        try:
            job, created = self._request("POST", "/api/jobs/", json=payload), True
        except ApiError as err:
            if err.status != 400:
                raise
            existing = self.find_job(payload["name"])
            if existing is None:
                raise
            job, created = existing, False
        if series:
            self.set_series(int(job["id"]), series)
        return job, created

    def set_series(self, job_id: int, series: str) -> dict[str, Any]:
        return self._request("PUT", f"/api/jobs/{job_id}/series/", json={"series": series})

    def check(
        self, job_id: int, baseline_id: int | None = None, threshold_pct: float | None = None
    ) -> dict[str, Any]:
        """The job's regression verdict, judged now (``baseline_id`` None: the series' own)."""
        body: dict[str, Any] = {}
        if baseline_id is not None:
            body["baseline"] = baseline_id
        if threshold_pct is not None:
            body["threshold_pct"] = threshold_pct
        return self._request("POST", f"/api/jobs/{job_id}/verdict/check/", json=body)

    def update_job(self, job_id: int, fields: dict[str, Any]) -> dict[str, Any]:
        return self._request("PATCH", f"/api/jobs/{job_id}/", json=fields)

    def delete_job(self, job_id: int) -> None:
        self._request("DELETE", f"/api/jobs/{job_id}/")

    def list_parts(self, job_id: int) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        url: str | None = f"{self.server_url}/api/jobs/{job_id}/parts/"
        while url:
            page = self._request("GET", url)
            parts.extend(page["results"])
            url = page.get("next")
        return parts

    def upload_part(
        self,
        job_id: int,
        content: Path | bytes,
        filename: str,
        fields: dict[str, Any],
        progress: ProgressFn | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """POST one part; returns (part, created). The body streams from disk with a length:
        Django reads a request body by its Content-Length, so a chunked upload would arrive
        empty."""
        with io.BytesIO(content) if isinstance(content, bytes) else open(content, "rb") as file:
            form: dict[str, Any] = {k: str(v) for k, v in fields.items() if v is not None}
            form["file"] = (filename, file, "application/octet-stream")
            body = MultipartEncoderMonitor(
                MultipartEncoder(form),
                None if progress is None else lambda sent: progress(sent.bytes_read, sent.len),
            )
            part, status = self._request_status(
                "POST",
                f"/api/jobs/{job_id}/parts/",
                data=body,
                headers={"Content-Type": body.content_type},
            )
        return part, status == 202

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._request_status(method, path, **kwargs)[0]

    def _request_status(self, method: str, path: str, **kwargs: Any) -> tuple[Any, int]:
        url = path if path.startswith("http") else f"{self.server_url}{path}"
        try:
            with self._lock:
                resp = self._session.request(method, url, timeout=self._timeouts, **kwargs)
        except requests.RequestException as exc:
            raise ServerUnreachable(f"{self.server_url} unreachable: {_short(exc)}") from exc
        if resp.status_code >= 400:
            retryable = resp.status_code >= 500 or resp.status_code in (408, 429)
            message = f"{method} {path} -> {resp.status_code}: {_detail(resp)}"
            if resp.status_code == 401:
                message += (
                    " The server refused the API token (PROFILER_TOKEN or --token): it is "
                    "missing, mistyped, revoked or expired. Create one on the server's API "
                    f"tokens page, {self.server_url}/tokens"
                )
            wait_s = retry_after_s(resp.headers.get("Retry-After")) if retryable else None
            raise ApiError(message, resp.status_code, retryable, wait_s)
        return (resp.json() if resp.content else {}), resp.status_code


def retry_after_s(value: str | None) -> float | None:
    """A Retry-After header in seconds: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _detail(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:200] or resp.reason
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    return str(body)[:300]


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 200 else text[:200] + "..."
