"""Every page of a loaded job, and the catalog with nothing loaded, open without a console
error or warning (a 404 logged for an API call, a library's warning)."""

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import sign_in
from tests.e2e.jobs import loaded_job
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


# What each page draws once its data arrived (a page may log only then).
DRAWN = {
    "/timeline": "[data-testid=timeline-canvas][data-drawn]",
    "/calltree": "[data-testid=flame-graph][data-drawn], .panel-empty",
    "/memory": ".chart[data-drawn], .panel-empty",
}


def listen(page, said: list[str]) -> None:
    """Console errors and warnings, and failed requests, of ``page`` go to ``said``."""
    page.on(
        "console",
        lambda m: said.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("response", lambda r: said.append(f"{r.status} {r.url}") if r.status >= 400 else None)


def visit_every_page(page, base_url: str) -> None:
    for path, heading in {"/profiles": "Profiles", **PAGES}.items():
        page.goto(base_url + path)
        expect(page.get_by_role("heading", name=heading, exact=True).first).to_be_visible()
        if path in DRAWN:
            expect(page.locator(DRAWN[path]).first).to_be_attached()
        page.wait_for_load_state("networkidle")


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
    listen(page, said)
    page.goto(live_server.url + "/profiles")
    expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert said == [], said  # nothing loaded yet
    loaded_job(user, "console-check", [("algo-1", 0, "gpu_training_rank0.pt.trace.json.gz")])
    visit_every_page(page, live_server.url)
    assert said == [], said


def test_no_page_logs_an_error_or_a_warning_to_a_teammate(live_server, tab, user, teammate):
    """A teammate reads another's two-rank job on every page, then a job with memory events
    (the Memory page's charts)."""
    job = parse_job(
        user,
        "two-ranks",
        [("algo-1", rank, f"multirank_sampled/rank-{rank}.json.gz") for rank in (0, 1)],
    )
    LoadedProfile.objects.create(user=teammate, job=job)
    sign_in(tab, live_server.url, "bob", "bob-password-1", path="/profiles")
    page = tab.context.new_page()
    said: list[str] = []
    listen(page, said)
    visit_every_page(page, live_server.url)
    page.goto(f"{live_server.url}/timeline?job={job.id}")
    expect(page.locator(DRAWN["/timeline"])).to_be_attached()
    page.wait_for_load_state("networkidle")

    memory = parse_job(user, "cpu-memory", [("algo-1", 0, "cpu_memory_profile.json.gz")])
    LoadedProfile.objects.filter(user=teammate).update(job=memory)
    page.goto(live_server.url + "/memory")
    expect(page.locator(".chart[data-drawn]").first).to_be_attached()
    page.wait_for_load_state("networkidle")
    assert said == [], said
