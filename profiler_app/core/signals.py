"""What core announces to the apps above it (which listen; core imports none of them)."""

from django.dispatch import Signal

# A job's window (whole trace / complete steps) changed: results computed for the old one are
# stale. Sent with ``job``.
job_window_changed = Signal()
