"""The per-series webhook against a local HTTP receiver: what it posts, retries, the record."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from profiler_app.history import logic
from profiler_app.history.models import Series, WebhookDelivery
from tests.history.traces import ALLREDUCE, NCCL
from tests.timeline.jobs import parse_paths
from tests.traces.expected import DATA


@pytest.fixture
def receiver():
    """A local HTTP server answering each POST with the next status of ``answers``."""
    received: list[dict] = []
    answers: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(answers.pop(0) if answers else 200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_port}/hook"  # type: ignore[attr-defined]
    server.received, server.answers = received, answers  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()


def regressed(user, slower_trace, url, django_capture_on_commit_callbacks):
    base = parse_paths(user, "hook-1", [("algo-1", 0, DATA / NCCL)])
    run = parse_paths(user, "hook-2", [("algo-1", 0, slower_trace)])
    logic.assign(base, "hooked")
    Series.objects.filter(name="hooked").update(webhook_url=url)
    logic.assign(run, "hooked")
    logic.judge_job(base.pk)
    with django_capture_on_commit_callbacks(execute=False):  # the task is called below
        logic.judge_job(run.pk)
        logic.judge_job(run.pk)  # judged again: announced once
    return WebhookDelivery.objects.get()


@pytest.mark.django_db
def test_it_retries_with_backoff_and_records_the_delivery(
    user, slower_trace, receiver, django_capture_on_commit_callbacks
):
    delivery = regressed(user, slower_trace, receiver.url, django_capture_on_commit_callbacks)
    receiver.answers.extend([503, 500])
    assert logic.attempt_delivery(delivery.pk) == logic.WEBHOOK_BACKOFF_S
    assert logic.attempt_delivery(delivery.pk) == 2 * logic.WEBHOOK_BACKOFF_S
    assert logic.attempt_delivery(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("delivered", 3, 200)
    assert delivery.delivered_at is not None and delivery.last_error == ""
    assert logic.attempt_delivery(delivery.pk) is None  # delivered: nothing more is sent
    assert len(receiver.received) == 3
    posted = receiver.received[-1]
    assert posted["status"] == "regression" and posted["series"] == "hooked"
    assert (posted["job"]["name"], posted["baseline"]["name"]) == ("hook-2", "hook-1")
    assert posted["text"].startswith(":warning: Regression in series *hooked*: run *hook-2*")
    assert ALLREDUCE in posted["text"]
    assert posted["causes"][0]["name"].startswith(ALLREDUCE)


@pytest.mark.django_db
def test_it_gives_up_on_a_refusal_and_on_an_unreachable_receiver(
    user, slower_trace, receiver, django_capture_on_commit_callbacks
):
    delivery = regressed(user, slower_trace, receiver.url, django_capture_on_commit_callbacks)
    receiver.answers.append(404)
    assert logic.attempt_delivery(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("failed", 1, 404)
    assert delivery.last_error.startswith("HTTP 404")

    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        state="pending", attempts=0, url="http://127.0.0.1:9/unreachable"
    )
    waits = [logic.attempt_delivery(delivery.pk) for _ in range(logic.WEBHOOK_ATTEMPTS)]
    assert waits == [logic.WEBHOOK_BACKOFF_S * 2**i for i in range(logic.WEBHOOK_ATTEMPTS - 1)] + [
        None
    ]
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("failed", 6, None)
    assert "ConnectionError" in delivery.last_error
