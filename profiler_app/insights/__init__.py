"""Insights of a job: the profiler rules' results, the downloadable report and the trace
analyses, computed by a Celery task after ingest and stored per job. The rules, analyses and
report renderer themselves are pure code, in ``insights.pure``."""
