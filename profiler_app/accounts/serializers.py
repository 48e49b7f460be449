from rest_framework import serializers

from profiler_app.accounts.models import ApiToken


class ApiTokenSerializer(serializers.ModelSerializer):
    prefix = serializers.CharField(
        read_only=True, help_text="The key's first characters, to recognise it (not secret)."
    )

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created", "last_used", "expiry"]
        read_only_fields = fields


class NewApiTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The key, shown this once: the server keeps only its digest."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class CreateApiTokenSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=ApiToken.NAME_MAX_LENGTH,
        help_text="What the token is for, e.g. the cluster or job that uses it.",
        error_messages={
            "required": "Give the token a name, e.g. the cluster or job that will use it.",
            "blank": "Give the token a name, e.g. the cluster or job that will use it.",
            "max_length": f"A token name has at most {ApiToken.NAME_MAX_LENGTH} characters.",
        },
    )
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=3650,
        required=False,
        allow_null=True,
        help_text="Days until the token stops working; none (the default): it never expires.",
        error_messages={
            "min_value": "A token expires after 1 day at the earliest.",
            "max_value": "A token expires after 3650 days (10 years) at the latest.",
        },
    )


class IdentityProviderSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="What the login page's button names it.")
    start_url = serializers.CharField(help_text="Where the button sends the browser.")


class SignInOptionsSerializer(serializers.Serializer):
    identity_provider = IdentityProviderSerializer(
        allow_null=True, help_text="The team's identity provider; null when it is not set up."
    )
