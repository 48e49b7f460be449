"""The timeline's query modules import (and work) with Django and Celery absent."""

from tests.purity import run_without_django


def test_it_imports_without_django_or_celery():
    code = """
    from profiler_app.timeline import (
        activity, details, export, index, index_build, lanes, levels, payload, query, search,
        series, tree, viewport,
    )
    print("pure")
    """
    assert run_without_django(code) == "pure"
