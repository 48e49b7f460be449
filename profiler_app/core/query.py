"""The one way a view reads its query parameters: through a serializer, so a bad value is a 400
naming the parameter and the OpenAPI schema lists them (``extend_schema(parameters=[S])``)."""

from rest_framework.serializers import Serializer


def query_params(serializer_class: type[Serializer], request) -> dict:
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data
