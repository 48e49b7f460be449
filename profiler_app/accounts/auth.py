from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework.exceptions import AuthenticationFailed


class TokenAuthentication(KnoxTokenAuthentication):
    """knox's ``Authorization: Token <key>``, which also records when each token was used."""

    def authenticate_credentials(self, token: bytes):
        # knox decodes the key as UTF-8 and looks up its first characters; bytes that are not
        # printable ASCII (no key has them) would make that a 500 instead of a 401.
        try:
            printable = token.decode("ascii").isprintable()
        except UnicodeDecodeError:
            printable = False
        if not printable:
            raise AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(token)

    def validate_user(self, auth_token):
        user, auth_token = super().validate_user(auth_token)
        auth_token.record_use()
        return user, auth_token
