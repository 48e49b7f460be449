from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from profiler_app.core.frontend import index
from profiler_app.metrics.views import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("profiler_app.profiles.urls")),
    path("api/", include("profiler_app.dashboard.urls")),
    path("api/", include("profiler_app.timeline.urls")),
    path("api/", include("profiler_app.insights.urls")),
    path("api/", include("profiler_app.cluster.urls")),
    path("api/", include("profiler_app.memory.urls")),
    path("api/", include("profiler_app.sql.urls")),
    path("api/", include("profiler_app.accounts.urls")),
    path("api/", include("profiler_app.calltree.urls")),
    path("api/", include("profiler_app.history.urls")),
    path("api/", include("profiler_app.core.urls")),
    path("metrics", metrics_view, name="metrics"),
    # Every other path belongs to the single-page app's router.
    re_path(r"^(?!api/|admin/|static/).*$", index, name="frontend"),
]

handler404 = "profiler_app.core.errors.not_found"
