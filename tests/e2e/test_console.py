"""Every page of a loaded job, and the catalog with nothing loaded, open without a console
error or warning (a 404 logged for an API call, a library's warning)."""

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import sign_in
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = {
    "/dashboard": "Dashboard",
    "/timeline": "Timeline",
    "/insights": "Insights",
    "/cluster": "Cluster",
    "/calltree": "Call tree",
    "/memory": "Memory",
    "/compare": "Compare runs",
    "/sql": "SQL",
    "/info": "Info",
    "/settings": "Settings",
    "/tokens": "API tokens",
}


def test_no_page_logs_an_error_or_a_warning(live_server, tab, user):
    said: list[str] = []
    tab.on(
        "console",
        lambda m: said.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/profiles")
    expect(tab.get_by_role("heading", name="Profiles")).to_be_visible()
    # A page of its own, signed in (the sign-in page's 401 is how it learns to ask).
    page = tab.context.new_page()
    said: list[str] = []
    page.on(
        "console",
        lambda m: said.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("response", lambda r: said.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(live_server.url + "/profiles")
    expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert said == [], said  # nothing loaded yet
    job = parse_job(user, "console-check", [("algo-1", 0, "gpu_training_rank0.pt.trace.json.gz")])
    LoadedProfile.objects.create(user=user, job=job)
    for path, heading in PAGES.items():
        page.goto(live_server.url + path)
        expect(page.get_by_role("heading", name=heading, exact=True).first).to_be_visible()
        page.wait_for_load_state("networkidle")
    assert said == [], said
