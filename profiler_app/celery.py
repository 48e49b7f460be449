import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")

app = Celery("profiler_app")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
