"""GET /metrics: the service in Prometheus's text format, for whoever runs it (docs/metrics.md).

Request counts and latencies come from django-prometheus's middleware; the ingest backlog, parse
times, failures, the insights queue and the services' health are read from the database and
Redis at each scrape, so every web process answers the same."""
