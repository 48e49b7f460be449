"""Request rates for what is expensive or guessable (rates: settings.REST_FRAMEWORK).

Sign-in, through the API or the admin form, follows one policy: wrong passwords are counted per
account (``login_account``: one person's account is guessed at) and per client address
(``login_address``: a much higher bound, so a team behind one NAT is not locked out by one
person's typos). Past either bound sign-in is refused, the right password too, until the
window that the first counted failure opened ends; a colleague's account from the same address
is not.

Each count is one Redis integer, taken before the password is checked: an attempt counts as a
wrong password the moment it starts (an atomic INCR), and only attempts whose count is within
the bound have their password checked. Reading a count, checking the password and then adding
to it let parallel guesses all pass the read (40 at once had 18 checked with a bound of 10).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle, UserRateThrottle

from profiler_app.core.health import redis_client


class RatesFromSettings(SimpleRateThrottle):
    """The rate as the settings say now (DRF binds the rates once, when it is imported)."""

    scope: str

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]


class DemoThrottle(RatesFromSettings, UserRateThrottle):
    scope = "demo"


class ReprocessThrottle(RatesFromSettings, UserRateThrottle):
    scope = "reprocess"


class ExportThrottle(RatesFromSettings, UserRateThrottle):
    scope = "export"


@dataclass(frozen=True)
class LoginRefused:
    detail: str
    wait_s: int


def _in_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes"


def _login_bounds(request, username: str) -> list[tuple[str, str, str]]:
    """(rate scope, cache key, who is paused) of each count a sign-in attempt meets."""
    account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()
    address = BaseThrottle().get_ident(request)  # REMOTE_ADDR, or as NUM_PROXIES says
    return [
        ("login_account", f"login-fail:account:{account}", "this account"),
        ("login_address", f"login-fail:address:{address}", "this address"),
    ]


class _LoginRate(RatesFromSettings):
    def __init__(self, scope: str) -> None:
        self.scope = scope
        super().__init__()


def _rate(scope: str) -> tuple[int, int]:
    """(wrong passwords allowed, in how many seconds) for ``scope``."""
    throttle = _LoginRate(scope)
    allowed, period_s = throttle.parse_rate(throttle.get_rate())
    return int(allowed or 0), int(period_s or 1)


# Adds ARGV[1] to the count and gives it its window when it has none, in one step: a process
# dying between the two could otherwise leave a count that never expires. A slot given back
# (ARGV[1] < 0) to a count that has expired meanwhile is not turned into a negative count.
_ADD_TO_COUNT = """
if tonumber(ARGV[1]) < 0 and redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0} end
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return {count, redis.call('TTL', KEYS[1])}
"""


def _add_to_count(key: str, delta: int, period_s: int) -> tuple[int, int]:
    """(the count after adding ``delta``, seconds left in its window)."""
    client = redis_client()
    try:
        count, ttl_s = client.eval(_ADD_TO_COUNT, 1, cache.make_key(key), delta, period_s)
    finally:
        client.close()
    return int(count), int(ttl_s)


def begin_login_attempt(request, username: str) -> LoginRefused | None:
    """Counts this attempt as a wrong password for the account and the address, unless either
    is past its bound: then it counts for neither and is refused. A right password gives the
    slots back (``forget_login_failures``)."""
    counted: list[tuple[str, int]] = []
    for scope, key, who in _login_bounds(request, username):
        allowed, period_s = _rate(scope)
        count, ttl_s = _add_to_count(key, 1, period_s)
        if count > allowed:
            for earlier_key, earlier_period_s in [*counted, (key, period_s)]:
                _add_to_count(earlier_key, -1, earlier_period_s)
            wait_s = max(1, ttl_s)
            return LoginRefused(
                f"Too many wrong passwords for {who}: sign-in is paused for it. Try again in "
                f"{_in_words(wait_s)}.",
                wait_s,
            )
        counted.append((key, period_s))
    request._login_attempt_counted = True
    return None


def forget_login_failures(request, username: str) -> None:
    """The account's count starts again after its owner signs in; the address's keeps its
    wrong passwords and gets back the slot this attempt took (a right password is no guess)."""
    (_, account_key, _), (address_scope, address_key, _) = _login_bounds(request, username)
    cache.delete(account_key)
    if getattr(request, "_login_attempt_counted", False):
        _add_to_count(address_key, -1, _rate(address_scope)[1])
