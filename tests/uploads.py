"""Sending a trace as a user's client does: in one request, or as a resumable upload in ranges."""

from __future__ import annotations

from pathlib import Path

import requests


def post_part(api, job, path: Path):
    with path.open("rb") as file:
        return api.post(
            f"/api/jobs/{job.id}/parts/",
            {"node": "algo-1", "rank": 0, "kind": "kineto", "file": file},
            format="multipart",
        )


def start_upload(api, job, filename: str, size: int, *, node: str = "algo-1", rank: int = 0) -> str:
    """Starts a resumable upload of ``size`` bytes; returns its URL."""
    body = {
        "node": node,
        "rank": rank,
        "kind": "kineto",
        "filename": filename,
        "size_bytes": size,
    }
    response = api.post(f"/api/jobs/{job.id}/uploads/", body, format="json")
    assert response.status_code == 201
    return f"/api/uploads/{response.json()['id']}/"


def put_range(api, url: str, raw: bytes, begin: int = 0, end: int | None = None):
    """Sends ``raw[begin:end]`` (all of it by default) as one range of the upload."""
    end = len(raw) if end is None else end
    return api.generic(
        "PUT",
        url,
        raw[begin:end],
        content_type="application/octet-stream",
        HTTP_CONTENT_RANGE=f"bytes {begin}-{end - 1}/{len(raw)}",
    )


def send_in_ranges(
    http: requests.Session,
    web: str,
    job_id: int,
    path: Path,
    *,
    node: str,
    rank: int,
    range_bytes: int,
    headers: dict[str, str] | None = None,
) -> int:
    """A resumable upload over HTTP as the upload page sends it to the server at ``web``:
    started, sent in ranges of ``range_bytes`` (each possibly received by another web process),
    then completed; returns the part's id. ``headers`` go with every request (a browser
    session's CSRF token)."""
    headers = headers or {}
    raw = path.read_bytes()
    body = {"node": node, "rank": rank, "kind": "kineto", "filename": path.name}
    started = http.post(
        f"{web}/api/jobs/{job_id}/uploads/", json={**body, "size_bytes": len(raw)}, headers=headers
    )
    assert started.status_code == 201, started.text
    url = f"{web}/api/uploads/{started.json()['id']}/"
    for first in range(0, len(raw), range_bytes):
        chunk = raw[first : first + range_bytes]
        sent = http.put(
            url,
            data=chunk,
            headers={
                **headers,
                "Content-Type": "application/octet-stream",
                "Content-Range": f"bytes {first}-{first + len(chunk) - 1}/{len(raw)}",
            },
        )
        assert sent.status_code == 200, sent.text
    done = http.post(f"{url}complete/", headers=headers)
    assert done.status_code == 202, done.text
    return done.json()["id"]
