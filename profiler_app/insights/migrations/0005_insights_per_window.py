from django.db import migrations, models
from django.db.models import OuterRef, Subquery

import django.db.models.deletion


def owners_window(apps, schema_editor):
    """Rows computed before windows were per viewer cover their job's own window."""
    JobInsights = apps.get_model("reports", "JobInsights")
    TrainingJob = apps.get_model("core", "TrainingJob")
    JobInsights.objects.update(
        window=Subquery(TrainingJob.objects.filter(pk=OuterRef("job_id")).values("window")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0007_window_choice"),
        ("reports", "0004_insights_heartbeat"),
    ]

    operations = [
        migrations.AddField(
            model_name="jobinsights",
            name="window",
            field=models.CharField(
                choices=[("whole_trace", "whole trace"), ("complete_steps", "complete steps")],
                default="whole_trace",
                max_length=16,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(owners_window, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="jobinsights",
            name="job",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="insights",
                to="core.trainingjob",
            ),
        ),
        migrations.AddConstraint(
            model_name="jobinsights",
            constraint=models.UniqueConstraint(
                fields=("job", "window"), name="insights_one_per_window"
            ),
        ),
    ]
