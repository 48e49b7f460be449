from django.contrib import admin

from profiler_app.core import logic
from profiler_app.core.models import AppSettings, LoadedProfile, Node, ProfilePart, TrainingJob


@admin.register(TrainingJob)
class TrainingJobAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "created_at", "owner", "instance_type", "instance_count"]
    list_filter = ["status"]
    search_fields = ["name"]

    # Deleting here (one job, or the bulk action) is the API's deletion: files go too.
    def delete_model(self, request, obj):
        logic.delete_job(obj, request.user)

    def delete_queryset(self, request, queryset):
        for job in queryset:
            logic.delete_job(job, request.user)


@admin.register(ProfilePart)
class ProfilePartAdmin(admin.ModelAdmin):
    list_display = ["original_name", "job", "node", "rank", "kind", "state", "size_bytes"]
    list_filter = ["state", "kind"]

    def delete_model(self, request, obj):
        logic.delete_part(obj)

    def delete_queryset(self, request, queryset):
        for part in queryset:
            logic.delete_part(part)


admin.site.register(Node)
admin.site.register(LoadedProfile)
admin.site.register(AppSettings)
