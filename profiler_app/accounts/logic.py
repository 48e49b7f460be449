from datetime import timedelta

from django.db import IntegrityError, transaction

from profiler_app.accounts.models import ApiToken


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
