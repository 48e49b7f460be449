"""The series list: searched by name in any case, a page at a time; a series goes with its
last run (its job deleted or moved), and the upgrade removes those left empty before."""

import importlib

import pytest
from django.apps import apps
from django.db import connection

from profiler_app.core.models import TrainingJob
from profiler_app.history import logic
from profiler_app.history.models import Series

pytestmark = pytest.mark.django_db

migration = importlib.import_module("profiler_app.history.migrations.0002_remove_empty_series")


def run_of(owner, job_name: str, series: str) -> TrainingJob:
    job = TrainingJob.objects.create(name=job_name, owner=owner, status="completed")
    logic.assign(job, series)
    return job


def names(answer) -> list[str]:
    return [s["name"] for s in answer["results"]]


def test_it_pages_the_series_by_name(api, user):
    for i in range(55):
        run_of(user, f"model-{i:02d}-run-1", f"model-{i:02d}")
    first = api.get("/api/series/").json()
    assert first["count"] == 55
    assert names(first) == [f"model-{i:02d}" for i in range(50)]
    assert first["next"].endswith("/api/series/?page=2")
    second = api.get(first["next"]).json()
    assert names(second) == ["model-50", "model-51", "model-52", "model-53", "model-54"]
    assert second["next"] is None


def test_it_searches_the_series_name_in_any_case(api, user):
    run_of(user, "bert-large-run-1", "Bert-large")
    run_of(user, "bert-large-run-2", "Bert-large")
    run_of(user, "bert-base-run-1", "my-bert-base")
    run_of(user, "gpt-run-1", "gpt-2")
    found = api.get("/api/series/", {"search": "BERT"}).json()
    assert found["count"] == 2
    assert [(s["name"], s["run_count"]) for s in found["results"]] == [
        ("Bert-large", 2),
        ("my-bert-base", 1),
    ]
    assert names(api.get("/api/series/", {"search": "t-2"}).json()) == ["gpt-2"]
    assert api.get("/api/series/", {"search": "llama"}).json() == {
        "count": 0,
        "next": None,
        "previous": None,
        "results": [],
    }


def test_a_search_is_paged_too(api, user):
    for i in range(53):
        run_of(user, f"resnet-{i:02d}-run-1", f"resnet-{i:02d}")
    run_of(user, "vit-run-1", "vit")
    first = api.get("/api/series/", {"search": "RESNET"}).json()
    assert (first["count"], len(first["results"])) == (53, 50)
    assert first["next"].endswith("/api/series/?page=2&search=RESNET")
    assert names(api.get(first["next"]).json()) == ["resnet-50", "resnet-51", "resnet-52"]


def test_it_removes_a_series_with_its_last_job(api, user):
    first = run_of(user, "gpt-run-1", "gpt")
    second = run_of(user, "gpt-run-2", "gpt")
    run_of(user, "vit-run-1", "vit")
    assert api.delete(f"/api/jobs/{first.pk}/").status_code == 204
    assert [(s["name"], s["run_count"]) for s in api.get("/api/series/").json()["results"]] == [
        ("gpt", 1),
        ("vit", 1),
    ]
    assert api.delete(f"/api/jobs/{second.pk}/").status_code == 204
    assert names(api.get("/api/series/").json()) == ["vit"]
    assert list(Series.objects.values_list("name", flat=True)) == ["vit"]


def test_jobs_deleted_together_take_their_emptied_series(user):
    """Retention and the admin delete many jobs in one query."""
    for series in ("a", "b"):
        run_of(user, f"{series}-run-1", series)
        run_of(user, f"{series}-run-2", series)
    run_of(user, "c-run-1", "c")
    TrainingJob.objects.filter(name__in=["a-run-1", "a-run-2", "b-run-1"]).delete()
    assert sorted(Series.objects.values_list("name", flat=True)) == ["b", "c"]


def test_a_series_goes_when_its_last_run_moves_to_another(api, user):
    job = run_of(user, "bert-run-1", "bert")
    run_of(user, "bert-run-2", "bert")
    other = run_of(user, "gpt-run-1", "gpt")
    moved = api.put(f"/api/jobs/{other.pk}/series/", {"series": "bert"}, format="json")
    assert moved.json()["series"] == "bert"
    assert [(s["name"], s["run_count"]) for s in api.get("/api/series/").json()["results"]] == [
        ("bert", 3)
    ]
    api.put(f"/api/jobs/{job.pk}/series/", {"series": "bert-v2"}, format="json")
    assert [(s["name"], s["run_count"]) for s in api.get("/api/series/").json()["results"]] == [
        ("bert", 2),
        ("bert-v2", 1),
    ]


def test_the_upgrade_removes_series_left_empty_before(user):
    run_of(user, "kept-run-1", "kept")
    Series.objects.create(name="left-empty-1", owner=user)
    Series.objects.create(name="left-empty-2")
    with connection.schema_editor() as editor:
        migration.remove_empty_series(apps, editor)
    assert list(Series.objects.values_list("name", flat=True)) == ["kept"]
