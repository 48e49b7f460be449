"""Who may read /metrics: a scraper sending METRICS_TOKEN as a Bearer token, or one whose address
is in METRICS_ALLOWED_IPS. With neither set, nobody: the numbers describe every team's work."""

from __future__ import annotations

import hmac
import ipaddress
from enum import Enum

from profiler_app.lib.env import BadSetting

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Access(Enum):
    ALLOWED = "allowed"
    NO_CREDENTIALS = "no_credentials"  # 401, saying which scheme to use
    REFUSED = "refused"  # 403
    OFF = "off"  # 403: neither setting is set


def parse_networks(value: str) -> list[Network]:
    """METRICS_ALLOWED_IPS: addresses or networks, comma-separated (``10.0.0.0/8,::1``)."""
    try:
        return [
            ipaddress.ip_network(item.strip(), strict=False)
            for item in value.split(",")
            if item.strip()
        ]
    except ValueError as exc:
        raise BadSetting(f"METRICS_ALLOWED_IPS={value!r}: {exc}") from None


def metrics_access(
    authorization: str, address: str | None, token: str, networks: list[Network]
) -> Access:
    """``authorization``: the request's Authorization header ("" when none); ``address``: the
    client's, as the sign-in throttle reads it (NUM_PROXIES)."""
    if not token and not networks:
        return Access.OFF
    if address and networks:
        try:
            client = ipaddress.ip_address(address)
        except ValueError:
            client = None
        if client is not None and any(client in network for network in networks):
            return Access.ALLOWED
    if not token:
        return Access.REFUSED
    if not authorization:
        return Access.NO_CREDENTIALS
    scheme, _, sent = authorization.partition(" ")
    # Compared in constant time: the token is a password.
    if scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(), token.encode()):
        return Access.ALLOWED
    return Access.REFUSED
