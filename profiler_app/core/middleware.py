import time

from django.http import JsonResponse

from profiler_app.core import logic

# Collectors identify themselves so their uploads do not keep an idle server awake; so does an
# open page's watch of its job (deleted? failed?), which a person does not send.
COLLECTOR_HEADER = "X-Profiler-Client"
NOT_A_PERSON = ("collector", "watch")
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
        if request.headers.get(COLLECTOR_HEADER) in NOT_A_PERSON:
            return False
        return not request.path.startswith("/api/health/")


class RefuseNulInQueryMiddleware:
    """A NUL character in a query parameter is a 400: Postgres refuses it in any text, so a
    filter or search that passed it on would fail with a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return JsonResponse(
                    {
                        "detail": f"The query parameter {name!r} contains a NUL character.",
                        "code": "invalid",
                    },
                    status=400,
                )
        return self.get_response(request)
