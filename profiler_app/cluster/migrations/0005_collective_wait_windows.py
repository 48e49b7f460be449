from django.db import migrations, models


def whole_trace_only(apps, schema_editor):
    # Waits stored before windows were measured over the whole trace: they count there only
    # until the job's insights run again.
    apps.get_model("cluster", "CollectiveWait").objects.update(windows=1)


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0004_cluster_rows"),
        ("core", "0005_job_notes_tags_retention"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="collectivewait",
            name="wait_one_per_rank",
        ),
        migrations.AddField(
            model_name="collectivewait",
            name="windows",
            field=models.PositiveSmallIntegerField(default=3),
        ),
        migrations.RunPython(whole_trace_only, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="collectivewait",
            constraint=models.UniqueConstraint(
                fields=("job", "windows", "rank", "collective"), name="wait_one_per_rank"
            ),
        ),
    ]
