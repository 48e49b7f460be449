"""The Celery app: the worker's entry (`celery -A profiler_app.celery worker`). Django processes
create it in CoreConfig.ready(), so the tasks they queue reach the configured broker."""

import os

import redis
from celery import Celery
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")

app = Celery("profiler_app")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class OutageSafeChannel(kombu_redis.Channel):
    """A broker outage must not end the worker (the AttributeError of kombu issue #582, still
    raised by kombu 5.7).

    When Redis goes away, the worker closes its connection and detaches the transport from it.
    A channel of that connection is still used afterwards: its close restores the messages in
    flight, and a parse that was running meanwhile is acknowledged through the channel it was
    received on. Both rebuild the channel's Redis pool from the detached transport and raise
    AttributeError, which no error handler expects: the worker exits ("Unrecoverable error").
    Saying what it is, a connection error, lets kombu and Celery handle it like every other
    ("Couldn't ack", and the worker goes on). The part is safe either way: its row says it is
    done, and a message delivered again finds nothing left to claim."""

    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise redis.ConnectionError("this channel's broker connection was closed")
        return super()._connparams(asynchronous)


# Every redis:// (and redis+socket://) connection of this process makes its channels here.
kombu_redis.Transport.Channel = OutageSafeChannel
