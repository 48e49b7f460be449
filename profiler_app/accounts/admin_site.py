"""The admin site itself, apart from admin.py: Django imports it while it makes ``admin.site``,
and a module that registered models at import would register them on a site that is then
thrown away (the admin listed no API tokens while the class lived in admin.py)."""

from django.contrib import admin
from django.http import HttpResponse

from profiler_app.core.throttles import begin_login_attempt


class ThrottledAdminSite(admin.AdminSite):
    """The admin, whose sign-in form refuses what the API's sign-in refuses (too many wrong
    passwords for the account or from the address) with the same 429 and Retry-After."""

    def login(self, request, extra_context=None):
        if request.method == "POST":
            refused = begin_login_attempt(request, request.POST.get("username", ""))
            if refused:
                response = HttpResponse(
                    refused.detail, status=429, content_type="text/plain; charset=utf-8"
                )
                response["Retry-After"] = str(refused.wait_s)
                return response
        return super().login(request, extra_context)
