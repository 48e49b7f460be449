from django.apps import AppConfig


class SqlConfig(AppConfig):
    name = "profiler_app.sql"
    label = "sql"

    def ready(self) -> None:
        from profiler_app.profiles.store_products import Product, register
        from profiler_app.sql import logic
        from profiler_app.sql.pure.console import write_totals
        from profiler_app.traces.store_layout import SQL_TOTALS, TOTALS_FILE

        register(SQL_TOTALS, Product(write_totals, logic.has_totals, TOTALS_FILE))
