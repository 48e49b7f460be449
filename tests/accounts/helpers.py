"""Signing in as the web page does."""

from django.test import Client


def api_login(client: Client, username: str, password: str, **headers: str):
    """Posts the sign-in form to the API as JSON, as the page does; ``headers`` carry what the
    page adds (its CSRF token)."""
    return client.post(
        "/api/auth/login/",
        {"username": username, "password": password},
        content_type="application/json",
        **headers,
    )
