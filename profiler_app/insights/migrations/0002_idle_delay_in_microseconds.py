"""The idle-time delay parameter is in microseconds now (``IdleTime_consecutive_kernel_delay_us``);
a job's old override (applied as nanoseconds) keeps its meaning."""

from django.db import migrations

OLD, NEW = "IdleTime_consecutive_kernel_delay", "IdleTime_consecutive_kernel_delay_us"


def forwards(apps, schema_editor):
    RuleOverrides = apps.get_model("reports", "RuleOverrides")  # noqa: N806 (Django's idiom)
    for row in RuleOverrides.objects.filter(params__has_key=OLD):
        params = dict(row.params)
        params[NEW] = float(params.pop(OLD)) / 1000
        RuleOverrides.objects.filter(pk=row.pk).update(params=params)


def backwards(apps, schema_editor):
    RuleOverrides = apps.get_model("reports", "RuleOverrides")  # noqa: N806
    for row in RuleOverrides.objects.filter(params__has_key=NEW):
        params = dict(row.params)
        params[OLD] = round(float(params.pop(NEW)) * 1000)
        RuleOverrides.objects.filter(pk=row.pk).update(params=params)


class Migration(migrations.Migration):
    dependencies = [("reports", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
