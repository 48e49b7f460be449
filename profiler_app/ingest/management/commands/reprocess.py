"""Queue parts for parsing again from their stored raw files (after a fix or a failure)."""

from django.core.management.base import BaseCommand, CommandError

from profiler_app.core.logic import reset_part_for_reprocess
from profiler_app.core.models import PartState, ProfilePart


class Command(BaseCommand):
    help = "Re-parse profile parts from their raw files: by id, a whole job, or every failed part."

    def add_arguments(self, parser):
        parser.add_argument("part_ids", nargs="*", type=int, help="ids of the parts to re-parse")
        parser.add_argument("--job", type=int, help="re-parse every part of this job")
        parser.add_argument("--failed", action="store_true", help="only parts that failed")

    def handle(self, *args, part_ids, job, failed, **options):
        if not part_ids and job is None and not failed:
            raise CommandError("name part ids, --job ID, or --failed")
        parts = ProfilePart.objects.order_by("id")
        if part_ids:
            parts = parts.filter(id__in=part_ids)
            missing = set(part_ids) - set(parts.values_list("id", flat=True))
            if missing:
                raise CommandError(f"no such part: {', '.join(map(str, sorted(missing)))}")
        if job is not None:
            parts = parts.filter(job_id=job)
        if failed:
            parts = parts.filter(state=PartState.FAILED)
        queued = 0
        for part in parts:
            if not part.file.name or not part.file.storage.exists(part.file.name):
                self.stderr.write(f"part {part.pk}: raw file is gone, upload it again")
                continue
            reset_part_for_reprocess(part)
            queued += 1
            self.stdout.write(f"part {part.pk} ({part.original_name}) queued")
        self.stdout.write(self.style.SUCCESS(f"{queued} part(s) queued for parsing"))
