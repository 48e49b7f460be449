from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS

# "Last used" is kept to the minute: one write per token per minute, not one per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiToken(AbstractAuthToken):
    """A person's named API token (knox's token model, KNOX_TOKEN_MODEL): the database keeps
    the first characters of the key (``token_key``, to find it and to recognise it) and a digest
    of the whole key, never the key itself."""

    NAME_MAX_LENGTH = 100
    PREFIX_LENGTH = 8

    # knox makes the digest the primary key; an id names a token in URLs instead.
    id = models.BigAutoField(primary_key=True)
    digest = models.CharField(max_length=CONSTANTS.DIGEST_LENGTH, unique=True)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        constraints = [
            # Also the index the token list (by user) reads.
            models.UniqueConstraint(fields=["user", "name"], name="token_name_unique_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def prefix(self) -> str:
        """The key's first characters: not secret, enough to tell tokens apart."""
        return self.token_key[: self.PREFIX_LENGTH]

    def record_use(self) -> None:
        now = timezone.now()
        if self.last_used is not None and now - self.last_used < LAST_USED_RESOLUTION:
            return
        # Requests that authenticate at once with the same token write once between them.
        ApiToken.objects.filter(
            Q(last_used__isnull=True) | Q(last_used__lte=now - LAST_USED_RESOLUTION), pk=self.pk
        ).update(last_used=now)
        self.last_used = now


class ProviderIdentity(models.Model):
    """The account a person of the team's identity provider signs in to: the provider's
    issuer and subject (``sub``) name one person for good, whatever their name or e-mail
    address becomes, and a local account of the same name is never taken over."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Also the index every sign-in looks its account up by.
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_account_per_identity")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
