"""What a provider's claims mean for the account, whatever shape each provider gives them."""

from profiler_app.accounts.oidc_claims import (
    ClaimRules,
    Decision,
    decide,
    username_base,
    username_candidates,
)

STAFF = ClaimRules(staff_groups=frozenset({"profiler-admins"}))


def test_it_makes_staff_of_a_member_of_a_staff_group():
    claims = {"sub": "1", "groups": ["ml", "profiler-admins"]}
    assert decide(claims, STAFF) == Decision(True, is_staff=True)


def test_it_makes_no_staff_of_someone_outside_them_or_without_groups():
    assert decide({"sub": "1", "groups": ["ml"]}, STAFF) == Decision(True, is_staff=False)
    assert decide({"sub": "1"}, STAFF) == Decision(True, is_staff=False)


def test_it_leaves_the_staff_flag_alone_without_staff_groups():
    assert decide({"sub": "1", "groups": ["profiler-admins"]}, ClaimRules()) == Decision(True)


def test_it_reads_a_claim_of_one_string():
    # Google: no groups, but the e-mail address (or the Workspace domain, hd) names people.
    rules = ClaimRules(groups_claim="email", staff_groups=frozenset({"ana@example.com"}))
    assert decide({"sub": "1", "email": "ana@example.com"}, rules).is_staff is True
    assert decide({"sub": "2", "email": "ben@example.com"}, rules).is_staff is False


def test_it_refuses_outside_the_allowed_groups():
    rules = ClaimRules(allowed_groups=frozenset({"ml"}))
    assert decide({"sub": "1", "groups": ["ml"]}, rules).allowed is True
    assert decide({"sub": "1", "groups": ["sales"]}, rules) == Decision(
        False, "no allowed value in the 'groups' claim"
    )


def test_it_refuses_outside_the_allowed_domains_and_unverified_addresses():
    rules = ClaimRules(allowed_domains=frozenset({"example.com"}))
    assert decide({"sub": "1", "email": "ana@Example.com"}, rules).allowed is True
    assert decide({"sub": "1", "email": "ana@gmail.com"}, rules).allowed is False
    unverified = {"sub": "1", "email": "ana@example.com", "email_verified": False}
    assert decide(unverified, rules).allowed is False


def test_it_refuses_claims_without_a_subject():
    assert decide({"groups": ["profiler-admins"]}, STAFF) == Decision(
        False, "the provider named no subject (sub)"
    )


def test_it_names_the_account_after_the_preferred_name_else_the_address():
    assert username_base({"sub": "1", "preferred_username": "ana", "email": "a@x.io"}) == "ana"
    assert username_base({"sub": "1", "email": "ana@example.com"}) == "ana@example.com"
    assert username_base({"sub": "00u1ab"}) == "00u1ab"
    assert username_base({"sub": "1", "preferred_username": "Ana Lima/ML"}) == "Ana-Lima-ML"


def test_it_numbers_a_name_already_taken():
    names = username_candidates("ana")
    assert [next(names) for _ in range(3)] == ["ana", "ana-2", "ana-3"]
    long = username_candidates("a" * 150)
    next(long)
    assert next(long) == "a" * 148 + "-2"
