"""The timeline's query modules import (and work) with Django absent."""

import subprocess
import sys

SCRIPT = """
import sys

class NoDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django.") or name.startswith("rest_framework"):
            raise ImportError("Django is blocked in this test")

sys.meta_path.insert(0, NoDjango())
from profiler_app.timeline import (
    activity, details, export, index, index_build, lanes, levels, payload, query, search, series,
    tree, viewport,
)
assert not [m for m in sys.modules if m == "django" or m.startswith("django.")]
print("pure")
"""


def test_it_imports_without_django():
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pure"
