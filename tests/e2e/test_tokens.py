import subprocess

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from tests.collector.helpers import DATA, REPO, job_env, python
from tests.e2e.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = DATA / "cpu_only_rank34.pt.trace.json.gz"


def collect(server_url: str, key: str, job: str, tmp_path) -> subprocess.CompletedProcess:
    """The real `profiler-collect upload`, configured as the page's snippet says."""
    return subprocess.run(
        [python(), "-m", "collector.cli", "upload", str(TRACE), "--job", job, "--wait"],
        env=job_env(tmp_path / "spool", PROFILER_SERVER_URL=server_url, PROFILER_TOKEN=key),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_token_made_in_the_browser_uploads_until_revoked(
    live_server, tab, user, celery_worker_process, tmp_path
):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    tab.get_by_role("link", name="API tokens").click()
    expect(tab.get_by_role("heading", name="API tokens", exact=True)).to_be_visible()
    expect(tab.get_by_text("You have no API tokens yet")).to_be_visible()

    tab.get_by_label("Name").fill("my laptop")
    tab.get_by_role("button", name="Create token").click()
    reveal = tab.get_by_role("region", name="New token")
    expect(reveal).to_contain_text("Copy it now: you will not see it again.")
    key = reveal.get_by_test_id("new-token").inner_text()
    assert len(key) == 64
    shell = tab.get_by_test_id("shell-snippet")
    expect(shell).to_contain_text(f"export PROFILER_SERVER_URL={live_server.url}\n")
    expect(shell).to_contain_text(f"export PROFILER_TOKEN={key}\n")
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    reveal.get_by_role("button", name="Copy").click()
    expect(reveal.get_by_role("status")).to_have_text("Copied.")
    assert tab.evaluate("navigator.clipboard.readText()") == key
    row = tab.get_by_test_id("token-row").filter(has_text="my laptop")
    expect(row).to_contain_text(key[:8] + "…")
    expect(row).to_contain_text("Never")
    screenshot(tab, "tokens-new")

    done = collect(live_server.url, key, "token-upload", tmp_path)
    assert done.returncode == 0, done.stderr
    job = TrainingJob.objects.get(name="token-upload")
    assert job.owner == user
    part = ProfilePart.objects.get(job=job)
    assert (part.original_name, part.rank, part.state) == (TRACE.name, 34, PartState.DONE)

    # The key is not shown again; the list says the token was just used.
    tab.reload()
    expect(row).to_contain_text("less than a minute ago")
    expect(tab.get_by_test_id("new-token")).to_have_count(0)
    expect(tab.get_by_test_id("shell-snippet")).to_contain_text("PROFILER_TOKEN='<your token>'")
    screenshot(tab, "tokens-list")

    row.get_by_role("button", name="Revoke…").click()
    expect(row).to_contain_text("Anything using it stops at once.")
    screenshot(tab, "tokens-revoke-confirm")
    row.get_by_role("button", name="Revoke", exact=True).click()
    expect(tab.get_by_text("You have no API tokens yet")).to_be_visible()

    refused = collect(live_server.url, key, "after-revoke", tmp_path)
    assert refused.returncode == 1
    assert "POST /api/jobs/ -> 401: Invalid token." in refused.stderr
    assert "it is missing, mistyped, revoked or expired" in refused.stderr
    assert not TrainingJob.objects.filter(name="after-revoke").exists()

    tab.get_by_role("link", name="Profiles").click()
    expect(tab.locator(".jobs-table tbody tr", has_text="token-upload")).to_contain_text("1/1")
