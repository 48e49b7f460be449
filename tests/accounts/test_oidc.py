"""Sign-in through the team's identity provider, against a real OpenID Connect provider on
loopback: accounts made on the first sign-in, staff from the provider's groups at every
sign-in, local accounts untouched, and nothing of it while OIDC is not configured."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from profiler_app.accounts.models import ProviderIdentity
from tests.accounts.helpers import api_login
from tests.oidc_provider import running_provider, sign_in_at_provider, use_provider

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def issuer():
    with running_provider("http://testserver") as url:
        yield url


@pytest.fixture
def provider(settings, issuer):
    use_provider(settings, issuer)
    return issuer


def sign_in(client: Client, login: str, next_path: str = "/jobs") -> str:
    """The whole flow as a browser follows it; returns where the server sends it at the end."""
    start = client.get("/api/auth/oidc/start/", {"next": next_path})
    assert start.status_code == 302
    back = urlsplit(sign_in_at_provider(start["Location"], login))
    finish = client.get(f"{back.path}?{back.query}")
    assert finish.status_code == 302
    return finish["Location"]


def me(client: Client):
    answer = client.get("/api/auth/me/")
    return answer.json() if answer.status_code == 200 else answer.status_code


def test_it_creates_a_staff_account_for_a_member_of_a_staff_group(provider):
    client = Client()
    assert sign_in(client, "alice") == "/jobs"
    user = me(client)
    assert {key: user[key] for key in ("username", "is_staff")} == {
        "username": "alice",
        "is_staff": True,
    }
    identity = ProviderIdentity.objects.get()
    assert (identity.issuer, identity.subject, identity.user.email) == (
        provider,
        "alice",
        "alice@example.com",
    )
    assert not identity.user.has_usable_password()


def test_it_signs_in_someone_outside_the_staff_groups_as_not_staff(provider):
    client = Client()
    sign_in(client, "bob")
    assert me(client)["is_staff"] is False


def test_it_follows_the_groups_at_every_sign_in(provider, settings):
    sign_in(Client(), "alice")
    settings.OIDC_STAFF_GROUPS = ["another-group"]
    client = Client()
    sign_in(client, "alice")
    assert (me(client)["username"], me(client)["is_staff"]) == ("alice", False)
    assert ProviderIdentity.objects.count() == 1


def test_it_leaves_the_staff_flag_alone_without_staff_groups(provider, settings, django_user_model):
    settings.OIDC_STAFF_GROUPS = []
    sign_in(Client(), "bob")
    django_user_model.objects.filter(username="bob").update(is_staff=True)  # an admin's choice
    client = Client()
    sign_in(client, "bob")
    assert me(client)["is_staff"] is True


def test_it_never_takes_over_a_local_account_of_the_same_name(provider, user):
    client = Client()
    sign_in(client, "alice")
    assert me(client)["username"] == "alice-2"
    local = Client()
    answer = api_login(local, "alice", "alice-password-1")
    assert (answer.status_code, answer.json()["id"]) == (200, user.pk)


def test_it_refuses_someone_outside_the_allowed_groups(provider, settings, django_user_model):
    settings.OIDC_ALLOWED_GROUPS = ["profiler-admins"]
    client = Client()
    assert sign_in(client, "bob") == "/login?sso=failed"
    assert me(client) == 401
    assert not django_user_model.objects.filter(username="bob").exists()
    assert sign_in(client, "alice") == "/jobs"


def test_it_signs_in_with_endpoints_set_one_by_one(provider, settings):
    settings.OIDC_ISSUER = ""
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{provider}/auth"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{provider}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{provider}/me"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{provider}/jwks"
    client = Client()
    sign_in(client, "bob")
    assert me(client)["username"] == "bob"


def test_it_sends_people_back_to_the_login_page_when_the_provider_is_down(settings):
    use_provider(settings, "http://127.0.0.1:9")  # nothing listens on the discard port
    answer = Client().get("/api/auth/oidc/start/")
    assert (answer.status_code, answer["Location"]) == (302, "/login?sso=failed")


def test_it_offers_the_provider_on_the_login_page_when_configured(provider):
    answer = Client().get("/api/auth/options/")
    assert answer.json() == {
        "identity_provider": {"name": "Test IdP", "start_url": "/api/auth/oidc/start/"}
    }


def test_it_offers_only_the_login_form_when_not_configured(user):
    client = Client()
    assert client.get("/api/auth/options/").json() == {"identity_provider": None}
    assert client.get("/api/auth/oidc/start/").status_code == 404
    assert client.get("/api/auth/oidc/callback/?code=x&state=y").status_code == 404
    answer = api_login(client, "alice", "alice-password-1")
    assert answer.status_code == 200
    assert me(client)["username"] == "alice"


def test_the_admin_lists_who_signs_in_to_which_account(provider, admin_client):
    sign_in(Client(), "bob")
    page = admin_client.get("/admin/accounts/provideridentity/")
    assert page.status_code == 200
    assert "bob" in page.content.decode()
