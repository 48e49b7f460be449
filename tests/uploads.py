"""Sending a trace as a user's client does: in one request, or as a resumable upload in ranges."""

from __future__ import annotations

from pathlib import Path


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
