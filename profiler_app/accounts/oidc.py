"""Sign-in through the team's identity provider (OpenID Connect, mozilla-django-oidc): the
provider's endpoints from its discovery document unless set one by one, and accounts made and
kept in step by ``logic.sign_in_from_provider``. Off while OIDC_CLIENT_ID is unset."""

import logging
from functools import lru_cache

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from profiler_app.accounts.logic import SignInRefused, sign_in_from_provider
from profiler_app.accounts.oidc_claims import ClaimRules

log = logging.getLogger(__name__)

# mozilla-django-oidc's setting → the discovery document's field that fills it when unset.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


@lru_cache(maxsize=4)
def discovery_document(issuer: str) -> dict:
    """The issuer's /.well-known/openid-configuration, read once per process (a failed read
    is not kept: the next sign-in asks again)."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    answer = requests.get(url, timeout=settings.OIDC_TIMEOUT)
    answer.raise_for_status()
    document = answer.json()
    # OpenID Connect Discovery 1.0 §4.3: a document for another issuer is not this one's.
    if document.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
        raise SuspiciousOperation(f"{url} names another issuer: {document.get('issuer')!r}")
    return document


def provider_setting(attr: str, *default):
    value = import_from_settings(attr, *default)
    if value or attr not in DISCOVERED or not settings.OIDC_ISSUER:
        return value
    return discovery_document(settings.OIDC_ISSUER).get(DISCOVERED[attr]) or value


def claim_rules() -> ClaimRules:
    return ClaimRules(
        groups_claim=settings.OIDC_GROUPS_CLAIM,
        staff_groups=frozenset(settings.OIDC_STAFF_GROUPS),
        allowed_groups=frozenset(settings.OIDC_ALLOWED_GROUPS),
        allowed_domains=frozenset(d.lower() for d in settings.OIDC_ALLOWED_DOMAINS),
    )


class ProviderBackend(OIDCAuthenticationBackend):
    """Always listed in AUTHENTICATION_BACKENDS, so that turning OIDC on or off needs only the
    environment; it answers nothing but the provider's callback."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, *args, **kwargs):
        # Django builds a backend for every request of a signed-in person (to load their
        # account); the provider's endpoints are looked up only when a sign-in needs them.
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)
    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, **kwargs):
        # Only the callback view passes a nonce: a password form's request that happens to
        # carry ?code=&state= is not a provider's answer.
        if not enabled() or "nonce" not in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        # The library checks the signature and nonce; the token must also be meant for us.
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token is meant for another client")
        issuer = settings.OIDC_ISSUER
        if issuer and payload.get("iss", "").rstrip("/") != issuer.rstrip("/"):
            raise SuspiciousOperation("the ID token comes from another issuer")
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core §5.3.2: userinfo about another subject must not be used.
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is about another subject")
        # Groups may come in the ID token or from userinfo, depending on the provider.
        claims = {**payload, **userinfo}
        try:
            return sign_in_from_provider(payload["iss"], claims, claim_rules())
        except SignInRefused as refused:
            log.warning("sign-in of %s refused: %s", claims.get("sub"), refused)
            return None


class StartSignIn(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's sign-in page (``?next=`` comes back with it)."""

    get_settings = staticmethod(provider_setting)

    def __init__(self, **kwargs):
        # The authorization endpoint is looked up in get(), where a provider that cannot be
        # reached sends the person back to the login page instead of an error page.
        View.__init__(self, **kwargs)

    OIDC_OP_AUTH_ENDPOINT = property(
        lambda self: provider_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
    )
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)

    def get(self, request):
        if not enabled():
            raise Http404("Sign-in through an identity provider is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT  # noqa: B018 (reads the discovery document)
        except (requests.RequestException, ValueError, SuspiciousOperation) as exc:
            log.warning("the identity provider cannot be reached: %s", exc)
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        return super().get(request)


class FinishSignIn(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: signed in, or the login page saying the
    provider's sign-in failed."""

    get_settings = staticmethod(provider_setting)

    def get(self, request):
        if not enabled():
            raise Http404("Sign-in through an identity provider is not configured.")
        try:
            return super().get(request)
        except (requests.RequestException, ValueError, SuspiciousOperation) as exc:
            # A provider that fails or answers what it must not: not signed in, and told so.
            log.warning("sign-in through the identity provider failed: %s", exc)
            return self.login_failure()
