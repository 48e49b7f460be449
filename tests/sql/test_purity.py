"""The console's sandbox runs with Django and Celery absent."""

from tests.purity import run_without_django


def test_it_queries_without_django_or_celery():
    code = """
    from profiler_app.sql.pure.console import run_query
    print(run_query([], "select count(*) from events").rows)
    """
    assert run_without_django(code) == "[[0]]"
