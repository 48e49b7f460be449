"""profiler-app. Importing the package starts nothing: the Celery app is created by the worker's
entry (`celery -A profiler_app.celery`) and by Django's start-up (core's AppConfig.ready())."""
