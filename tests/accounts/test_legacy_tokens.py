"""A server upgraded from DRF's plain-text tokens: the migration keeps each key working while
storing only its digest, and drops the table of plain keys."""

import hashlib
import importlib
from datetime import UTC, datetime

import pytest
from django.apps import apps
from django.db import connection
from rest_framework.test import APIClient

from profiler_app.accounts.models import ApiToken

pytestmark = pytest.mark.django_db

migration = importlib.import_module("profiler_app.accounts.migrations.0002_import_drf_tokens")

# The table DRF's authtoken app made (rest_framework/authtoken/migrations).
LEGACY_SCHEMA = """
CREATE TABLE authtoken_token (
    key varchar(40) PRIMARY KEY,
    created timestamp with time zone NOT NULL,
    user_id integer NOT NULL UNIQUE REFERENCES auth_user (id)
)
"""
KEY = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # DRF's own example of a key


def test_it_keeps_a_plain_drf_token_working_as_a_digest(user, teammate):
    made = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    with connection.cursor() as cursor:
        cursor.execute(LEGACY_SCHEMA)
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, %s)", [KEY, made, user.pk])
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES ('authtoken', '0001_initial', now())"
        )
    with connection.schema_editor() as editor:
        migration.import_drf_tokens(apps, editor)

    token = ApiToken.objects.get()
    assert (token.user, token.name, token.created, token.expiry, token.last_used) == (
        user,
        "Token from before named tokens",
        made,
        None,
        None,
    )
    assert (token.token_key, token.digest) == (KEY[:15], hashlib.sha512(KEY.encode()).hexdigest())
    assert "authtoken_token" not in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM django_migrations WHERE app = 'authtoken'")
        assert cursor.fetchone() == (0,)

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {KEY}")
    assert client.get("/api/auth/me/").json()["username"] == "alice"
    token.refresh_from_db()
    assert token.last_used is not None


def test_a_new_installation_has_nothing_to_import():
    with connection.schema_editor() as editor:
        migration.import_drf_tokens(apps, editor)
    assert ApiToken.objects.count() == 0
