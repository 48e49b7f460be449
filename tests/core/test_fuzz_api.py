"""Schemathesis over the whole OpenAPI schema, in process: generated requests (valid and
invalid) to every operation, signed in as staff; no answer is a 5xx, and every status code,
content type and body is one the schema lists."""

import json
from pathlib import Path

import pytest
from django.core import signals
from django.db import close_old_connections

from profiler_app.accounts.logic import issue_token
from profiler_app.wsgi import application

schemathesis = pytest.importorskip("schemathesis")  # a dev dependency (make install-dev)

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

SCHEMA = Path(__file__).resolve().parents[2] / "frontend" / "openapi.json"
# Examples per operation: about a minute for all of them here.
EXAMPLES = 50
# Whether a request that fits the schema is accepted depends on the data (an unknown job is
# a 400 or 404), so those two checks are left out; these are about the server's answers.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

schema = schemathesis.openapi.from_dict(json.loads(SCHEMA.read_text()))
schema.app = application


@pytest.fixture
def one_connection():
    """Django's WSGI handler closes the database connection after each request; the test's
    transaction lives on it, so (as Django's own test client does) it stays open."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def staff_token(staff) -> str:
    return issue_token(staff, "fuzz")[1]


@pytest.mark.django_db
@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_it_answers_every_operation_as_its_schema_says(case, one_connection, staff_token):
    case.call_and_validate(headers={"Authorization": f"Token {staff_token}"}, checks=CHECKS)
