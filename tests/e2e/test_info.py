import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile, ProfilePart, TrainingJob
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import catalog
from tests.profiles.chunks import MS, report, send, window

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOW = datetime(2025, 6, 20, 12, 0, tzinfo=UTC)


def in_ms(moment: datetime) -> int:
    """A time as the browser reads it: whole milliseconds (exact, where a float could be 1 ms
    short)."""
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def test_it_shows_the_loaded_jobs_details(live_server, tab, user):
    jobs = catalog(user, NOW)
    LoadedProfile.objects.create(user=user, job=jobs["resnet50-baseline"])
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/info")

    compute = tab.locator("section", has=tab.get_by_role("heading", name="Compute"))
    expect(compute).to_contain_text("ml.p4d.24xlarge")
    expect(compute).to_contain_text("algo-1, algo-2")
    expect(compute.locator("dd").nth(3)).to_have_text("8")  # GPUs per node
    framework = tab.locator("section", has=tab.get_by_role("heading", name="Framework"))
    expect(framework).to_contain_text("PyTorch")
    expect(framework).to_contain_text("2.13.0")
    run = tab.locator("section", has=tab.get_by_role("heading", name="Run", exact=True))
    expect(run).to_contain_text("Started" + "May 31, 2025, 12:00 PM")  # 20 days before NOW
    expect(run).to_contain_text("Ended" + "May 31, 2025, 03:00 PM" + "Duration" + "3 h")
    hyperparameters = tab.locator("section", has=tab.get_by_role("heading", name="Hyperparameters"))
    expect(hyperparameters.get_by_role("row", name="optimizer")).to_contain_text("sgd")
    expect(hyperparameters.get_by_role("row", name="lr")).to_contain_text("0.1")
    resources = tab.locator("section", has=tab.get_by_role("heading", name="Resource identifiers"))
    expect(resources).to_contain_text(
        "arn:aws:sagemaker:eu-west-1:111122223333:training-job/resnet50-baseline"
    )
    parts = tab.locator("section", has=tab.get_by_role("heading", name="Parts"))
    expect(parts.locator("tbody tr")).to_have_count(4)
    expect(parts.get_by_text("Done")).to_have_count(4)
    screenshot(tab, "info")


def test_it_shows_part_states_and_errors(live_server, tab, user):
    jobs = catalog(user, NOW)
    LoadedProfile.objects.create(user=user, job=jobs["gpt2-small-debug"])
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/info")

    failed = tab.get_by_role("row", name="algo-1_rank0.pt.trace.json.gz")
    expect(failed.get_by_text("Failed")).to_be_visible()
    expect(failed).to_contain_text(
        "Not a PyTorch profiler trace: the JSON has no 'traceEvents' list."
    )
    expect(tab.get_by_text("No hyperparameters were recorded.")).to_be_visible()
    screenshot(tab, "info-failed-part")

    LoadedProfile.objects.filter(user=user).update(job=jobs["bert-large-pretrain"])
    # The address names the job shown; /info opens the loaded one.
    tab.goto(live_server.url + "/info")
    expect(tab.get_by_role("heading", name="bert-large-pretrain")).to_contain_text("partial")
    expect(tab.get_by_role("row", name="algo-2_rank8.pt.trace.json.gz")).to_contain_text(
        "Processing 40%"
    )
    expect(tab.get_by_role("row", name="algo-3_rank16.pt.trace.json.gz")).to_contain_text("Pending")


def test_it_explains_that_no_profile_is_loaded(live_server, tab, user):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/info")
    expect(tab.get_by_role("heading", name="No profile loaded")).to_be_visible()


def test_it_shows_what_the_collector_cost_and_captured(live_server, tab, user, parsed_by_hand):
    job = TrainingJob.objects.create(name="resnet-collector", owner=user, status="completed")
    # Rank 0 recorded steps 3–4 and 13–14 and went over its budget; rank 1 recorded 5–6.
    first = report(1_000 * MS, 4 * MS, 10, 2, 1, [window(3, 4, "full", 4 * MS)])
    later = report(2_000 * MS, 30 * MS, 20, 4, 2, [window(13, 14, "gpu", 26 * MS)])
    other = report(1_500 * MS, 3 * MS, 10, 2, 1, [window(5, 6, "gpu", 3 * MS)])
    send(job, "algo-1", 0, 100, 0, range(0, 10), range(3, 5), first)
    send(job, "algo-1", 0, 100, 1, range(10, 20), range(13, 15), later)
    send(job, "algo-2", 1, 200, 0, range(0, 10), range(5, 7), other)
    LoadedProfile.objects.create(user=user, job=job)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/info")

    card = tab.locator("section", has=tab.get_by_role("heading", name="Profiler cost and coverage"))
    overhead_pct = 100 * (30 + 3) / (2_000 + 1_500)  # 0.94 %
    expect(card).to_contain_text("Budget" + "1 % of wall time")
    expect(card).to_contain_text("Overhead" + f"{overhead_pct:.2f} % measured")
    # The job ran steps 0–19 (rank 1 only 0–9): 6 of its 20 steps, each counted once; the
    # processes' own counts, 20 + 10 steps, only where the card says they are summed.
    expect(card).to_contain_text(
        "Steps captured" + "6 of 20 steps (30 %) in 3 windows over 2 processes: 2 GPU-only, 1 full"
    )
    expect(card).to_contain_text("Captured steps" + "captured steps 3–6, 13–14 (6 of 20)")
    expect(card).to_contain_text(
        "Steps per process, summed" + "6 of 30 steps (20 %), summed over 2 processes"
    )
    expect(card.get_by_role("alert")).to_have_text(
        "The collector went over its budget: algo-1 rank 0, pid 100 measured 1.5 % against 1 %."
    )
    windows = card.get_by_role("table", name="Profiler windows")
    expect(windows.locator("tbody tr")).to_have_count(3)
    expect(windows.locator("tbody tr").first).to_contain_text("3–4" + "GPU and CPU operators")
    screenshot(tab, "info-capture")

    # Each part's parse time, from its worker's claim to its end as the server recorded them
    # (the browser reads the times to the millisecond).
    parts = tab.get_by_role("table", name="Parts")
    expect(parts.locator("tbody tr")).to_have_count(3)  # the table loads on its own
    headers = [text.strip() for text in parts.locator("thead th").all_text_contents()]
    column = next(i for i, text in enumerate(headers) if text.startswith("Parsed in"))
    for part in ProfilePart.objects.filter(job=job):
        took_ns = (in_ms(part.finished_at) - in_ms(part.started_at)) * 10**6
        cell = parts.get_by_role("row", name=part.original_name).locator("td").nth(column)
        found = re.fullmatch(r"([\d.]+) (s|ms|µs)", cell.inner_text())
        assert found is not None, cell.inner_text()
        shown_ns = float(found[1]) * {"s": 1e9, "ms": 1e6, "µs": 1e3}[found[2]]
        assert abs(shown_ns - took_ns) <= 5e-4 * took_ns, (cell.inner_text(), took_ns)
