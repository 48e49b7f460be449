from django.contrib import admin

from profiler_app.accounts.models import ApiToken, ProviderIdentity


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


@admin.register(ProviderIdentity)
class ProviderIdentityAdmin(admin.ModelAdmin):
    """Which account each person of the identity provider signs in to. Deleting one makes that
    person's next sign-in create a new account (their old one stays, for an admin to remove)."""

    list_display = ["user", "subject", "issuer", "created"]
    search_fields = ["subject", "user__username"]
    fields = readonly_fields = ("user", "subject", "issuer", "created")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
