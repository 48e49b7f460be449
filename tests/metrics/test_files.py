"""The web processes' metric files live in memory, one folder per data directory: memory-mapped
on the data disk, a process writing a new page of one died of SIGBUS once that disk was full."""

import os
from pathlib import Path

from django.conf import settings

from profiler_app.metrics.files import SHARED_MEMORY, metrics_folder


def test_each_data_directory_has_its_own_folder_in_shared_memory(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    folder = metrics_folder(first)
    assert folder.parent == SHARED_MEMORY and folder.name.startswith("profiler-app-metrics-")
    assert metrics_folder(first) == folder == metrics_folder(tmp_path / "x" / ".." / "one")
    assert metrics_folder(second) != folder


def test_without_shared_memory_they_stay_under_the_data_directory(tmp_path):
    assert metrics_folder(tmp_path, shared_memory=tmp_path / "none") == tmp_path / "metrics"


def test_the_server_keeps_them_off_the_data_disk():
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    assert folder.is_dir()
    assert not folder.is_relative_to(settings.DATA_DIR)
