"""Who may read /metrics (profiler_app.metrics.access): pure, no server."""

import pytest

from profiler_app.lib.env import BadSetting
from profiler_app.metrics.access import Access, metrics_access, parse_networks

NETWORKS = parse_networks("10.0.0.0/8, 192.168.1.7, ::1")


def test_it_lets_in_the_token_or_an_allowed_address():
    assert metrics_access("Bearer s3cret", "172.16.0.1", "s3cret", []) == Access.ALLOWED
    assert metrics_access("bearer  s3cret ", "172.16.0.1", "s3cret", []) == Access.ALLOWED
    assert metrics_access("", "10.20.30.40", "", NETWORKS) == Access.ALLOWED
    assert metrics_access("", "192.168.1.7", "s3cret", NETWORKS) == Access.ALLOWED
    assert metrics_access("", "::1", "", NETWORKS) == Access.ALLOWED


def test_it_refuses_the_rest():
    assert metrics_access("", "172.16.0.1", "s3cret", NETWORKS) == Access.NO_CREDENTIALS
    assert metrics_access("Bearer s3cre", "172.16.0.1", "s3cret", []) == Access.REFUSED
    assert metrics_access("Basic s3cret", "172.16.0.1", "s3cret", []) == Access.REFUSED
    assert metrics_access("", "192.168.1.8", "", NETWORKS) == Access.REFUSED
    assert metrics_access("Bearer x", "not-an-address", "", NETWORKS) == Access.REFUSED
    assert metrics_access("Bearer ", "10.0.0.1", "", []) == Access.OFF


def test_a_bad_address_list_fails_loudly():
    with pytest.raises(BadSetting, match="METRICS_ALLOWED_IPS='10.0.0.0/33'"):
        parse_networks("10.0.0.0/33")
    assert parse_networks("") == []
