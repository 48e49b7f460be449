"""The collector's CLI with a token made for it: its uploads are its owner's, the token's last
use shows, and once revoked the CLI stops with a message that says why."""

import subprocess

import pytest

from profiler_app.accounts.logic import issue_token
from profiler_app.accounts.models import ApiToken
from profiler_app.core.models import ProfilePart, TrainingJob
from tests.collector.helpers import DATA, REPO, job_env, python

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = DATA / "cpu_only_rank34.pt.trace.json.gz"


def upload(server_url: str, key: str, job: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python(), "-m", "collector.cli", "upload", str(TRACE), "--job", job],
        env=job_env(tmp_path / "spool", PROFILER_SERVER_URL=server_url, PROFILER_TOKEN=key),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_uploads_with_a_token_until_it_is_revoked(live_server, user, tmp_path):
    token, key = issue_token(user, "laptop")
    done = upload(live_server.url, key, "cli-upload", tmp_path)
    assert done.returncode == 0, done.stderr
    job = TrainingJob.objects.get(name="cli-upload")
    assert job.owner == user
    assert list(ProfilePart.objects.filter(job=job).values_list("original_name", "rank")) == [
        ("cpu_only_rank34.pt.trace.json.gz", 34)
    ]
    token.refresh_from_db()
    assert token.last_used is not None

    token.delete()
    refused = upload(live_server.url, key, "cli-upload-2", tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: cannot create job 'cli-upload-2': POST /api/jobs/ -> 401: Invalid token. "
        "The server refused the API token (PROFILER_TOKEN or --token): it is missing, "
        "mistyped, revoked or expired. Create one on the server's API tokens page, "
        f"{live_server.url}/tokens"
    )
    assert not TrainingJob.objects.filter(name="cli-upload-2").exists()
    assert not ApiToken.objects.exists()
