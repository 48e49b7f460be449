"""What changes in the read model. The ingest sends these as it writes a part's rows; the pages
listen here, so neither side imports the other."""

from django.dispatch import Signal

# A part's results were stored: figures computed from the job's earlier parts are stale.
# Sent with ``part_id``.
part_parsed = Signal()

# A part's timeline store is complete, before its rows are saved and it is marked done: apps that
# derive files from the store (the timeline's index) build them now, in the worker, so the part
# is ready when it shows as done. Sent with ``part_id`` and ``store_dir``; a receiver's error
# fails the part.
store_written = Signal()
