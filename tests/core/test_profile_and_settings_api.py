from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from profiler_app.core.models import AppSettings, LoadedProfile, TrainingJob
from profiler_app.core.shutdown_request import take_shutdown_request
from profiler_app.core.tasks import check_idle_shutdown
from tests.accounts.helpers import api_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(user):
    return [TrainingJob.objects.create(name=f"job-{i}", owner=user) for i in range(2)]


def test_it_loads_one_profile_per_user(api, jobs):
    assert api.get("/api/loaded-profile/").status_code == 204
    loaded = api.put("/api/loaded-profile/", {"job": jobs[0].id}, format="json")
    assert loaded.status_code == 200
    assert loaded.json()["job"] == jobs[0].id
    assert loaded.json()["job_detail"]["name"] == "job-0"
    assert api.get("/api/loaded-profile/").json()["job"] == jobs[0].id
    # Loading the same job again is harmless.
    assert api.put("/api/loaded-profile/", {"job": jobs[0].id}, format="json").status_code == 200


def test_it_refuses_a_second_load_until_unloaded(api, jobs):
    api.put("/api/loaded-profile/", {"job": jobs[0].id}, format="json")
    refused = api.put("/api/loaded-profile/", {"job": jobs[1].id}, format="json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "already_loaded"
    assert "“job-0” is already loaded. Unload it first" in refused.json()["detail"]
    assert api.delete("/api/loaded-profile/").status_code == 204
    assert api.put("/api/loaded-profile/", {"job": jobs[1].id}, format="json").status_code == 200


def test_it_keeps_loaded_profiles_per_user(client_for, user, teammate, jobs):
    client_for(user).put("/api/loaded-profile/", {"job": jobs[0].id}, format="json")
    client_for(teammate).put("/api/loaded-profile/", {"job": jobs[1].id}, format="json")
    assert LoadedProfile.objects.get(user=user).job == jobs[0]
    assert LoadedProfile.objects.get(user=teammate).job == jobs[1]
    client_for(teammate).delete("/api/loaded-profile/")
    assert LoadedProfile.objects.get(user=user).job == jobs[0]


def test_it_validates_the_job_to_load(api):
    response = api.put("/api/loaded-profile/", {"job": 999999}, format="json")
    assert response.status_code == 400
    assert "job" in response.json()


def test_it_requires_authentication_for_loaded_profile_and_settings(client_for):
    anonymous = client_for(None)
    assert anonymous.get("/api/loaded-profile/").status_code == 401
    assert anonymous.put("/api/loaded-profile/", {"job": 1}, format="json").status_code == 401
    assert anonymous.delete("/api/loaded-profile/").status_code == 401
    assert anonymous.get("/api/settings/").status_code == 401
    assert anonymous.put("/api/settings/", {}, format="json").status_code == 401


def test_it_shows_settings_with_defaults_to_everyone(api):
    body = api.get("/api/settings/").json()
    assert body["auto_shutdown_enabled"] is True
    assert body["auto_shutdown_hours"] == 2.0


def test_it_lets_only_staff_change_settings(api, client_for, staff):
    refused = api.put("/api/settings/", {"auto_shutdown_hours": 5}, format="json")
    assert refused.status_code == 403
    changed = client_for(staff).put(
        "/api/settings/",
        {"auto_shutdown_enabled": False, "auto_shutdown_hours": 4.5},
        format="json",
    )
    assert changed.status_code == 200
    current = AppSettings.load()
    assert current.auto_shutdown_enabled is False
    assert current.auto_shutdown_hours == 4.5


@pytest.mark.parametrize(
    ("hours", "message"),
    [
        (0, "The threshold must be more than 0 hours (at least 0.05 h)."),
        (-3, "The threshold must be more than 0 hours (at least 0.05 h)."),
        (100000, "The threshold can be at most 720 hours (30 days)."),
        ("soon", "A valid number is required."),
    ],
)
def test_it_rejects_bad_thresholds(client_for, staff, hours, message):
    response = client_for(staff).put(
        "/api/settings/", {"auto_shutdown_hours": hours}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["auto_shutdown_hours"] == [message]
    assert AppSettings.load().auto_shutdown_hours == 2.0


def test_it_asks_for_shutdown_only_past_the_idle_threshold():
    current = AppSettings.load()
    current.last_activity_at = timezone.now() - timedelta(hours=1, minutes=59)
    current.save()
    assert check_idle_shutdown() is False
    assert take_shutdown_request() is None

    current.last_activity_at = timezone.now() - timedelta(hours=2, minutes=1)
    current.save()
    current.auto_shutdown_enabled = False
    current.save()
    assert check_idle_shutdown() is False

    current.auto_shutdown_enabled = True
    current.save()
    assert check_idle_shutdown() is True
    assert "threshold 2 h" in take_shutdown_request()
    assert take_shutdown_request() is None  # taken once


def test_it_counts_people_but_not_collectors_as_activity(user, api_token):
    stale = timezone.now() - timedelta(days=1)
    AppSettings.objects.update_or_create(pk=1, defaults={"last_activity_at": stale})
    collector = Client(HTTP_AUTHORIZATION=f"Token {api_token}", HTTP_X_PROFILER_CLIENT="collector")
    assert collector.get("/api/jobs/").status_code == 200
    assert AppSettings.load().last_activity_at == stale
    open_page = Client(HTTP_X_PROFILER_CLIENT="watch")
    open_page.force_login(user)
    assert open_page.get("/api/jobs/").status_code == 200
    assert AppSettings.load().last_activity_at == stale
    person = Client()
    person.force_login(user)
    assert person.get("/api/jobs/").status_code == 200
    assert AppSettings.load().last_activity_at > stale


def test_it_logs_in_with_csrf_and_logs_out(user):
    browser = Client(enforce_csrf_checks=True)
    me = browser.get("/api/auth/me/")
    assert me.status_code == 401
    token = browser.cookies["csrftoken"].value
    no_csrf = api_login(browser, "alice", "alice-password-1")
    assert no_csrf.status_code == 403
    wrong = api_login(browser, "alice", "nope", HTTP_X_CSRFTOKEN=token)
    assert wrong.status_code == 400
    assert wrong.json()["detail"] == "Wrong user name or password."
    ok = api_login(browser, "alice", "alice-password-1", HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 200
    assert ok.json() == {"id": user.id, "username": "alice", "is_staff": False}
    assert browser.get("/api/auth/me/").json()["username"] == "alice"
    token = browser.cookies["csrftoken"].value
    assert browser.post("/api/auth/logout/", HTTP_X_CSRFTOKEN=token).status_code == 204
    assert browser.get("/api/auth/me/").status_code == 401


def test_it_publishes_the_openapi_schema(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    for path in [
        "/api/jobs/",
        "/api/jobs/{id}/",
        "/api/jobs/{id}/parts/",
        "/api/parts/{id}/",
        "/api/loaded-profile/",
        "/api/settings/",
        "/api/health/",
    ]:
        assert path in schema["paths"], path
    assert api.get("/api/docs/").status_code == 200
