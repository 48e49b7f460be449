from django.contrib import admin
from django.http import HttpResponse

from profiler_app.accounts.models import ApiToken
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


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Administrators see everyone's tokens and revoke them (delete); a token is made by its
    owner on the API tokens page, or with `manage.py create_token`."""

    list_display = ["name", "user", "prefix", "created", "last_used", "expiry"]
    search_fields = ["name", "token_key", "user__username"]
    fields = readonly_fields = ("name", "user", "prefix", "created", "last_used", "expiry")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
