"""Sign-in outcomes, whichever form they came through, feed the one login throttle."""

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver

from profiler_app.core.throttles import forget_login_failures, record_login_failure


@receiver(user_login_failed)
def count_wrong_password(sender, credentials, request=None, **kwargs):
    if request is not None:  # a sign-in over HTTP (not a management command)
        record_login_failure(request, str(credentials.get("username", "")))


@receiver(user_logged_in)
def forget_wrong_passwords(sender, request, user, **kwargs):
    if request is not None:
        forget_login_failures(request, user.get_username())
