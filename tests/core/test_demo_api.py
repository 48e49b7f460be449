"""The demo job costs minutes of CPU: staff, or anyone on a server without jobs; one at a time;
and the user's API token never travels in the task message."""

import subprocess

import pytest
from celery.signals import before_task_publish
from rest_framework.test import APIClient

from profiler_app.core import demo, tasks
from profiler_app.core.models import TrainingJob

pytestmark = pytest.mark.django_db

DEMO = "/api/demo/"


@pytest.fixture
def published():
    """The Celery messages this process sends during the test (as the broker gets them)."""
    messages = []

    def keep(sender=None, body=None, headers=None, **_kwargs):
        messages.append({"task": sender, "body": body, "headers": headers})

    before_task_publish.connect(keep, weak=False)
    yield messages
    before_task_publish.disconnect(keep)


@pytest.fixture
def queued(monkeypatch):
    """The demo tasks a test's requests queue, kept here instead of sent: the run's real worker
    would otherwise run them (and end their slots) while a later test holds one."""
    sent = []
    monkeypatch.setattr(tasks.run_demo_job, "delay", lambda *args: sent.append(args))
    return sent


def test_it_runs_a_demo_for_a_user_of_a_server_without_jobs(api, user, published, monkeypatch):
    # A name no other test's slot has: the message this test sends is the run worker's to take.
    monkeypatch.setattr(demo, "demo_job_name", lambda: "demo-cnn-published")
    response = api.post(DEMO)
    assert response.status_code == 202, response.content
    job_name = response.json()["job_name"]
    [message] = [m for m in published if m["task"] == "profiler_app.core.tasks.run_demo_job"]
    # The task makes the user a token of its own: no secret is in the message.
    assert list(message["body"][0]) == ["http://testserver", user.pk, job_name]


def test_it_offers_the_demo_to_staff_only_once_there_are_jobs(client_for, user, staff, queued):
    TrainingJob.objects.create(name="real-work", owner=user)
    offer = client_for(user).get(DEMO).json()
    assert offer == {
        "available": False,
        "reason": "Only an administrator can start a demo once the server has jobs.",
        "job_name": "",
    }
    refused = client_for(user).post(DEMO)
    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "Only an administrator can start a demo once the server has jobs.",
        "code": "demo_forbidden",
    }
    assert client_for(staff).post(DEMO).status_code == 202
    assert [args[1] for args in queued] == [staff.pk]


def test_it_runs_one_demo_at_a_time(client_for, staff, queued):
    assert demo.claim_run("demo-cnn-first")
    busy = client_for(staff).post(DEMO)
    assert busy.status_code == 409
    assert busy.json() == {
        "detail": "The demo job demo-cnn-first is running; one runs at a time.",
        "code": "demo_unavailable",
    }
    demo.release_run("demo-cnn-other")  # another demo's end leaves this one's slot
    assert client_for(staff).post(DEMO).status_code == 409
    demo.release_run("demo-cnn-first")
    started = client_for(staff).post(DEMO)
    assert started.status_code == 202
    assert not demo.claim_run("demo-cnn-another")  # the request took the slot
    assert demo.holds_run(started.json()["job_name"])


def test_it_throttles_demo_requests(client_for, staff, settings, queued):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "demo": "2/hour",
        },
    }
    admin = client_for(staff)
    codes = []
    for _ in range(3):
        response = admin.post(DEMO)
        codes.append(response.status_code)
        if response.status_code == 202:
            demo.release_run(response.json()["job_name"])
    assert codes == [202, 202, 429]
    assert admin.get(DEMO).status_code == 200  # reading the offer is not throttled


def test_the_demo_uploads_with_a_token_of_its_own_revoked_after_the_run(user, monkeypatch):
    during = {}

    def train(server_url, key, job_name):
        # Stands in for the example script, which uploads with this key.
        collector = APIClient()
        collector.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        during["tokens"] = [t["name"] for t in collector.get("/api/tokens/").json()]
        during["key"] = key
        return subprocess.CompletedProcess([], 0)

    monkeypatch.setattr(demo, "run_example", train)
    assert demo.claim_run("demo-cnn-1")
    assert tasks.run_demo_job("http://testserver", user.pk, "demo-cnn-1") == 0
    assert during["tokens"] == ["Demo job demo-cnn-1"]  # the user sees it while it runs
    collector = APIClient()
    collector.credentials(HTTP_AUTHORIZATION=f"Token {during['key']}")
    assert collector.get("/api/jobs/").status_code == 401
    assert demo.claim_run("demo-cnn-2")  # the slot was released


def test_a_demo_task_without_its_slot_neither_trains_nor_frees_another_demos(user, monkeypatch):
    trained = []
    monkeypatch.setattr(demo, "run_example", lambda *args: trained.append(args))
    assert demo.claim_run("demo-cnn-running")
    # Delivered after its own slot expired, while another demo runs.
    assert tasks.run_demo_job("http://testserver", user.pk, "demo-cnn-expired") == -1
    assert trained == []
    assert demo.holds_run("demo-cnn-running")
