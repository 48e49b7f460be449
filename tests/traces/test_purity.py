"""profiler_app.traces must import (and work) with Django and Celery absent."""

from tests.purity import run_without_django


def test_it_imports_without_django_or_celery():
    code = """
    import profiler_app.traces
    import profiler_app.traces.kineto
    from profiler_app.traces import ingest_trace
    print("pure")
    """
    assert run_without_django(code) == "pure"
