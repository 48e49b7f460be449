"""Request rates for what is expensive or guessable (rates: settings.REST_FRAMEWORK).

Sign-in, through the API or the admin form, follows one policy: wrong passwords are counted per
account (``login_account``: one person's account is guessed at) and per client address
(``login_address``: a much higher bound, so a team behind one NAT is not locked out by one
person's typos). Past either bound sign-in is refused, the right password too, until the
oldest counted failure leaves the window; a colleague's account from the same address is not.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle, UserRateThrottle


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


def login_refusal(request, username: str) -> LoginRefused | None:
    """Why a sign-in as ``username`` from this request's address is refused now, if it is."""
    now = time.time()
    for scope, key, who in _login_bounds(request, username):
        allowed, period_s = _rate(scope)
        failures = [t for t in cache.get(key, []) if t > now - period_s]
        if len(failures) >= allowed:
            wait_s = max(1, math.ceil(failures[-allowed] + period_s - now))
            return LoginRefused(
                f"Too many wrong passwords for {who}: sign-in is paused for it. Try again in "
                f"{_in_words(wait_s)}.",
                wait_s,
            )
    return None


def record_login_failure(request, username: str) -> None:
    now = time.time()
    for scope, key, _ in _login_bounds(request, username):
        _, period_s = _rate(scope)
        failures = [t for t in cache.get(key, []) if t > now - period_s]
        cache.set(key, [*failures, now], period_s)


def forget_login_failures(request, username: str) -> None:
    """The account's count starts again after its owner signs in (the address's does not)."""
    scope, key, _ = _login_bounds(request, username)[0]
    cache.delete(key)
