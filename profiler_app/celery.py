"""The Celery app: the worker's entry (`celery -A profiler_app.celery worker`). Django processes
create it in CoreConfig.ready(), so the tasks they queue reach the configured broker."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")

app = Celery("profiler_app")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
