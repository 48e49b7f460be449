"""Whether a part was read completely: a warning for what the reader did not recognise.

A profiler must never present a trace it could not read as a clean profile without GPU work;
this turns the part's counts of unrecognised events into a sentence a user can act on.
"""

from __future__ import annotations

from collections.abc import Mapping

# Unrecognised events above this share of a part's events earn a warning.
UNRECOGNISED_SHARE = 0.01
DEVICE_WORK_KINDS = ("kernel", "gpu_memcpy", "gpu_memset")
_SHOWN = 5


def _listing(counts: Mapping[str, int], what: str) -> str:
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_SHOWN]
    shown = ", ".join(f"{what} '{name or '(none)'}' ({n:,})" for name, n in top)
    more = len(counts) - len(top)
    return shown + (f" and {more} more" if more > 0 else "")


def read_warning(
    unknown_categories: Mapping[str, int],
    ignored_phases: Mapping[str, int],
    device_like: int,
    event_counts: Mapping[str, int],
    n_events: int,
) -> str:
    """The warning for a part, or "" when it was read completely enough."""
    parts = []
    if unknown_categories:
        parts.append(_listing(unknown_categories, "category"))
    if ignored_phases:
        parts.append(_listing(ignored_phases, "phase"))
    unrecognised = sum(unknown_categories.values()) + sum(ignored_phases.values())
    has_device_work = any(event_counts.get(kind, 0) for kind in DEVICE_WORK_KINDS)
    if device_like and not has_device_work:
        return (
            f"{device_like:,} events look like GPU work but are of a kind this server does not "
            f"recognise ({'; '.join(parts)}), so this profile's GPU activity is not shown. "
            "It is not a profile without GPU work."
        )
    if n_events and unrecognised > UNRECOGNISED_SHARE * n_events:
        share = 100 * unrecognised / n_events
        return (
            f"{unrecognised:,} of {n_events:,} events ({share:.1f} %) were not recognised and are "
            f"shown as 'other' or left out: {'; '.join(parts)}."
        )
    return ""
