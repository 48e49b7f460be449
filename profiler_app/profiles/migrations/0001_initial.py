# The profile's tables moved here from the ingest app without moving any data: this migration
# only tells Django's state they are this app's now. The tables keep their names (db_table) and
# were created by ingest 0001-0005; ingest 0006 drops them from the ingest app's state.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("core", "0007_window_choice"),
        # The tables exist, with every column, before this app claims them.
        ("ingest", "0005_step_captured"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Annotation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("name", models.TextField()),
                        ("start_ns", models.BigIntegerField()),
                        ("dur_ns", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_annotation",
                        "indexes": [
                            models.Index(fields=["job", "name"], name="annotation_job_name_idx"),
                            models.Index(fields=["part"], name="annotation_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="CollectiveStat",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("collective", models.CharField(max_length=64)),
                        ("group_size", models.IntegerField()),
                        ("count", models.BigIntegerField()),
                        ("total_ns", models.BigIntegerField()),
                        ("min_ns", models.BigIntegerField()),
                        ("max_ns", models.BigIntegerField()),
                        ("sized_count", models.BigIntegerField()),
                        ("sized_ns", models.BigIntegerField()),
                        ("bytes", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_collectivestat",
                        "indexes": [
                            models.Index(fields=["job", "collective"], name="collective_job_idx"),
                            models.Index(fields=["part"], name="collective_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="GpuActivity",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("device", models.SmallIntegerField()),
                        ("activity", models.CharField(max_length=16)),
                        ("count", models.BigIntegerField()),
                        ("total_ns", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_gpuactivity",
                        "indexes": [
                            models.Index(fields=["job", "activity"], name="activity_job_idx"),
                            models.Index(fields=["part"], name="activity_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="KernelStat",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("device", models.SmallIntegerField()),
                        ("name", models.TextField()),
                        ("category", models.CharField(max_length=8)),
                        ("precision", models.CharField(max_length=16)),
                        ("count", models.BigIntegerField()),
                        ("total_ns", models.BigIntegerField()),
                        ("min_ns", models.BigIntegerField()),
                        ("max_ns", models.BigIntegerField()),
                        ("sum_sq_ns2", models.FloatField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_kernelstat",
                        "indexes": [
                            models.Index(fields=["job", "name"], name="kernel_job_name_idx"),
                            models.Index(fields=["part"], name="kernel_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="MemoryAllocator",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("device_type", models.SmallIntegerField()),
                        ("device_id", models.SmallIntegerField()),
                        ("name", models.TextField()),
                        ("allocations", models.BigIntegerField()),
                        ("allocated_bytes", models.BigIntegerField()),
                        ("held_count", models.BigIntegerField()),
                        ("held_bytes", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_memoryallocator",
                        "indexes": [
                            models.Index(
                                fields=["part", "device_type", "device_id"],
                                name="memalloc_part_idx",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="MemoryOperation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("device", models.SmallIntegerField()),
                        ("operation", models.CharField(max_length=32)),
                        ("count", models.BigIntegerField()),
                        ("total_ns", models.BigIntegerField()),
                        ("bytes", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_memoryoperation",
                        "indexes": [
                            models.Index(fields=["job", "operation"], name="memop_job_idx"),
                            models.Index(fields=["part"], name="memop_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="MemoryPeak",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("device_type", models.SmallIntegerField()),
                        ("device_id", models.SmallIntegerField()),
                        ("time_ns", models.BigIntegerField()),
                        ("allocated", models.BigIntegerField()),
                        ("reserved", models.BigIntegerField()),
                        ("events", models.BigIntegerField()),
                        ("running", models.JSONField(default=list)),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_memorypeak",
                        "indexes": [
                            models.Index(fields=["job", "allocated"], name="mempeak_job_idx"),
                            models.Index(fields=["part"], name="mempeak_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="MemoryPoint",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("device_type", models.SmallIntegerField()),
                        ("device_id", models.SmallIntegerField()),
                        ("time_ns", models.BigIntegerField()),
                        ("allocated", models.BigIntegerField()),
                        ("reserved", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_memorypoint",
                        "indexes": [
                            models.Index(
                                fields=["part", "device_type", "device_id", "time_ns"],
                                name="mempoint_part_idx",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="PartSummary",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("start_ns", models.BigIntegerField(null=True)),
                        ("end_ns", models.BigIntegerField(null=True)),
                        ("n_events", models.BigIntegerField(default=0)),
                        ("event_counts", models.JSONField(default=dict)),
                        ("metadata", models.JSONField(default=dict)),
                        ("store_path", models.CharField(max_length=500)),
                        ("last_step_start_ns", models.BigIntegerField(null=True)),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_partsummary",
                        "indexes": [models.Index(fields=["job"], name="summary_job_idx")],
                        "constraints": [
                            models.UniqueConstraint(fields=("part",), name="summary_one_per_part")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="RankOverlap",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("comm_ns", models.BigIntegerField()),
                        ("overlap_ns", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_rankoverlap",
                        "indexes": [models.Index(fields=["job"], name="overlap_job_idx")],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("part", "windows"), name="overlap_one_per_window"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Step",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("step", models.BigIntegerField()),
                        ("name", models.CharField(max_length=255)),
                        ("start_ns", models.BigIntegerField()),
                        ("dur_ns", models.BigIntegerField()),
                        ("captured", models.BooleanField(default=True)),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_step",
                        "indexes": [
                            models.Index(fields=["job", "rank", "step"], name="step_job_idx"),
                            models.Index(fields=["part"], name="step_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="StepBreakdown",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("step", models.BigIntegerField()),
                        ("inferred", models.BooleanField(default=False)),
                        ("start_ns", models.BigIntegerField()),
                        ("dur_ns", models.BigIntegerField()),
                        ("gap_ns", models.BigIntegerField()),
                        ("compute_ns", models.BigIntegerField()),
                        ("tail_ns", models.BigIntegerField()),
                        ("compute_busy_ns", models.BigIntegerField()),
                        ("comm_ns", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_stepbreakdown",
                        "indexes": [
                            models.Index(fields=["job", "step"], name="breakdown_job_step_idx"),
                            models.Index(fields=["part"], name="breakdown_part_idx"),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TimelineTrack",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("track", models.IntegerField()),
                        ("on_device", models.BooleanField()),
                        ("pid", models.BigIntegerField()),
                        ("tid", models.BigIntegerField()),
                        ("label", models.CharField(max_length=500)),
                        ("first_row", models.BigIntegerField()),
                        ("n_rows", models.BigIntegerField()),
                        ("start_ns", models.BigIntegerField(null=True)),
                        ("end_ns", models.BigIntegerField(null=True)),
                        ("max_dur_ns", models.BigIntegerField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_timelinetrack",
                        "indexes": [
                            models.Index(fields=["job", "node", "rank"], name="track_job_idx")
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("part", "track"), name="track_unique_per_part"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="UtilizationPoint",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("rank", models.IntegerField()),
                        ("windows", models.PositiveSmallIntegerField(default=3)),
                        ("metric", models.CharField(max_length=32)),
                        ("device", models.IntegerField()),
                        ("source", models.CharField(max_length=16)),
                        ("name", models.CharField(blank=True, max_length=255)),
                        ("time_ns", models.BigIntegerField()),
                        ("value", models.FloatField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.trainingjob",
                            ),
                        ),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.node",
                            ),
                        ),
                        (
                            "part",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="core.profilepart",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_utilizationpoint",
                        "indexes": [
                            models.Index(
                                fields=["job", "metric", "node", "device", "time_ns"],
                                name="util_job_idx",
                            ),
                            models.Index(fields=["part"], name="util_part_idx"),
                        ],
                    },
                ),
            ],
        ),
    ]
