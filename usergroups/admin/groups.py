"""User groups: browse, edit with the API's rules, reveal and rotate the token."""

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList

from .. import crypto
from ..forms import SchemaMappingForm, SchemaMappingFormSet, UserGroupAdminForm
from ..models import SchemaMapping, UserGroup
from .common import MEDIA, OfferedLookupsOnly, secret_html, subquery_count, when
from .rotation import TokenRotationMixin

VIEW_TOKEN = "usergroups.view_token"


class SchemaMappingInline(admin.TabularInline):
    model = SchemaMapping
    form = SchemaMappingForm
    formset = SchemaMappingFormSet
    verbose_name = "schema mapping"
    verbose_name_plural = "Mapping: schema id → data source id"

    def get_extra(self, request, obj=None, **kwargs):
        return 0 if obj is not None and obj.mappings.exists() else 1

    # Mappings are part of the group: whoever may edit the group may edit them.
    def _may_edit(self, request, obj) -> bool:
        action = "add" if obj is None else "change"
        return request.user.has_perm(f"usergroups.{action}_usergroup")

    def has_add_permission(self, request, obj=None):
        return self._may_edit(request, obj)

    def has_change_permission(self, request, obj=None):
        return self._may_edit(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._may_edit(request, obj)

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("usergroups.view_usergroup") or self._may_edit(request, obj)


class UserGroupChangeList(ChangeList):
    def get_queryset(self, request, *args, **kwargs):
        # The list never shows properties (up to 64 KiB each) or anything about the token.
        return (
            super()
            .get_queryset(request, *args, **kwargs)
            .defer("properties", "token_sealed", "previous_token_digest")
        )


@admin.register(UserGroup)
class UserGroupAdmin(OfferedLookupsOnly, TokenRotationMixin, admin.ModelAdmin):
    form = UserGroupAdminForm
    inlines = [SchemaMappingInline]
    change_form_template = "usergroups/admin/usergroup/change_form.html"
    list_display = [
        "name",
        "provided_id",
        "workspace",
        "team_id",
        "mapping_count",
        "created",
        "rotated",
    ]
    list_display_links = ["name", "provided_id"]
    list_filter = ["workspace", "created_at", "token_rotated_at"]
    search_fields = ["name", "provided_id", "team_id__exact"]
    search_help_text = "Search by name, provided id or team id."
    ordering = ["-created_at", "-team_id"]
    list_select_related = ["workspace"]
    actions = ["rotate_tokens"]
    empty_value_display = "—"

    @property
    def media(self):
        return super().media + MEDIA

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(mapping_count=subquery_count(SchemaMapping.objects.all(), "group"))
        )

    def get_changelist(self, request, **kwargs):
        return UserGroupChangeList

    def get_fieldsets(self, request, obj=None):
        group = ["workspace", "provided_id", "name"]
        properties = (
            "Properties",
            {
                "fields": ["properties"],
                "description": "Free-form data about the group, returned by the API as it "
                "is stored.",
            },
        )
        if obj is None:
            return [(None, {"fields": group}), properties]
        token = "current_token" if request.user.has_perm(VIEW_TOKEN) else "hidden_token"
        return [
            (None, {"fields": [*group, "team_id"]}),
            properties,
            (
                "Token",
                {
                    "fields": [token, "rotated"],
                    "description": "The secret an embedding page uses to show this group's "
                    "dashboards. Rotating it makes the current one stop working at once.",
                },
            ),
            ("Record", {"fields": ["created", "updated"]}),
        ]

    def get_readonly_fields(self, request, obj=None):
        fields = ["team_id", "created", "updated", "rotated"]
        fields += ["current_token", "hidden_token"]
        if obj is not None:
            fields.append("workspace")  # A group never moves to another workspace.
        return fields

    @admin.display(description="Mappings", ordering="mapping_count")
    def mapping_count(self, obj):
        return obj.mapping_count

    @admin.display(description="Created", ordering="created_at")
    def created(self, obj):
        return when(obj.created_at)

    @admin.display(description="Updated", ordering="updated_at")
    def updated(self, obj):
        return when(obj.updated_at)

    @admin.display(description="Token rotated", ordering="token_rotated_at")
    def rotated(self, obj):
        return when(obj.token_rotated_at, empty="Never")

    @admin.display(description="Current token")
    def current_token(self, obj):
        token = obj.token
        if token is None:
            return (
                "Cannot be shown: none of the configured secrets opens it. "
                "Rotate it to issue a new one."
            )
        return secret_html(token, element_id="current-token", label="Current token")

    @admin.display(description="Current token")
    def hidden_token(self, obj):
        return "Hidden. Seeing it needs the permission “Can view user group tokens”."

    def save_model(self, request, obj, form, change):
        if not change:
            obj.set_token(crypto.new_group_token())
            obj.save()
            return
        # Only what the form edits: a full save could write back a token that an API
        # call rotated while the form was being saved.
        fields = [name for name in form.fields if name in {"provided_id", "name", "properties"}]
        obj.save(update_fields=[*fields, "updated_at"])
