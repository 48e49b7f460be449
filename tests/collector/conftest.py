import os
import subprocess
from types import SimpleNamespace

import pytest


@pytest.fixture
def server(live_server, celery_worker_process, api_token):
    """The real app (live server + Celery worker + PostgreSQL) and a collector's API token."""
    return SimpleNamespace(url=live_server.url, token=api_token)


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs filled to the last byte (needs permission to mount, e.g. root)."""
    mount = tmp_path / "full"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                os.write(fd, b"\0" * 4096)
        os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)
