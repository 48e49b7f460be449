"""What the pages read from core's rows, beyond one job."""

from django.db import connection

from profiler_app.core.models import TrainingJob


def tags_in_use() -> list[dict]:
    """Every tag some job carries, with how many carry it: most used first, then by name."""
    table = connection.ops.quote_name(TrainingJob._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tag, COUNT(*) AS jobs FROM {table}, unnest(tags) AS tag "
            "GROUP BY tag ORDER BY jobs DESC, tag"
        )
        return [{"tag": tag, "jobs": jobs} for tag, jobs in cursor.fetchall()]
