"""Every GET endpoint's answer, on a real parsed two-rank job with its insights, validates against
the published OpenAPI schema, so the TypeScript client generated from it tells the truth."""

import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from openapi_schema_validator import OAS30Validator

from profiler_app.core.models import LoadedProfile, TrainingJob, Upload
from profiler_app.insights import logic as insights
from profiler_app.insights.models import JobInsights
from tests.timeline.jobs import TWO_RANKS, parse_job

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def schema():
    return as_clients_read_it(SchemaGenerator().get_schema(request=None, public=True))


def as_clients_read_it(node):
    """drf-spectacular writes a nullable nested object as ``{allOf: [$ref], nullable: true}``,
    which clients (openapi-typescript: ``T | null``) read as "the object or null"; the strict
    3.0 validator does not, so the schema is checked in that reading: the object or null."""
    if isinstance(node, list):
        return [as_clients_read_it(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: as_clients_read_it(value) for key, value in node.items()}
    if node.get("nullable") and len(node.get("allOf", [])) == 1:
        rest = {k: v for k, v in node.items() if k not in ("allOf", "nullable")}
        return {**rest, "oneOf": [node["allOf"][0], {"enum": [None], "nullable": True}]}
    return node


@pytest.fixture
def job(user):
    job = parse_job(user, "contract", TWO_RANKS, status="completed")
    insights.request_run(job.id, delay_s=3600)  # computed here instead of by a worker
    insights.compute(job.id, JobInsights.objects.get(job=job).generation)
    LoadedProfile.objects.create(user=user, job=job)
    return job


def query_for(path: str, api, job) -> dict:
    """Values for an operation's required query parameters, taken from the job itself."""
    if path.endswith("/timeline/viewport/"):
        tree = api.get(f"/api/jobs/{job.id}/timeline/tracks/").json()
        return {
            "start_ns": tree["start_ns"],
            "end_ns": tree["end_ns"],
            "width_px": 800,
            "tracks": tree["tracks"][0]["id"],
        }
    if path.endswith("/timeline/tracks/children/"):
        tree = api.get(f"/api/jobs/{job.id}/timeline/tracks/").json()
        return {"group": tree["tracks"][0]["id"]}
    if path.endswith("/timeline/event/"):
        found = api.get(f"/api/jobs/{job.id}/timeline/search/", {"q": "ncclKernel"}).json()
        return {"id": found["results"][0]["id"]}
    if path.endswith("/timeline/search/"):
        return {"q": "nccl"}
    if path.endswith("/annotations/durations/"):
        return {"name": api.get(f"/api/jobs/{job.id}/dashboard/").json()["annotation_names"][0]}
    if path == "/api/compare/":
        other = TrainingJob.objects.create(name="other", owner=job.owner)
        return {"a": job.id, "b": other.id}
    return {}


def test_every_get_answer_matches_the_schema(api, user, job, schema):
    part = job.parts.first()
    upload = Upload.objects.create(
        job=job,
        owner=user,
        node_name="algo-1",
        kind="kineto",
        original_name="x.json",
        size_bytes=10,
    )
    ids = {"job_id": job.id, "id": job.id}
    checked = []
    for path, operations in schema["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        if path.startswith("/api/parts/{id}"):
            ids["id"] = part.id
        elif path.startswith("/api/uploads/{id}"):
            ids["id"] = str(upload.id)
        else:
            ids["id"] = job.id
        url = path.format(**ids)
        response = api.get(url, query_for(path, api, job))
        if conforms(response, operation, schema, url):
            checked.append(path)
    assert len(checked) >= 20, checked
    assert {"/api/jobs/{job_id}/timeline/export/"} <= set(checked)  # streamed, parsed whole


def conforms(response, operation, schema, url) -> bool:
    """The answer's status and media type are documented; a JSON body (streamed or not) matches
    its schema. False when there was no JSON body to check."""
    documented = operation["responses"]
    assert str(response.status_code) in documented, (url, response.status_code)
    content = documented[str(response.status_code)].get("content", {})
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if not body:
        return False
    media = response["Content-Type"].split(";")[0].strip()
    if "application/octet-stream" not in content:  # documented as a file of any type
        assert media in content, (url, response.status_code, media, list(content))
    if media != "application/json":
        return False  # a page or a file: its media type is what is documented
    validator = OAS30Validator(
        {**content["application/json"]["schema"], "components": schema["components"]}
    )
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(json.loads(body))
    ][:5]
    assert not errors, (url, errors)
    return True


def test_the_downloads_answer_as_documented_whatever_the_client_accepts(api, user, job, schema):
    # A browser asks for text/html first: the report page comes as HTML, and errors (a report
    # not computed yet, a bad range) still as the JSON the schema documents.
    html = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,*/*;q=0.8"}
    report = "/api/jobs/{job_id}/insights/report.html"
    export = "/api/jobs/{job_id}/timeline/export/"
    fresh = TrainingJob.objects.create(name="no-report", owner=user)
    answers = [
        (report, api.get(report.format(job_id=job.id), **html), 200, "text/html"),
        (report, api.get(report.format(job_id=fresh.id), **html), 404, "application/json"),
        (export, api.get(export.format(job_id=job.id), **html), 200, "application/json"),
        (
            export,
            api.get(export.format(job_id=job.id), {"start_ns": "x"}, **html),
            400,
            "application/json",
        ),
    ]
    for path, response, status, media in answers:
        assert response.status_code == status, (path, response.status_code)
        assert response["Content-Type"].split(";")[0] == media, (path, response["Content-Type"])
        conforms(response, schema["paths"][path]["get"], schema, path)


def test_a_created_job_answer_matches_the_schema(api, schema):
    response = api.post(
        "/api/jobs/", {"name": "contract-created", "hyperparameters": {"lr": 1}}, format="json"
    )
    assert response.status_code == 201, response.content
    operation = schema["paths"]["/api/jobs/"]["post"]
    content = operation["responses"]["201"]["content"]["application/json"]
    validator = OAS30Validator({**content["schema"], "components": schema["components"]})
    assert not list(validator.iter_errors(response.json()))
