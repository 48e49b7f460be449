from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "profiler_app.timeline"
    label = "timeline"

    def ready(self) -> None:
        from profiler_app.profiles.store_products import Product, register
        from profiler_app.timeline.pure.index import INDEX_DIR_NAME, ensure_index, index_built
        from profiler_app.traces.store_layout import TIMELINE_INDEX

        register(TIMELINE_INDEX, Product(ensure_index, index_built, INDEX_DIR_NAME))
