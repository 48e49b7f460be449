from django.urls import path
from rest_framework.routers import DefaultRouter

from profiler_app.accounts import oidc, views

router = DefaultRouter(trailing_slash=True)
router.register("tokens", views.ApiTokenViewSet, basename="token")

urlpatterns = [
    path("auth/options/", views.sign_in_options_view, name="sign-in-options"),
    path("auth/oidc/start/", oidc.StartSignIn.as_view(), name="oidc-start"),
    # mozilla-django-oidc reverses this name for the redirect_uri it sends the provider.
    path("auth/oidc/callback/", oidc.FinishSignIn.as_view(), name="oidc_authentication_callback"),
    *router.urls,
]
