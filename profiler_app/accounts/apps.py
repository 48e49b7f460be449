from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "profiler_app.accounts"
    label = "accounts"
    verbose_name = "API tokens"

    def ready(self) -> None:
        # Registers the token header with drf-spectacular.
        import profiler_app.accounts.schema  # noqa: F401
