"""Real headless Chromium against pytest-django's live server, driven by Python Playwright."""

import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, expect, sync_playwright

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make between
# browser steps are still ordinary blocking calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(settings.BASE_DIR) / "test-artifacts" / "screenshots"
VIEWPORT = {"width": 1366, "height": 800}  # a common laptop screen

expect.set_options(timeout=10_000)
# What a condition a page draws (not a locator: pixels of a canvas, say) may take to come true.
WAIT_UNTIL_S = 30


def wait_until(condition, what: str) -> None:
    """Polls ``condition`` until it holds: a loaded machine draws later, never wrongly."""
    deadline = time.monotonic() + WAIT_UNTIL_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def browser() -> Browser:
    index = Path(settings.FRONTEND_DIST) / "index.html"
    if not index.exists():
        pytest.fail(
            f"{index} is missing: build the frontend first (npm --prefix frontend run build)"
        )
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def new_tab(browser: Browser):
    """new_tab() → a page in a fresh browser context (its own cookies, so its own session)."""
    contexts = []

    def make() -> Page:
        context = browser.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC")
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def tab(new_tab) -> Page:
    return new_tab()


def sign_in(page: Page, base_url: str, username: str, password: str, path: str = "/") -> None:
    page.goto(base_url + path)
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(username)


def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
