"""What changes in the read model. The ingest sends these as it writes a part's rows; the pages
listen here, so neither side imports the other."""

from django.dispatch import Signal

# A part's results were stored: figures computed from the job's earlier parts are stale.
# Sent with ``part_id``.
part_parsed = Signal()
