"""The console's sandbox runs with Django and Celery absent."""

from tests.purity import run_without_django


def test_it_queries_without_django_or_celery():
    code = """
    from profiler_app.sql.pure.console import open_query
    answer = open_query([], "select count(*) from events")
    print(b",".join(answer.json_rows()).decode())
    answer.close()
    """
    assert run_without_django(code) == "[0]"
