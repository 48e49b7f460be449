"""One sign-in throttle for the API and the admin form: wrong passwords are counted per account
and, far more loosely, per address, so one person's typos do not lock out colleagues behind the
same NAT while a guessed-at account is refused, the right password too, until Retry-After."""

import pytest
from django.test import Client

from tests.accounts.helpers import api_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings):
    """set(account=…, address=…) → the login rates for this test."""

    def set_rates(account: str = "10/hour", address: str = "100/hour") -> None:
        rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {
                **rates,
                "login_account": account,
                "login_address": address,
            },
        }

    return set_rates


def admin_login(client: Client, username: str, password: str):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_it_refuses_a_guessed_at_account_with_a_429_that_says_when(user, rates):
    rates(account="5/hour")
    guesser = Client()
    assert [api_login(guesser, "alice", f"guess-{i}").status_code for i in range(5)] == [400] * 5
    refused = api_login(guesser, "alice", "alice-password-1")  # the right one, too
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "throttled"
    assert body["detail"].startswith("Too many wrong passwords for this account")
    assert "Try again in 60 minutes." in body["detail"]
    assert 3500 < int(refused["Retry-After"]) <= 3600
    # From another address as well: the count is the account's.
    elsewhere = Client(REMOTE_ADDR="10.0.0.9")
    assert api_login(elsewhere, "alice", "alice-password-1").status_code == 429


def test_a_colleague_signs_in_from_the_same_address_after_someones_typos(
    user, teammate, staff, rates
):
    rates(account="5/hour", address="100/hour")
    office = Client()  # one NAT: every request from 127.0.0.1
    assert [api_login(office, "alice", f"typo-{i}").status_code for i in range(8)] == (
        [400] * 5 + [429] * 3
    )
    colleague = Client()
    assert api_login(colleague, "bob", "bob-password-1").status_code == 200
    assert colleague.get("/api/auth/me/").json()["username"] == "bob"
    assert admin_login(Client(), "carol", "carol-password-1").status_code == 302  # signed in


def test_it_bounds_an_address_far_more_loosely_than_an_account(user, teammate, rates):
    rates(account="3/hour", address="6/hour")
    spray = Client()
    for name in ("dave", "erin"):  # one account's bound each, the address's together
        assert [api_login(spray, name, "wrong").status_code for _ in range(3)] == [400] * 3
    refused = api_login(spray, "bob", "bob-password-1")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("Too many wrong passwords for this address")
    assert api_login(Client(REMOTE_ADDR="10.0.0.9"), "bob", "bob-password-1").status_code == 200


def test_the_admin_form_is_throttled_like_the_api(staff, rates):
    rates(account="5/hour")
    guesser = Client()
    wrong = [admin_login(guesser, "carol", f"guess-{i}") for i in range(5)]
    assert [r.status_code for r in wrong] == [200] * 5  # the form again, with its error
    assert "Please enter the correct username and password" in wrong[0].content.decode()
    refused = admin_login(guesser, "carol", "carol-password-1")
    assert refused.status_code == 429
    assert 3500 < int(refused["Retry-After"]) <= 3600
    assert "Too many wrong passwords for this account" in refused.content.decode()
    # One policy: the admin form's failures count for the API's sign-in, and the reverse.
    assert api_login(Client(), "carol", "carol-password-1").status_code == 429


def test_the_api_counts_for_the_admin_form(staff, rates):
    rates(account="3/hour")
    for i in range(3):
        assert api_login(Client(), "carol", f"guess-{i}").status_code == 400
    assert admin_login(Client(), "carol", "carol-password-1").status_code == 429


def test_forty_wrong_admin_passwords_do_not_get_through(staff):
    guesser = Client()
    codes = [admin_login(guesser, "carol", f"guess-{i}").status_code for i in range(40)]
    assert codes.count(429) == 30  # the default: 10 wrong passwords an hour per account
    assert admin_login(guesser, "carol", "carol-password-1").status_code == 429


def test_signing_in_starts_the_accounts_count_again(user, rates):
    rates(account="3/hour")
    client = Client()
    assert [api_login(client, "alice", "typo").status_code for _ in range(2)] == [400] * 2
    assert api_login(client, "alice", "alice-password-1").status_code == 200
    assert [api_login(Client(), "alice", "typo").status_code for _ in range(3)] == [400] * 3
