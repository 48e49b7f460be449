from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from profiler_app.accounts.models import ApiToken, ProviderIdentity
from profiler_app.accounts.oidc_claims import ClaimRules, decide, username_base, username_candidates


class NameTaken(Exception):
    pass


def issue_token(user, name: str, expires_in_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for ``user``; the key is returned this once and never stored."""
    expiry = None if expires_in_days is None else timedelta(days=expires_in_days)
    try:
        with transaction.atomic():
            return ApiToken.objects.create(user, expiry=expiry, name=name)
    except IntegrityError as exc:  # the one constraint a new random key can meet
        raise NameTaken(f"You already have a token named “{name}”.") from exc


class SignInRefused(Exception):
    pass


def sign_in_from_provider(issuer: str, claims: dict, rules: ClaimRules):
    """The account of the person the identity provider vouched for: found by issuer and
    subject, or created on their first sign-in; e-mail and (when staff groups are set) the
    staff flag follow the provider's claims at every sign-in."""
    decision = decide(claims, rules)
    if not decision.allowed:
        raise SignInRefused(decision.reason)
    with transaction.atomic():
        identity = (
            ProviderIdentity.objects.select_related("user")
            .filter(issuer=issuer, subject=claims["sub"])
            .first()
        )
        user = identity.user if identity else _new_account(username_base(claims))
        if identity is None:
            ProviderIdentity.objects.create(user=user, issuer=issuer, subject=claims["sub"])
        user.email = str(claims.get("email") or user.email)
        if decision.is_staff is not None:
            user.is_staff = decision.is_staff
        user.save(update_fields=["email", "is_staff"])
    return user


def _new_account(base: str):
    User = get_user_model()
    for username in username_candidates(base):
        try:
            with transaction.atomic():
                # Signs in through the provider only: no password works for it.
                return User.objects.create_user(username, password=None)
        except IntegrityError:
            continue
    raise AssertionError("unreachable: the candidates never end")
