from rest_framework.routers import DefaultRouter

from profiler_app.accounts import views

router = DefaultRouter(trailing_slash=True)
router.register("tokens", views.ApiTokenViewSet, basename="token")

urlpatterns = router.urls
