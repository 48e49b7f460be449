"""profiler-app. Importing the package starts nothing: the Celery app is created by the worker's
entry (`celery -A profiler_app.celery`) and by Django's start-up (core's AppConfig.ready())."""

import os

# Arrow allocates through glibc, not its own allocator (mimalloc), which keeps what a Parquet
# read frees out of reach of ``lib.memory.hand_back_freed``: a 2.8M-event part's parse peaked at
# 551 MB, and at under 500 MB this way. Read once, when Arrow first allocates.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
