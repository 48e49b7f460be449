import time

from profiler_app.core import logic

# Collectors identify themselves so their uploads do not keep an idle server awake.
COLLECTOR_HEADER = "X-Profiler-Client"
WRITE_EVERY_SECONDS = 30.0


class UserActivityMiddleware:
    """Records when a person last used the server (the idle auto-shutdown reads it)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.last_write = 0.0

    def __call__(self, request):
        response = self.get_response(request)
        if self._is_person(request) and time.monotonic() - self.last_write > WRITE_EVERY_SECONDS:
            logic.record_user_activity()
            self.last_write = time.monotonic()
        return response

    @staticmethod
    def _is_person(request) -> bool:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return False
        if request.headers.get(COLLECTOR_HEADER) == "collector":
            return False
        return not request.path.startswith("/api/health/")
