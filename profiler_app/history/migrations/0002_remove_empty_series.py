"""Removes the series left without runs before a series went with its last run."""

from django.db import migrations


def remove_empty_series(apps, schema_editor):
    Series = apps.get_model("history", "Series")
    Series.objects.filter(runs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("history", "0001_initial")]

    operations = [migrations.RunPython(remove_empty_series, migrations.RunPython.noop)]
