"""What the ingest announces to the apps above it (which listen; the ingest imports none of them)."""

from django.dispatch import Signal

# A part's results were stored: figures computed from the job's earlier parts are stale.
# Sent with ``part_id``.
part_parsed = Signal()
