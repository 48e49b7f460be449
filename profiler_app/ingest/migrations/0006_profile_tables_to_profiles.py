# The profile's tables belong to the profiles app now (profiles 0001 claims them): they leave the
# ingest app's state only, and no table is dropped or renamed.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0005_step_captured"),
        ("profiles", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="Annotation"),
                migrations.DeleteModel(name="CollectiveStat"),
                migrations.DeleteModel(name="GpuActivity"),
                migrations.DeleteModel(name="KernelStat"),
                migrations.DeleteModel(name="MemoryAllocator"),
                migrations.DeleteModel(name="MemoryOperation"),
                migrations.DeleteModel(name="MemoryPeak"),
                migrations.DeleteModel(name="MemoryPoint"),
                migrations.DeleteModel(name="PartSummary"),
                migrations.DeleteModel(name="RankOverlap"),
                migrations.DeleteModel(name="Step"),
                migrations.DeleteModel(name="StepBreakdown"),
                migrations.DeleteModel(name="TimelineTrack"),
                migrations.DeleteModel(name="UtilizationPoint"),
            ],
        ),
    ]
