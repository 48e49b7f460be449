"""Who may do what: every signed-in user reads every job; only its owner or staff change it."""

from collections.abc import Mapping

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from profiler_app.core.models import TrainingJob

NOT_YOURS = "Only the job's owner or a staff member can change it."


def job_of(obj) -> TrainingJob:
    """The job an object belongs to: the job itself, or the job of a part."""
    return obj if isinstance(obj, TrainingJob) else obj.job


def require_can_change(user, job: TrainingJob) -> None:
    """For views without an object lookup (function views): 403 unless ``user`` may change it."""
    if not job.can_change(user):
        raise PermissionDenied(NOT_YOURS, code="not_owner")


class IsOwnerOrStaffOrReadOnly(BasePermission):
    """Reading: anyone signed in. Writing a job, its parts or its insights: the job's owner or
    staff (``TrainingJob.can_change``). Creating a job needs no owner: the caller becomes it."""

    message = NOT_YOURS
    code = "not_owner"

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj):
        return request.method in SAFE_METHODS or job_of(obj).can_change(request.user)


def only_window(data) -> bool:
    """Whether a request body changes nothing but the caller's window."""
    return isinstance(data, Mapping) and set(data) == {"window"}


class JobPermission(IsOwnerOrStaffOrReadOnly):
    """As ``IsOwnerOrStaffOrReadOnly``, and anyone signed in chooses their own window of a job
    (a PATCH of ``window`` alone; ``core.logic.choose_window``)."""

    def has_object_permission(self, request, view, obj):
        if request.method == "PATCH" and only_window(request.data):
            return True
        return super().has_object_permission(request, view, obj)


class IsStaffOrReadOnly(BasePermission):
    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or request.user.is_staff


class IsStaff(BasePermission):
    message = "Only staff members can see this."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)
