"""A clean stop asked for by one process and taken by another (the idle auto-shutdown's beat
task asks; the launcher, or the web process in a container, takes it and stops)."""

from django.core.cache import cache

# In Redis, which every process reaches: the beat task that asks runs on any host.
SHUTDOWN_REQUEST_KEY = "shutdown-requested"


def request_shutdown(reason: str) -> None:
    """Asks the launcher (or the web process in a container) to stop cleanly."""
    cache.set(SHUTDOWN_REQUEST_KEY, reason, timeout=None)


def take_shutdown_request() -> str | None:
    """The reason a shutdown was asked for, if one was (the request is then taken)."""
    reason = cache.get(SHUTDOWN_REQUEST_KEY)
    if reason is not None:
        cache.delete(SHUTDOWN_REQUEST_KEY)
    return reason
