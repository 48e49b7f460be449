"""The demo job: the collector's example CNN trains on CPU and uploads a real profile."""

import importlib.util
import logging
import os
import subprocess
import sys
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

log = logging.getLogger(__name__)

EXAMPLE_SCRIPT = settings.BASE_DIR / "examples" / "train_cnn.py"
DEMO_STEPS = 60
DEMO_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class DemoAvailability:
    available: bool
    reason: str


def availability() -> DemoAvailability:
    if not EXAMPLE_SCRIPT.exists():
        return DemoAvailability(False, "The example training script is not installed here.")
    if importlib.util.find_spec("torch") is None:
        return DemoAvailability(False, "PyTorch is not installed on this server.")
    return DemoAvailability(True, "")


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
    command = [sys.executable, str(EXAMPLE_SCRIPT), "--steps", str(DEMO_STEPS), "--device", "cpu",
               "--job-name", job_name]  # fmt: skip
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=DEMO_TIMEOUT_SECONDS
    )
    if result.returncode != 0:
        log.error(
            "demo job %s failed (%s):\n%s", job_name, result.returncode, result.stderr[-4000:]
        )
    return result
