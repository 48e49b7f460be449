from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    name = "profiler_app.accounts"
    label = "accounts"
    verbose_name = "API tokens"

    def ready(self) -> None:
        # The login throttle's counts (receivers), whichever form a password came through;
        # the token header in drf-spectacular's schema (schema).
        import profiler_app.accounts.receivers  # noqa: F401
        import profiler_app.accounts.schema  # noqa: F401


class AdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin, whose sign-in form follows the API's sign-in throttle."""

    default = False  # named in INSTALLED_APPS; AccountsConfig is this module's default
    default_site = "profiler_app.accounts.admin_site.ThrottledAdminSite"
