"""API tokens: each person makes, lists and revokes only their own; the key is shown once and
only its digest is stored; a revoked or expired token is refused at once; last use is kept."""

import hashlib
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from profiler_app.accounts.logic import issue_token
from profiler_app.accounts.models import ApiToken

pytestmark = pytest.mark.django_db

TOKENS = "/api/tokens/"


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_it_shows_a_new_token_once_and_stores_only_its_digest(api, user):
    created = api.post(TOKENS, {"name": "training cluster"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    key = body.pop("token")
    assert len(key) == 64 and int(key, 16) >= 0
    stored = ApiToken.objects.get(user=user)
    assert body == {
        "id": stored.id,
        "name": "training cluster",
        "prefix": key[:8],
        "created": body["created"],
        "last_used": None,
        "expiry": None,
    }
    assert stored.digest == hashlib.sha512(key.encode()).hexdigest()
    assert stored.token_key == key[:15]
    assert key not in {str(value) for value in ApiToken.objects.values().get().values()}
    # Never again: the list has no key.
    assert api.get(TOKENS).json() == [body]


def test_it_authenticates_with_a_token_and_refuses_a_wrong_one(user, api_token):
    assert with_token(api_token).get("/api/auth/me/").json()["username"] == "alice"
    wrong = with_token(api_token[:-1] + ("0" if api_token[-1] != "0" else "1"))
    refused = wrong.get("/api/jobs/")
    assert refused.status_code == 401
    assert refused.json() == {"detail": "Invalid token.", "code": "authentication_failed"}
    assert refused["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("header", ["Token \u00e9t\u00e9", "Token abc\x00def", "Token \x7f"])
def test_it_refuses_keys_no_token_can_have_without_failing(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert client.get("/api/jobs/").status_code == 401


def test_it_lists_only_the_callers_tokens_newest_first(client_for, user, teammate, staff):
    first, _ = issue_token(user, "laptop")
    second, _ = issue_token(user, "cluster", expires_in_days=30)
    ApiToken.objects.filter(pk=first.pk).update(created=timezone.now() - timedelta(days=1))
    issue_token(teammate, "laptop")
    issue_token(staff, "admin scripts")

    mine = client_for(user).get(TOKENS).json()
    assert [(t["id"], t["name"]) for t in mine] == [(second.id, "cluster"), (first.id, "laptop")]
    assert mine[0]["expiry"] == second.expiry.isoformat().replace("+00:00", "Z")
    assert [t["name"] for t in client_for(teammate).get(TOKENS).json()] == ["laptop"]
    # Staff too see only their own here.
    assert [t["name"] for t in client_for(staff).get(TOKENS).json()] == ["admin scripts"]


def test_it_revokes_a_token_at_once(api, user):
    token, key = issue_token(user, "ci")
    assert with_token(key).get("/api/jobs/").status_code == 200
    assert api.delete(f"{TOKENS}{token.id}/").status_code == 204
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert with_token(key).get("/api/jobs/").status_code == 401


def test_a_token_can_revoke_itself(user):
    token, key = issue_token(user, "ci")
    assert with_token(key).delete(f"{TOKENS}{token.id}/").status_code == 204
    assert with_token(key).get(TOKENS).status_code == 401


def test_nobody_else_revokes_a_token_here(client_for, user, teammate, staff):
    token, key = issue_token(user, "ci")
    for other in (teammate, staff):
        refused = client_for(other).delete(f"{TOKENS}{token.id}/")
        assert refused.status_code == 404
        assert refused.json() == {
            "detail": "No ApiToken matches the given query.",
            "code": "not_found",
        }
    assert with_token(key).get("/api/jobs/").status_code == 200


def test_it_answers_anonymous_callers_401(client_for, user):
    token, _ = issue_token(user, "ci")
    anonymous = client_for(None)
    assert anonymous.get(TOKENS).status_code == 401
    assert anonymous.post(TOKENS, {"name": "x"}, format="json").status_code == 401
    assert anonymous.delete(f"{TOKENS}{token.id}/").status_code == 401
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({}, {"name": ["Give the token a name, e.g. the cluster or job that will use it."]}),
        (
            {"name": "  "},
            {"name": ["Give the token a name, e.g. the cluster or job that will use it."]},
        ),
        ({"name": "x" * 101}, {"name": ["A token name has at most 100 characters."]}),
        ({"name": "ci"}, {"name": ["You already have a token named “ci”."]}),
        ({"name": " ci "}, {"name": ["You already have a token named “ci”."]}),
        (
            {"name": "new", "expires_in_days": 0},
            {"expires_in_days": ["A token expires after 1 day at the earliest."]},
        ),
        (
            {"name": "new", "expires_in_days": 4000},
            {"expires_in_days": ["A token expires after 3650 days (10 years) at the latest."]},
        ),
    ],
)
def test_it_explains_an_invalid_token_request(api, user, body, errors):
    issue_token(user, "ci")
    refused = api.post(TOKENS, body, format="json")
    assert refused.status_code == 400
    assert refused.json() == errors
    assert ApiToken.objects.count() == 1


def test_names_are_per_person(client_for, user, teammate):
    issue_token(user, "ci")
    assert client_for(teammate).post(TOKENS, {"name": "ci"}, format="json").status_code == 201


def test_an_expired_token_is_refused(api, user):
    created = api.post(TOKENS, {"name": "a day", "expires_in_days": 1}, format="json").json()
    token = ApiToken.objects.get(pk=created["id"])
    assert abs(token.expiry - (timezone.now() + timedelta(days=1))) < timedelta(minutes=1)
    assert with_token(created["token"]).get("/api/jobs/").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert with_token(created["token"]).get("/api/jobs/").status_code == 401


def test_it_records_the_last_use_at_most_once_a_minute(user):
    token, key = issue_token(user, "collector")
    collector = with_token(key)
    collector.credentials(HTTP_AUTHORIZATION=f"Token {key}", HTTP_X_PROFILER_CLIENT="collector")
    collector.get("/api/jobs/")
    token.refresh_from_db()
    first_use = token.last_used
    assert timezone.now() - first_use < timedelta(seconds=10)

    collector.get("/api/jobs/")
    token.refresh_from_db()
    assert token.last_used == first_use  # no write for a request within the minute

    ApiToken.objects.filter(pk=token.pk).update(last_used=first_use - timedelta(minutes=2))
    collector.get("/api/jobs/")
    token.refresh_from_db()
    assert token.last_used > first_use


def test_the_management_command_prints_a_new_token(user, capsys):
    call_command("create_token", "alice", "nightly benchmark", "--expires-in-days", "7")
    key = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(user=user)
    assert (token.name, token.prefix) == ("nightly benchmark", key[:8])
    assert with_token(key).get("/api/auth/me/").json()["username"] == "alice"

    with pytest.raises(CommandError, match="You already have a token named “nightly benchmark”."):
        call_command("create_token", "alice", "nightly benchmark")
    with pytest.raises(CommandError, match="There is no user 'mallory'."):
        call_command("create_token", "mallory", "x")
    with pytest.raises(CommandError, match="A token name has at most 100 characters."):
        call_command("create_token", "alice", "x" * 101)


def test_the_schema_describes_the_token_endpoints(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    assert set(schema["paths"]["/api/tokens/"]) == {"get", "post"}
    assert set(schema["paths"]["/api/tokens/{id}/"]) == {"delete"}
    assert "token" in schema["components"]["schemas"]["NewApiToken"]["required"]
    assert "token" not in schema["components"]["schemas"]["ApiToken"]["properties"]
    assert schema["components"]["securitySchemes"]["tokenAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": 'Token-based authentication with required prefix "Token"',
    }
