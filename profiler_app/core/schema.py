"""The OpenAPI schema lists the errors each operation can answer with, not only its success.

Every API error carries DRF's ``detail`` and ``code`` (``core.errors``), except a 400 for
invalid fields, which names each field. Any operation can answer 400 (a query parameter with
a NUL character), 401 (a wrong token) and 403; one with parameters 404 (an unknown id, a page
past the end); one with a body 415; one with a throttle 429.
"""

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

INVALID_FIELDS = {
    "type": "object",
    "description": "The invalid fields, each with its messages; or detail and code.",
    "additionalProperties": {},
}


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        errors = {"400": INVALID_FIELDS, "401": ErrorSerializer, "403": ErrorSerializer}
        if self._get_parameters():  # an id in the path or query, or a page number
            errors["404"] = ErrorSerializer
        if self.method in ("POST", "PUT", "PATCH"):  # a body its parsers cannot read
            errors["415"] = ErrorSerializer
        if self.view.get_throttles():
            errors["429"] = ErrorSerializer
        # Declared codes with no body (e.g. 409: None) get the error body too.
        for code, body in responses.items():
            if int(code) >= 400 and "content" not in body:
                errors.setdefault(code, ErrorSerializer)
        for code, body in errors.items():
            if code not in responses or "content" not in responses[code]:
                responses[code] = self._get_response_for_code(body, code, direction=direction)
        return dict(sorted(responses.items()))
