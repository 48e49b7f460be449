"""What a sign-in through the identity provider means for the account: whether the person may
sign in, the user name a new account gets, and whether it is staff. Pure: claims in, a decision
out (no Django), so every provider's shape of claims is tested without one."""

import re
from dataclasses import dataclass

# Django's user names allow letters, digits and @.+-_ (150 characters at most).
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")
USERNAME_MAX_LENGTH = 150


@dataclass(frozen=True)
class ClaimRules:
    """The administrator's choices (settings OIDC_*)."""

    groups_claim: str = "groups"
    staff_groups: frozenset[str] = frozenset()
    allowed_groups: frozenset[str] = frozenset()
    allowed_domains: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    # None: no staff groups are configured, and the staff flag stays as an admin set it.
    is_staff: bool | None = None


def claim_values(claims: dict, name: str) -> set[str]:
    """A claim as a set of strings: providers send groups as a list, some claims (hd, email,
    a role) as one string."""
    value = claims.get(name)
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    if isinstance(value, list | tuple):
        return {str(item) for item in value}
    return {str(value)}


def email_domain(claims: dict) -> str:
    # An address the provider has not verified says nothing about who signs in.
    if claims.get("email_verified") is False:
        return ""
    email = str(claims.get("email") or "")
    return email.rpartition("@")[2].lower() if "@" in email else ""


def decide(claims: dict, rules: ClaimRules) -> Decision:
    if not claims.get("sub"):
        return Decision(False, "the provider named no subject (sub)")
    groups = claim_values(claims, rules.groups_claim)
    if rules.allowed_domains and email_domain(claims) not in rules.allowed_domains:
        return Decision(False, "the e-mail address is not in an allowed domain")
    if rules.allowed_groups and not groups & rules.allowed_groups:
        return Decision(False, f"no allowed value in the '{rules.groups_claim}' claim")
    if not rules.staff_groups:
        return Decision(True)
    return Decision(True, is_staff=bool(groups & rules.staff_groups))


def username_base(claims: dict) -> str:
    """The user name a new account asks for: preferred_username, else the e-mail address,
    else the subject; characters Django refuses become '-'."""
    raw = claims.get("preferred_username") or claims.get("email") or claims.get("sub") or ""
    return _NOT_IN_USERNAME.sub("-", str(raw))[:USERNAME_MAX_LENGTH] or "user"


def username_candidates(base: str):
    """base, then base-2, base-3, …: an account of that name (a local one, say) keeps its
    name and the new one takes the next free."""
    yield base
    number = 2
    while True:
        suffix = f"-{number}"
        yield base[: USERNAME_MAX_LENGTH - len(suffix)] + suffix
        number += 1
