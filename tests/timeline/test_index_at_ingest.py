"""The worker indexes a part's timeline before the part is done; the web only reads indexes, and
parts from before (no index, or an older index version) get one from the store sweep."""

import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from profiler_app.profiles.models import PartSummary
from profiler_app.profiles.store_products import upgrade_stores
from profiler_app.timeline import logic
from profiler_app.timeline.pure.index import INDEX_DIR_NAME, INDEX_VERSION
from profiler_app.timeline.pure.index_build import store_signature

pytestmark = [pytest.mark.django_db]

PARTS = [("algo-1", 0, "h100_cnn_kineto.json.gz")]


def index_dir(job) -> Path:
    summary = PartSummary.objects.get(job=job)
    return Path(settings.MEDIA_ROOT) / summary.store_path / INDEX_DIR_NAME


def test_the_parse_builds_the_index_before_the_part_is_done(api, parsed_job):
    job = parsed_job("indexed-at-ingest", PARTS)
    meta = json.loads((index_dir(job) / "meta.json").read_text())
    assert meta["version"] == INDEX_VERSION
    assert meta["signature"] == store_signature(index_dir(job).parent)
    # The first request opens it, it builds nothing (the index files stay the same files).
    before = {p.name: p.stat().st_mtime_ns for p in index_dir(job).iterdir()}
    assert api.get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 200
    assert {p.name: p.stat().st_mtime_ns for p in index_dir(job).iterdir()} == before


@pytest.mark.parametrize("how", ["missing", "older version"])
def test_a_part_without_an_index_waits_for_the_sweep_not_a_request(api, parsed_job, how):
    job = parsed_job(f"needs-index-{how}", PARTS)
    if how == "missing":
        shutil.rmtree(index_dir(job))
    else:
        meta_path = index_dir(job) / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "version": INDEX_VERSION - 1}))
    logic.part_index.cache_clear()

    refused = api.get(f"/api/jobs/{job.id}/timeline/tracks/")
    assert refused.status_code == 503
    assert "being prepared" in refused.json()["detail"]
    assert not (index_dir(job) / "meta.json").exists() or how == "older version"

    part_id = PartSummary.objects.get(job=job).part_id
    assert part_id in upgrade_stores()
    assert part_id not in upgrade_stores()  # built once
    assert api.get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 200
