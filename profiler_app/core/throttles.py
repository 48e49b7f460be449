"""Request rates for what is expensive or guessable (rates: settings.REST_FRAMEWORK)."""

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle


class RatesFromSettings(SimpleRateThrottle):
    """The rate as the settings say now (DRF binds the rates once, when it is imported)."""

    scope: str

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]


class LoginThrottle(RatesFromSettings):
    """Sign-in attempts per client address, signed in or not: password guessing."""

    scope = "login"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class DemoThrottle(RatesFromSettings, UserRateThrottle):
    scope = "demo"


class ReprocessThrottle(RatesFromSettings, UserRateThrottle):
    scope = "reprocess"


class ExportThrottle(RatesFromSettings, UserRateThrottle):
    scope = "export"
