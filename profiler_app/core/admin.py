from django.contrib import admin

from profiler_app.core.models import AppSettings, LoadedProfile, Node, ProfilePart, TrainingJob


@admin.register(TrainingJob)
class TrainingJobAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "created_at", "owner", "instance_type", "instance_count"]
    list_filter = ["status"]
    search_fields = ["name"]


@admin.register(ProfilePart)
class ProfilePartAdmin(admin.ModelAdmin):
    list_display = ["original_name", "job", "node", "rank", "kind", "state", "size_bytes"]
    list_filter = ["state", "kind"]


admin.site.register(Node)
admin.site.register(LoadedProfile)
admin.site.register(AppSettings)
