from datetime import UTC, datetime, timedelta

import pytest

from profiler_app.core.models import JobStatus, LoadedProfile, TrainingJob

pytestmark = pytest.mark.django_db

JOBS = "/api/jobs/"


def make_job(name, owner=None, status=JobStatus.COMPLETED, created_at=None):
    job = TrainingJob.objects.create(name=name, owner=owner, status=status)
    if created_at is not None:
        TrainingJob.objects.filter(pk=job.pk).update(created_at=created_at)
    return job


def names(response):
    return [row["name"] for row in response.json()["results"]]


def test_it_requires_authentication_on_every_job_endpoint(client_for, user):
    job = make_job("resnet", owner=user)
    anonymous = client_for(None)
    assert anonymous.get(JOBS).status_code == 401
    assert anonymous.post(JOBS, {"name": "x"}, format="json").status_code == 401
    assert anonymous.get(f"{JOBS}{job.id}/").status_code == 401
    assert (
        anonymous.patch(f"{JOBS}{job.id}/", {"status": "failed"}, format="json").status_code == 401
    )


def test_it_creates_a_job_owned_by_the_caller(api, user):
    response = api.post(
        JOBS,
        {
            "name": "bert-pretrain",
            "instance_type": "ml.p4d.24xlarge",
            "instance_count": 2,
            "framework": "PyTorch",
            "framework_version": "2.13.0",
            "hyperparameters": {"lr": 0.001, "batch_size": 64},
            "resource_ids": {"training_job_arn": "arn:example:job/bert"},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["owner"] == "alice"
    assert body["status"] == "in_progress"
    assert body["hyperparameters"] == {"lr": 0.001, "batch_size": 64}
    assert body["parts_total"] == 0
    assert TrainingJob.objects.get(name="bert-pretrain").owner == user


def test_it_refuses_a_duplicate_name_with_a_unique_code(api, user):
    make_job("dup", owner=user)
    response = api.post(JOBS, {"name": "dup"}, format="json")
    assert response.status_code == 400
    assert response.json()["name"][0].startswith("training job with this name already exists")


def test_a_rank_that_loses_the_race_to_create_its_job_gets_the_duplicate_answer(
    api, teammate, monkeypatch
):
    """Another rank's insert lands between this request's unique-name check and its own insert."""
    from profiler_app.core.serializers import TrainingJobSerializer

    original_validate = TrainingJobSerializer.validate

    def validate_then_lose_the_race(self, attrs):
        attrs = original_validate(self, attrs)
        make_job(attrs["name"], owner=teammate)
        return attrs

    monkeypatch.setattr(TrainingJobSerializer, "validate", validate_then_lose_the_race)
    response = api.post(JOBS, {"name": "ddp-run"}, format="json")
    assert response.status_code == 400
    assert response.json()["name"][0].startswith("training job with this name already exists")
    assert TrainingJob.objects.get(name="ddp-run").owner == teammate


def test_it_rejects_hyperparameters_that_are_not_an_object(api):
    response = api.post(JOBS, {"name": "h", "hyperparameters": [1, 2]}, format="json")
    assert response.status_code == 400
    assert response.json()["hyperparameters"] == ["Hyperparameters must be a JSON object."]


JSON_REFUSED = {
    "detail": "JSON strings must not contain NUL characters (\\u0000) or unpaired surrogates "
    "(\\ud800-\\udfff).",
    "code": "parse_error",
}


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "nul\\u0000"}',
        '{"name": "h", "hyperparameters": {"lr": "\\u0000"}}',
        '{"name": "lone\\ud800"}',
        '{"name": "h", "resource_ids": {"\\udc00": "x"}}',
        '{"name": "h", "hyperparameters": {"deep": [[["\\u0000"]]]}}',
    ],
)
def test_it_refuses_json_strings_postgres_cannot_store(api, body):
    response = api.post(JOBS, body, content_type="application/json")
    assert (response.status_code, response.json()) == (400, JSON_REFUSED)
    assert not TrainingJob.objects.exists()


@pytest.mark.parametrize(
    "path", [JOBS, "/api/jobs/1/kernels/", "/api/jobs/1/timeline/search/", "/api/dashboard/"]
)
def test_it_refuses_nul_in_a_query_parameter(api, path):
    response = api.get(path, {"q": "a\x00b"})
    assert response.status_code == 400
    assert response.json() == {
        "detail": "The query parameter 'q' contains a NUL character.",
        "code": "invalid",
    }


def test_it_refuses_a_time_that_is_past_year_9999_in_utc(api, user):
    make_job("late", user)
    response = api.get(JOBS, {"created_before": "9999-12-31T23:59:59-23:59"})
    assert response.status_code == 400
    assert response.json() == {
        "created_before": ["Enter a date/time between the years 1 and 9999 in UTC."]
    }
    in_range = api.get(JOBS, {"created_before": "9999-12-31T23:59:59+23:59"})
    assert names(in_range) == ["late"]


def test_it_shows_every_job_to_every_teammate(client_for, user, teammate):
    make_job("alice-job", owner=user)
    make_job("bob-job", owner=teammate)
    assert sorted(names(client_for(teammate).get(JOBS))) == ["alice-job", "bob-job"]
    assert sorted(names(client_for(user).get(JOBS))) == ["alice-job", "bob-job"]


def test_it_filters_by_name_status_and_creation_time(api, user):
    base = datetime(2026, 1, 10, tzinfo=UTC)
    make_job("resnet-a", user, JobStatus.COMPLETED, base)
    make_job("resnet-b", user, JobStatus.FAILED, base + timedelta(days=1))
    make_job("bert-c", user, JobStatus.IN_PROGRESS, base + timedelta(days=2))
    make_job("bert-d", user, JobStatus.STOPPED, base + timedelta(days=3))

    assert sorted(names(api.get(JOBS, {"search": "RESNET"}))) == ["resnet-a", "resnet-b"]
    assert names(api.get(JOBS, {"name": "bert-c"})) == ["bert-c"]
    by_status = api.get(f"{JOBS}?status=failed&status=stopped")
    assert sorted(names(by_status)) == ["bert-d", "resnet-b"]
    in_range = api.get(
        JOBS,
        {"created_after": "2026-01-11T00:00:00Z", "created_before": "2026-01-12T12:00:00Z"},
    )
    assert sorted(names(in_range)) == ["bert-c", "resnet-b"]
    assert api.get(JOBS, {"status": "sleeping"}).status_code == 400


def test_it_orders_newest_first_and_paginates(api, user):
    base = datetime(2026, 3, 1, tzinfo=UTC)
    for i in range(55):
        make_job(f"job-{i:02d}", user, created_at=base + timedelta(minutes=i))
    first = api.get(JOBS).json()
    assert first["count"] == 55
    assert len(first["results"]) == 50
    assert first["results"][0]["name"] == "job-54"
    second = api.get(JOBS, {"page": 2}).json()
    assert [r["name"] for r in second["results"]] == [f"job-{i:02d}" for i in range(4, -1, -1)]
    by_name = api.get(JOBS, {"ordering": "name"}).json()
    assert by_name["results"][0]["name"] == "job-00"


def test_it_updates_status_and_end_time(api, user):
    job = make_job("finishing", user, JobStatus.IN_PROGRESS)
    response = api.patch(
        f"{JOBS}{job.id}/",
        {"status": "completed", "ended_at": "2026-05-01T10:00:00Z"},
        format="json",
    )
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED
    assert job.ended_at == datetime(2026, 5, 1, 10, tzinfo=UTC)
    bad = api.patch(f"{JOBS}{job.id}/", {"status": "exploded"}, format="json")
    assert bad.status_code == 400


def test_it_deletes_a_job_and_unloads_it(api, client_for, user, teammate):
    job = make_job("gone", user)
    other = make_job("kept", user)
    LoadedProfile.objects.create(user=teammate, job=job)
    assert api.delete(f"{JOBS}{job.id}/").status_code == 204
    assert list(TrainingJob.objects.values_list("name", flat=True)) == ["kept"]
    assert client_for(teammate).get("/api/loaded-profile/").status_code == 204
    assert api.get(f"{JOBS}{job.id}/").status_code == 410
    assert api.delete(f"{JOBS}{job.id}/").status_code == 404
    assert TrainingJob.objects.get(pk=other.pk).name == "kept"


def test_it_tells_a_teammate_who_deleted_a_job_and_when(api, client_for, user, teammate):
    job = make_job("sweep-7", user)
    assert api.delete(f"{JOBS}{job.id}/").status_code == 204
    response = client_for(teammate).get(f"{JOBS}{job.id}/")
    assert response.status_code == 410
    body = response.json()
    deleted_at = datetime.fromisoformat(body.pop("deleted_at"))
    assert abs(datetime.now(UTC) - deleted_at) < timedelta(minutes=1)
    assert body == {
        "detail": f"“sweep-7” was deleted by {user.username}.",
        "code": "job_deleted",
        "id": job.id,
        "name": "sweep-7",
        "deleted_by": user.username,
    }
    # A job that never existed stays a plain 404.
    assert client_for(teammate).get(f"{JOBS}{job.id + 1000}/").status_code == 404


def test_it_renames_and_edits_notes_and_tags(api, user):
    job = make_job("resnet", user)
    response = api.patch(
        f"{JOBS}{job.id}/",
        {"name": "resnet50-lr-sweep", "notes": "LR 0.1 diverges.", "tags": ["lr:0.1", "a100"]},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["name"], body["notes"], body["tags"]) == (
        "resnet50-lr-sweep",
        "LR 0.1 diverges.",
        ["lr:0.1", "a100"],
    )
    job.refresh_from_db()
    assert (job.name, job.notes, job.tags) == (
        "resnet50-lr-sweep",
        "LR 0.1 diverges.",
        ["lr:0.1", "a100"],
    )
    # A repeated tag counts once; an empty list removes them all.
    twice = api.patch(f"{JOBS}{job.id}/", {"tags": ["a", "b", "a"]}, format="json")
    assert twice.json()["tags"] == ["a", "b"]
    assert api.patch(f"{JOBS}{job.id}/", {"tags": []}, format="json").json()["tags"] == []


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        (
            {"tags": ["has space"]},
            {
                "tags": [
                    "“has space” is not a tag: use letters, digits and - _ . : only (no spaces)."
                ]
            },
        ),
        (
            {"tags": ["x" * 41]},
            {"tags": [f"“{'x' * 40}…” is too long: a tag has at most 40 characters."]},
        ),
        ({"tags": [""]}, {"tags": ["A tag cannot be empty."]}),
        ({"tags": [f"t{i}" for i in range(21)]}, {"tags": ["A job has at most 20 tags."]}),
        ({"tags": "a100"}, {"tags": ['Expected a list of items but got type "str".']}),
        ({"tags": ["ok", {"a": 1}]}, {"tags": {"1": ["Not a valid string."]}}),
        (
            {"notes": "n" * 10_001},
            {"notes": ["Ensure this field has no more than 10000 characters."]},
        ),
        ({"name": ""}, {"name": ["This field may not be blank."]}),
        ({"name": "taken"}, {"name": ["training job with this name already exists."]}),
    ],
)
def test_it_refuses_bad_notes_tags_and_names(api, user, changes, errors):
    make_job("taken", user)
    job = make_job("mine", user)
    response = api.patch(f"{JOBS}{job.id}/", changes, format="json")
    assert (response.status_code, response.json()) == (400, errors)
    job.refresh_from_db()
    assert (job.name, job.notes, job.tags) == ("mine", "", [])


def test_it_filters_by_owner_and_tags(client_for, user, teammate):
    TrainingJob.objects.create(name="a-bert", owner=user, tags=["nlp", "a100"])
    TrainingJob.objects.create(name="a-vit", owner=user, tags=["vision", "a100"])
    TrainingJob.objects.create(name="b-gpt", owner=teammate, tags=["nlp", "h100"])
    TrainingJob.objects.create(name="b-untagged", owner=teammate)
    alice = client_for(user)
    assert sorted(names(alice.get(JOBS, {"mine": "true"}))) == ["a-bert", "a-vit"]
    assert sorted(names(client_for(teammate).get(JOBS, {"mine": "true"}))) == [
        "b-gpt",
        "b-untagged",
    ]
    assert len(names(alice.get(JOBS, {"mine": "false"}))) == 4
    assert sorted(names(alice.get(f"{JOBS}?tag=nlp"))) == ["a-bert", "b-gpt"]
    assert names(alice.get(f"{JOBS}?tag=nlp&tag=a100")) == ["a-bert"]
    assert names(alice.get(f"{JOBS}?tag=nlp&tag=a100&mine=true")) == ["a-bert"]
    assert names(alice.get(f"{JOBS}?tag=nlp&mine=true&tag=h100")) == []
    row = alice.get(JOBS, {"name": "b-gpt"}).json()["results"][0]
    assert (row["owner"], row["tags"]) == ("bob", ["nlp", "h100"])
    bad = alice.get(f"{JOBS}?tag=no%20spaces")
    assert (bad.status_code, bad.json()) == (
        400,
        {"tag": ["“no spaces” is not a tag: use letters, digits and - _ . : only."]},
    )


def test_it_lists_the_tags_in_use_with_counts(api, user):
    TrainingJob.objects.create(name="j1", owner=user, tags=["nlp", "a100"])
    TrainingJob.objects.create(name="j2", owner=user, tags=["nlp"])
    TrainingJob.objects.create(name="j3", owner=user, tags=["vision", "a100", "nlp"])
    TrainingJob.objects.create(name="j4", owner=user)
    assert api.get("/api/tags/").json() == [
        {"tag": "nlp", "jobs": 3},
        {"tag": "a100", "jobs": 2},
        {"tag": "vision", "jobs": 1},
    ]


def test_it_answers_an_unknown_api_url_in_json(api):
    for path in ("/api/no-such-thing/", "/api/jobs/not-a-number/"):
        response = api.get(path)
        assert (response.status_code, response.json()) == (
            404,
            {"detail": "Not found.", "code": "not_found"},
        )
