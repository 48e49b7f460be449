from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from profiler_app.accounts import logic, oidc
from profiler_app.accounts.models import ApiToken
from profiler_app.accounts.serializers import (
    ApiTokenSerializer,
    CreateApiTokenSerializer,
    NewApiTokenSerializer,
    SignInOptionsSerializer,
)


class ApiTokenViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The signed-in user's own API tokens: everyone, staff too, sees and revokes only theirs
    here (an administrator revokes anyone's at /admin/)."""

    serializer_class = ApiTokenSerializer
    pagination_class = None
    filter_backends = []

    def get_queryset(self):
        return ApiToken.objects.filter(user_id=self.request.user.pk).order_by("-created", "-id")

    @extend_schema(request=CreateApiTokenSerializer, responses={201: NewApiTokenSerializer})
    def create(self, request):
        data = CreateApiTokenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            token, key = logic.issue_token(request.user, **data.validated_data)
        except logic.NameTaken as taken:
            raise ValidationError({"name": [str(taken)]}) from taken
        token.token = key
        return Response(NewApiTokenSerializer(token).data, status=status.HTTP_201_CREATED)


@extend_schema(responses=SignInOptionsSerializer)
@api_view(["GET"])
@permission_classes([AllowAny])
def sign_in_options_view(request):
    """How people sign in here: the login form always, the team's identity provider when it
    is configured (the login page asks before it draws its buttons)."""
    provider = None
    if oidc.enabled():
        provider = {"name": settings.OIDC_PROVIDER_NAME, "start_url": reverse("oidc-start")}
    return Response(SignInOptionsSerializer({"identity_provider": provider}).data)
