"""A right password, whichever form it came through, starts the account's sign-in count again
(a wrong one was counted before it was checked: core/throttles.py)."""

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from profiler_app.core.throttles import forget_login_failures


@receiver(user_logged_in)
def forget_wrong_passwords(sender, request, user, **kwargs):
    if request is not None:
        forget_login_failures(request, user.get_username())
