from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from profiler_app.accounts import logic
from profiler_app.accounts.serializers import CreateApiTokenSerializer


class Command(BaseCommand):
    help = (
        "Create a named API token for a user and print it (for scripts; people create theirs "
        "on the API tokens page). The key is shown this once."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("name", help="what the token is for, e.g. the cluster that uses it")
        parser.add_argument("--expires-in-days", type=int, default=None)

    def handle(self, *args, username, name, expires_in_days, **options):
        User = get_user_model()
        try:
            user = User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"There is no user {username!r}.") from None
        data = CreateApiTokenSerializer(data={"name": name, "expires_in_days": expires_in_days})
        if not data.is_valid():
            raise CommandError(" ".join(m for ms in data.errors.values() for m in ms))
        try:
            _token, key = logic.issue_token(user, **data.validated_data)
        except logic.NameTaken as taken:
            raise CommandError(str(taken)) from None
        self.stdout.write(key)
