"""The demo job: the collector's example CNN trains on CPU and uploads a real profile.

It costs minutes of CPU, so it is offered to staff, or to anyone while the server has no
jobs yet (a fresh installation), and one runs at a time on the whole server.
"""

import importlib.util
import logging
import os
import subprocess
import sys
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from profiler_app.core.models import TrainingJob

log = logging.getLogger(__name__)

EXAMPLE_SCRIPT = settings.BASE_DIR / "examples" / "train_cnn.py"
DEMO_STEPS = 60
DEMO_TIMEOUT_SECONDS = 900
# Holds the running demo's job name; it expires on its own if a worker dies mid-demo.
RUNNING_KEY = "demo:running"
RUNNING_TIMEOUT_SECONDS = DEMO_TIMEOUT_SECONDS + 60


@dataclass(frozen=True)
class DemoAvailability:
    available: bool
    reason: str
    forbidden: bool = False  # available to others (staff), not to this user


def availability(user) -> DemoAvailability:
    if not EXAMPLE_SCRIPT.exists():
        return DemoAvailability(False, "The example training script is not installed here.")
    if importlib.util.find_spec("torch") is None:
        return DemoAvailability(False, "PyTorch is not installed on this server.")
    if not user.is_staff and TrainingJob.objects.exists():
        return DemoAvailability(
            False, "Only an administrator can start a demo once the server has jobs.", True
        )
    running = cache.get(RUNNING_KEY)
    if running is not None:
        return DemoAvailability(False, f"The demo job {running} is running; one runs at a time.")
    return DemoAvailability(True, "")


def claim_run(job_name: str) -> bool:
    """Take the server's one demo slot for ``job_name``; False if a demo holds it."""
    return cache.add(RUNNING_KEY, job_name, timeout=RUNNING_TIMEOUT_SECONDS)


def holds_run(job_name: str) -> bool:
    """Whether the slot is ``job_name``'s: a demo task delivered after its slot expired, or
    redelivered while another demo runs, must neither train nor free another demo's slot."""
    return cache.get(RUNNING_KEY) == job_name


def release_run(job_name: str) -> None:
    if holds_run(job_name):
        cache.delete(RUNNING_KEY)


def demo_job_name() -> str:
    return f"demo-cnn-{timezone.now():%Y%m%d-%H%M%S}"


def run_example(server_url: str, token: str, job_name: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(
        PROFILER_SERVER_URL=server_url,
        PROFILER_TOKEN=token,
        PROFILER_JOB_NAME=job_name,
        PROFILER_NODE_NAME="algo-1",
        # The demo trains on this server's CPU; keep it from competing with the parser.
        OMP_NUM_THREADS="1",
    )
    # The server's own database settings are not the training script's business.
    for name in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY"):
        env.pop(name, None)
    command = [
        sys.executable,
        str(EXAMPLE_SCRIPT),
        "--steps",
        str(DEMO_STEPS),
        "--device",
        "cpu",
        "--job-name",
        job_name,
    ]
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=DEMO_TIMEOUT_SECONDS
    )
    if result.returncode != 0:
        log.error(
            "demo job %s failed (%s):\n%s", job_name, result.returncode, result.stderr[-4000:]
        )
    return result
