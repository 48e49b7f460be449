"""Tokens made before named tokens (DRF's authtoken, stored as plain keys) keep working: each
becomes an ApiToken holding only its digest, and the table of plain keys is dropped. knox finds
a key by its first TOKEN_KEY_LENGTH characters and compares the digest of the whole key, so a
40-character DRF key authenticates like a knox one."""

from django.db import migrations
from knox.crypto import hash_token
from knox.settings import CONSTANTS

LEGACY_TABLE = "authtoken_token"
LEGACY_NAME = "Token from before named tokens"


def import_drf_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("accounts", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {LEGACY_TABLE}")
        for key, user_id, created in cursor.fetchall():
            token = ApiToken(
                user_id=user_id,
                name=LEGACY_NAME,
                token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
                digest=hash_token(key),
            )
            token.save()
            ApiToken.objects.filter(pk=token.pk).update(created=created)  # not auto_now_add's
        cursor.execute(f"DROP TABLE {LEGACY_TABLE}")
        # The authtoken app is gone with its table: a later migrate must not believe otherwise.
        cursor.execute("DELETE FROM django_migrations WHERE app = 'authtoken'")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_api_tokens")]

    # Backwards leaves the tokens as they are: the plain keys are not kept anywhere.
    operations = [migrations.RunPython(import_drf_tokens, migrations.RunPython.noop)]
