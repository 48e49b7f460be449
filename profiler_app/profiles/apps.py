from django.apps import AppConfig


class ProfilesConfig(AppConfig):
    """The read model of a profile: the rows the ingest writes and every page reads, the figures
    defined over them, and the endpoints that serve them (summary, kernels, glossary)."""

    name = "profiler_app.profiles"
    label = "profiles"
