"""pytest plugin (loaded with `-p profiler_app.testing`): real services before Django starts.

Uses DATABASE_URL / REDIS_URL when set, otherwise the embedded PostgreSQL and Redis under
var/test. Each run (and each of its xdist workers) gets its own test database, media folder and
Celery queue names, so parallel runs on one machine never see each other's data or tasks.
"""

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from profiler_app.embedded import use_embedded_services_if_unconfigured

if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
    os.environ.setdefault("PROFILER_DATA_DIR", str(Path("var/test").resolve()))
    # As a one-off command does: the Redis started here stops with the run (it is a daemon,
    # and was left running after every run); PostgreSQL stops once nothing uses it.
    use_embedded_services_if_unconfigured()
os.environ.setdefault("TEST_DATABASE_NAME", f"test_profiler_{os.getpid()}")
os.environ.setdefault("CELERY_QUEUE_PREFIX", f"test{os.getpid()}-")
# Tests create parts in bursts beside a live worker; admission has its own tests (setting on).
os.environ.setdefault("INGEST_MAX_BACKLOG_SECONDS", "0")
# A media folder this run makes (uploads, stores: gigabytes over a full run) goes with the run
# (pytest_unconfigure); one given in the environment is kept.
_made_media: str | None = None
if "PROFILER_MEDIA_ROOT" not in os.environ:
    _made_media = os.environ["PROFILER_MEDIA_ROOT"] = tempfile.mkdtemp(prefix="profiler-media-")

# Under `pytest -n N` each worker inherits the controller's environment above, so it is made a
# run of its own here: its own queues and cache keys (its Celery worker would otherwise take the
# other workers' tasks) and its own media folder. pytest-django already suffixes its database.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _xdist_worker and not os.environ.get("PROFILER_TEST_WORKER_SET_UP"):
    os.environ["PROFILER_TEST_WORKER_SET_UP"] = _xdist_worker
    os.environ["CELERY_QUEUE_PREFIX"] += f"{_xdist_worker}-"
    _media = Path(os.environ["PROFILER_MEDIA_ROOT"]) / _xdist_worker
    _media.mkdir(parents=True, exist_ok=True)
    os.environ["PROFILER_MEDIA_ROOT"] = str(_media)


def database_url(settings_dict: dict) -> str:
    """This run's DATABASE_URL naming the test database, for a child process (a Celery worker)."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + quote(settings_dict["NAME"])))


def pytest_unconfigure(config) -> None:
    # xdist's workers inherit the folder in their environment: only the run that made it (the
    # controller, once its workers have ended) removes it.
    if _made_media is not None:
        shutil.rmtree(_made_media, ignore_errors=True)
