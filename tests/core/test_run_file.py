"""The launcher's run file on a full disk: the launcher writes it every half second when it
changed, and a write that fails (no space left) is tried again, never ending the launcher (a
full disk once took the whole server down here)."""

import errno
import json
from pathlib import Path

import pytest

from profiler_app import cli


def test_a_run_file_that_cannot_be_written_is_written_once_there_is_room(tmp_path, capsys):
    path = tmp_path / "run.json"
    cli.write_run_file(path, {}, "http://127.0.0.1:1", [])
    assert json.loads(path.read_text())["url"] == "http://127.0.0.1:1"

    real_write = Path.write_text

    def full_disk(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "write_text", full_disk)
        cli.write_run_file(path, {}, "http://127.0.0.1:2", [])  # no exception
        cli.write_run_file(path, {}, "http://127.0.0.1:2", [])
    assert json.loads(path.read_text())["url"] == "http://127.0.0.1:1"
    said = capsys.readouterr().out
    assert said.count("could not write run.json (No space left on device); trying again") == 1

    assert Path.write_text is real_write
    cli.write_run_file(path, {}, "http://127.0.0.1:2", [])
    assert json.loads(path.read_text())["url"] == "http://127.0.0.1:2"
