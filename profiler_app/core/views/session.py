"""Health and sign-in."""

from django.contrib.auth import authenticate, login, logout
from django.db import InterfaceError, OperationalError
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import (
    NotAuthenticated,
    Throttled,
    ValidationError,
)
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from profiler_app.core import health
from profiler_app.core.serializers import (
    HealthSerializer,
    LoginSerializer,
    UserSerializer,
)
from profiler_app.core.throttles import begin_login_attempt


@extend_schema(responses={200: HealthSerializer, 503: HealthSerializer})
@api_view(["GET"])
@permission_classes([AllowAny])
def health_view(request):
    """Database and Redis now, the worker count as beat last saw it; staff get the workers
    asked live and the errors spelled out."""
    try:
        detailed = request.user.is_staff
    except (OperationalError, InterfaceError):  # the database is down: that is the report
        detailed = False
    report = health.check(detailed=detailed)
    code = status.HTTP_200_OK if report.ok else status.HTTP_503_SERVICE_UNAVAILABLE
    return Response(report.as_dict(), status=code)


@extend_schema(
    request=LoginSerializer,
    responses={
        200: UserSerializer,
        429: OpenApiResponse(
            description="too many wrong passwords for this account or from this address "
            "(core/throttles.py); Retry-After says when to try again"
        ),
    },
)
@api_view(["POST"])
@permission_classes([AllowAny])
def login_view(request):
    # DRF exempts views from CSRF and checks it only for signed-in sessions; a login form
    # needs the check too, or another site could sign a visitor into an attacker's account.
    SessionAuthentication().enforce_csrf(request)
    data = LoginSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    refused = begin_login_attempt(request, data.validated_data["username"])
    if refused:
        raise Throttled(wait=refused.wait_s, detail=refused.detail)
    user = authenticate(request, **data.validated_data)
    if user is None:
        raise ValidationError({"detail": "Wrong user name or password."}, code="bad_credentials")
    login(request, user)
    return Response(UserSerializer(user).data)


@extend_schema(request=None, responses={204: None})
@api_view(["POST"])
def logout_view(request):
    logout(request)
    return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(responses=UserSerializer)
@api_view(["GET"])
@permission_classes([AllowAny])
@ensure_csrf_cookie
def me_view(request):
    # Anonymous callers get 401 but also the CSRF cookie the login form needs.
    if not request.user.is_authenticated:
        raise NotAuthenticated()
    return Response(UserSerializer(request.user).data)
