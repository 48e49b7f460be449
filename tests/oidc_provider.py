"""A real OpenID Connect provider on loopback (tests/oidc/provider.mjs, node-oidc-provider)
and the settings that point this server at it."""

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from profiler_app.accounts.oidc import discovery_document

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc"
CLIENT_ID = "profiler"
CLIENT_SECRET = "the-client-secret-of-the-tests"
CALLBACK_PATH = "/api/auth/oidc/callback/"


@contextmanager
def running_provider(*server_urls: str) -> Iterator[str]:
    """The provider's issuer URL, for a client that may send people back to these servers."""
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").exists():
        pytest.fail(f"the test provider is not installed: npm --prefix {PROVIDER_DIR} ci")
    redirect_uris = ",".join(url + CALLBACK_PATH for url in server_urls)
    process = subprocess.Popen(
        ["node", "provider.mjs", CLIENT_ID, CLIENT_SECRET, redirect_uris],
        cwd=PROVIDER_DIR,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()  # printed once it listens
        if not line.startswith("issuer "):
            pytest.fail(f"the test provider did not start (exit status {process.wait()})")
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait()


def use_provider(settings, issuer: str, **overrides) -> None:
    """Turns sign-in through the provider on, by discovery, with 'profiler-admins' as staff."""
    discovery_document.cache_clear()
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_ISSUER = issuer
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    settings.OIDC_STAFF_GROUPS = ["profiler-admins"]
    for name, value in overrides.items():
        setattr(settings, name, value)


def sign_in_at_provider(authorization_url: str, login: str) -> str:
    """Fills the provider's login form as ``login`` would; returns where the provider sends
    the browser back to (the callback with its code and state)."""
    browser = requests.Session()
    form = browser.get(authorization_url, timeout=10)
    form.raise_for_status()
    action = re.search(r'<form[^>]*action="([^"]+)"', form.text)
    assert action, form.text
    answer = browser.post(
        requests.compat.urljoin(form.url, action.group(1)),
        data={"prompt": "login", "login": login, "password": "any"},
        allow_redirects=False,
        timeout=10,
    )
    while answer.is_redirect:
        location = requests.compat.urljoin(answer.url, answer.headers["Location"])
        if CALLBACK_PATH in location:
            return location
        answer = browser.get(location, allow_redirects=False, timeout=10)
    raise AssertionError(f"the provider did not send the browser back: {answer.text[:500]}")
