"""Runs code in a fresh interpreter where Django and Celery cannot be imported: pure packages
must load (and work) there, from the real package, with nothing faked."""

import subprocess
import sys
import textwrap

BLOCKED = ("django", "rest_framework", "celery", "kombu")

PRELUDE = f"""
import sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is blocked: this code must not need it")

sys.meta_path.insert(0, Blocked())
"""

EPILOGUE = f"""
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r})
assert not loaded, loaded
"""


def run_without_django(code: str) -> str:
    """Runs ``code`` with Django and Celery blocked; returns what it printed."""
    script = PRELUDE + textwrap.dedent(code) + EPILOGUE
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
