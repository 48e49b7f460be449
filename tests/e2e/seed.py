"""Rows the browser tests look at, written straight to the database.

Parts are created as rows in the state each test needs (done, processing, failed with an
error) instead of being uploaded, so no ingest task is queued and no worker has to run.
"""

import hashlib
from datetime import datetime, timedelta

from django.utils import timezone

from profiler_app.core.models import Node, PartKind, PartState, ProfilePart, TrainingJob


def make_job(
    name: str,
    *,
    owner=None,
    status: str = "completed",
    created_at: datetime | None = None,
    nodes: tuple[tuple[str, int, int], ...] = (("algo-1", 8, 96),),
    **fields,
) -> TrainingJob:
    created_at = created_at or timezone.now()
    job = TrainingJob.objects.create(
        name=name,
        owner=owner,
        status=status,
        created_at=created_at,
        instance_count=len(nodes),
        **fields,
    )
    for node_name, gpu_count, cpu_count in nodes:
        Node.objects.create(
            job=job,
            name=node_name,
            hostname=f"ip-10-0-0-{node_name.rsplit('-', 1)[-1]}",
            gpu_count=gpu_count,
            cpu_count=cpu_count,
        )
    return job


def add_part(
    job: TrainingJob,
    node_name: str,
    *,
    rank: int,
    state: str = PartState.DONE,
    size_bytes: int = 2_000_000,
    error: str = "",
    progress: float | None = None,
    pid: int | None = None,
) -> ProfilePart:
    node = Node.objects.get(job=job, name=node_name)
    original_name = f"{node_name}_rank{rank}.pt.trace.json.gz"
    digest = hashlib.sha256(f"{job.pk}/{original_name}".encode()).hexdigest()
    return ProfilePart.objects.create(
        job=job,
        node=node,
        rank=rank,
        pid=pid,
        kind=PartKind.KINETO,
        original_name=original_name,
        size_bytes=size_bytes,
        sha256=digest,
        file=f"parts/{job.pk}/{digest}-{original_name}",
        state=state,
        error=error,
        progress=1.0 if progress is None and state == PartState.DONE else (progress or 0.0),
    )


def catalog(owner, now: datetime) -> dict[str, TrainingJob]:
    """A small team catalog: finished, running, failed and stopped jobs over three weeks."""
    jobs = {
        "resnet50-baseline": make_job(
            "resnet50-baseline",
            owner=owner,
            created_at=now - timedelta(days=20),
            instance_type="ml.p4d.24xlarge",
            framework="PyTorch",
            framework_version="2.13.0",
            nodes=(("algo-1", 8, 96), ("algo-2", 8, 96)),
            started_at=now - timedelta(days=20),
            ended_at=now - timedelta(days=20, hours=-3),
            hyperparameters={"batch_size": 256, "lr": 0.1, "optimizer": "sgd", "epochs": 90},
            resource_ids={
                "training_job_arn": "arn:aws:sagemaker:eu-west-1:111122223333:"
                "training-job/resnet50-baseline",
                "cluster": "gpu-a",
            },
        ),
        "bert-large-pretrain": make_job(
            "bert-large-pretrain",
            owner=owner,
            status="in_progress",
            created_at=now - timedelta(hours=5),
            instance_type="ml.p4d.24xlarge",
            framework="PyTorch",
            framework_version="2.13.0",
            nodes=(("algo-1", 8, 96), ("algo-2", 8, 96), ("algo-3", 8, 96), ("algo-4", 8, 96)),
            started_at=now - timedelta(hours=5),
            hyperparameters={"batch_size": 64, "lr": 1e-4, "warmup_steps": 10000},
        ),
        "gpt2-small-debug": make_job(
            "gpt2-small-debug",
            owner=owner,
            status="failed",
            created_at=now - timedelta(days=3),
            instance_type="g5.2xlarge",
            framework="PyTorch",
            framework_version="2.12.1",
            started_at=now - timedelta(days=3),
            ended_at=now - timedelta(days=3, minutes=-12),
        ),
        "vit-b16-sweep-3": make_job(
            "vit-b16-sweep-3",
            owner=owner,
            status="stopped",
            created_at=now - timedelta(days=9),
            instance_type="ml.g5.12xlarge",
            framework="PyTorch",
            framework_version="2.13.0",
            nodes=(("algo-1", 4, 48),),
        ),
    }
    resnet = jobs["resnet50-baseline"]
    for rank, node in enumerate(("algo-1", "algo-1", "algo-2", "algo-2")):
        add_part(resnet, node, rank=rank, size_bytes=48_000_000 + rank, pid=4100 + rank)
    bert = jobs["bert-large-pretrain"]
    add_part(bert, "algo-1", rank=0, size_bytes=31_000_000, pid=5120)
    add_part(bert, "algo-2", rank=8, state=PartState.PROCESSING, progress=0.4, pid=5121)
    add_part(bert, "algo-3", rank=16, state=PartState.PENDING, pid=5122)
    gpt2 = jobs["gpt2-small-debug"]
    add_part(
        gpt2,
        "algo-1",
        rank=0,
        state=PartState.FAILED,
        size_bytes=900_000,
        pid=777,
        error="Not a PyTorch profiler trace: the JSON has no 'traceEvents' list.",
    )
    return jobs
