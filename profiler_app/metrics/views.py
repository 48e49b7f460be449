import os

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from prometheus_client import REGISTRY as PROCESS_REGISTRY
from rest_framework.throttling import BaseThrottle

from profiler_app.metrics.access import Access, metrics_access, parse_networks
from profiler_app.metrics.collector import AppCollector

REFUSALS = {
    Access.OFF: (403, "Metrics are off: set METRICS_TOKEN or METRICS_ALLOWED_IPS to read them."),
    Access.NO_CREDENTIALS: (401, "Send the metrics token: Authorization: Bearer <METRICS_TOKEN>."),
    Access.REFUSED: (403, "This token or address may not read the metrics."),
}


@require_GET
def metrics_view(request):
    access = metrics_access(
        request.headers.get("Authorization", ""),
        BaseThrottle().get_ident(request),  # REMOTE_ADDR, or as NUM_PROXIES says
        settings.METRICS_TOKEN,
        parse_networks(settings.METRICS_ALLOWED_IPS),
    )
    if access in REFUSALS:
        code, text = REFUSALS[access]
        response = HttpResponse(text, status=code, content_type="text/plain; charset=utf-8")
        if code == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


def _registry() -> CollectorRegistry:
    """Every web process's request metrics (summed from their files when the server runs
    several: PROMETHEUS_MULTIPROC_DIR) and the app's own, read now."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(AppCollector())
    return registry


class _ThisProcess:
    """This one process's metrics (a server of one process, the test client)."""

    def collect(self):
        return PROCESS_REGISTRY.collect()
