"""A failed part's reason, as a short label for a metric, read from the message its user sees
(profiler_app.ingest.failures writes them; tests/metrics/test_reasons.py runs each through here)."""

# The first phrase a message contains names its reason; the disk comes first, since a full disk
# shows through whichever step met it.
_PHRASES = (
    ("disk is full", "disk_full"),
    ("storage bucket could not be reached", "bucket_unreachable"),
    ("The object store could not", "bucket_refused"),
    ("no longer in the server's storage", "file_gone"),
    ("This file could not be read", "unreadable_file"),
    ("needs more memory than a worker may use", "out_of_memory"),
    ("was cut short", "worker_died"),
    ("results could not be stored", "results_not_stored"),
    ("unexpected problem", "unexpected"),
)


def failure_reason(message: str) -> str:
    for phrase, reason in _PHRASES:
        if phrase in message:
            return reason
    return "other"
