"""Forty wrong passwords sent at once for one account have exactly the bound's worth checked,
on the API and the admin form alike: the count is taken before a password is checked, so no
guess slips past a count that the others have not raised yet."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import global_settings
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.test import Client

from tests.accounts.helpers import api_login

pytestmark = pytest.mark.django_db(transaction=True)  # each thread reads the users itself

GUESSES = 40


def send_at_once(sign_in) -> list[int]:
    """Status codes of GUESSES sign-ins, each from its own thread, released together."""
    start = threading.Barrier(GUESSES)

    def guess(i: int) -> int:
        try:
            start.wait()
            return sign_in(Client(), i).status_code
        finally:
            connection.close()  # this thread's own connection, or the test database stays busy

    with ThreadPoolExecutor(GUESSES) as pool:
        return list(pool.map(guess, range(GUESSES)))


@pytest.fixture(autouse=True)
def real_password_hashing(settings):
    """Each check costs what it costs on a server (not the suite's quick test hasher): the
    window between counting a guess and checking it is as wide as in production."""
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS


@pytest.fixture
def checked_passwords():
    """Which passwords Django's authentication checked and found wrong."""
    checked: list[str] = []

    def count(sender, credentials, **kwargs):
        checked.append(credentials["username"])

    user_login_failed.connect(count, weak=False)
    yield checked
    user_login_failed.disconnect(count)


def test_it_checks_ten_of_forty_parallel_wrong_api_passwords(user, checked_passwords):
    codes = send_at_once(lambda client, i: api_login(client, "alice", f"guess-{i}"))
    assert sorted(codes) == [400] * 10 + [429] * 30  # the default: 10 an hour per account
    assert len(checked_passwords) == 10
    refused = api_login(Client(), "alice", "alice-password-1")
    assert refused.status_code == 429


def test_it_checks_ten_of_forty_parallel_wrong_admin_passwords(staff, checked_passwords):
    codes = send_at_once(
        lambda client, i: client.post(
            "/admin/login/?next=/admin/", {"username": "carol", "password": f"guess-{i}"}
        )
    )
    assert sorted(codes) == [200] * 10 + [429] * 30  # 200: the form again, with its error
    assert len(checked_passwords) == 10
