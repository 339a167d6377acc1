"""User groups: browse, edit with the API's rules, reveal and rotate the token."""

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.forms import BaseFormSet, Media
from django.http import Http404, HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import (
    MEDIA,
    ActsAsStaff,
    OfferedLookupsOnly,
    readable_json,
    secret_html,
    subquery_count,
    when,
)
from usergroups.admin.embed_revocation import EmbedRevocationMixin
from usergroups.admin.forms import SchemaMappingForm, SchemaMappingFormSet, UserGroupAdminForm
from usergroups.admin.rotation import TokenRotationMixin
from usergroups.models import SchemaMapping, UserGroup
from usergroups.records import GroupRecord
from usergroups.services import groups

VIEW_TOKEN = "usergroups.view_token"


if TYPE_CHECKING:
    MappingInlineBase = admin.TabularInline[SchemaMapping, UserGroup]
    GroupAdminBase = admin.ModelAdmin[UserGroup]
else:
    MappingInlineBase, GroupAdminBase = admin.TabularInline, admin.ModelAdmin


class SchemaMappingInline(MappingInlineBase):
    model = SchemaMapping
    form = SchemaMappingForm
    formset = SchemaMappingFormSet
    verbose_name = _("schema mapping")
    verbose_name_plural = _("Mapping: schema id → data source id")

    def get_extra(self, request: HttpRequest, obj: UserGroup | None = None, **kwargs: Any) -> int:
        return 0 if obj is not None and obj.mappings.exists() else 1

    # Mappings are part of the group: whoever may edit the group may edit them.
    def _may_edit(self, request: HttpRequest, obj: UserGroup | None) -> bool:
        action = "add" if obj is None else "change"
        return request.user.has_perm(f"usergroups.{action}_usergroup")

    def has_add_permission(self, request: HttpRequest, obj: UserGroup | None = None) -> bool:
        return self._may_edit(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: UserGroup | None = None) -> bool:
        return self._may_edit(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: UserGroup | None = None) -> bool:
        return self._may_edit(request, obj)

    def has_view_permission(self, request: HttpRequest, obj: UserGroup | None = None) -> bool:
        return request.user.has_perm("usergroups.view_usergroup") or self._may_edit(request, obj)


class UserGroupChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, *args: Any, **kwargs: Any) -> QuerySet[Any]:
        # The list never shows properties (up to 64 KiB each) or anything about the token.
        return (
            super()
            .get_queryset(request, *args, **kwargs)
            .defer("properties", "token_sealed", "previous_token_digest")
        )


@admin.register(UserGroup)
class UserGroupAdmin(
    ActsAsStaff, OfferedLookupsOnly, TokenRotationMixin, EmbedRevocationMixin, GroupAdminBase
):
    form = UserGroupAdminForm
    inlines = [SchemaMappingInline]
    change_form_template = "usergroups/admin/usergroup/change_form.html"
    list_display = [
        "name",
        "provided_id",
        "workspace",
        "team_id",
        "mapping_count",
        "children_count",
        "created",
        "rotated",
    ]
    list_display_links = ["name", "provided_id"]
    list_filter = ["workspace", "created_at", "token_rotated_at"]
    search_fields = ["name", "provided_id", "team_id__exact"]
    search_help_text = _("Search by name, provided id or team id.")
    # Newest first; the changelist breaks ties by "-pk" (team_id) itself, without marking
    # a second sorted column whose sort controls would widen the list.
    ordering = ["-created_at"]
    list_select_related = ["workspace"]
    # Searched with search_fields; the form keeps the parent in the group's workspace.
    autocomplete_fields = ["parent"]
    actions = ["rotate_tokens", "revoke_embed_tokens"]
    empty_value_display = "—"

    @property
    def media(self) -> Media:
        return super().media + MEDIA

    def get_queryset(self, request: HttpRequest) -> QuerySet[UserGroup]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                mapping_count=subquery_count(SchemaMapping.objects.all(), "group"),
                children_count=subquery_count(UserGroup.objects.all(), "parent"),
            )
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return UserGroupChangeList

    def get_fieldsets(self, request: HttpRequest, obj: UserGroup | None = None) -> Any:
        group = ["workspace", "provided_id", "name", "parent"]
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
                "Inherited",
                {
                    "fields": ["computed_properties", "computed_mapping"],
                    "description": "What the API and the embed side use: the ancestors' "
                    "properties and mappings merged from the root down, then this group's "
                    "own (a key set lower wins).",
                },
            ),
            (
                "Token",
                {
                    "fields": [token, "rotated"],
                    "description": "The secret an embedding page uses to show this group's "
                    "dashboards. Rotating it makes the current one stop working at once.",
                },
            ),
            (
                "Embed tokens",
                {
                    "fields": ["embed_tokens_revoked"],
                    "description": "Short-lived tokens minted for the browser "
                    "(POST /api/user/embed-token). Revoking them refuses every one minted "
                    "so far, at once; rotating the token or deleting the group does too.",
                },
            ),
            ("Record", {"fields": ["created", "updated"]}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: UserGroup | None = None) -> list[str]:
        fields = ["team_id", "created", "updated", "rotated", "embed_tokens_revoked"]
        fields += ["computed_properties", "computed_mapping"]
        fields += ["current_token", "hidden_token"]
        if obj is not None:
            fields.append("workspace")  # A group never moves to another workspace.
        return fields

    @admin.display(description=_("Mappings"), ordering="mapping_count")
    def mapping_count(self, obj: Any) -> int:
        return obj.mapping_count  # annotated by get_queryset

    @admin.display(description=_("Children"), ordering="children_count")
    def children_count(self, obj: Any) -> int:
        return obj.children_count  # annotated by get_queryset

    def group_record(self, obj: UserGroup) -> GroupRecord | None:
        """The group as the API reads it, once per page."""
        cache = obj.__dict__
        if "_api_record" not in cache:
            cache["_api_record"] = groups.find_group(obj.workspace_id, obj.provided_id)
        record: GroupRecord | None = cache["_api_record"]
        return record

    @admin.display(description=_("Computed properties"))
    def computed_properties(self, obj: UserGroup) -> str:
        record = self.group_record(obj)
        return "—" if record is None else _json_html(record.computed_properties)

    @admin.display(description=_("Computed mapping"))
    def computed_mapping(self, obj: UserGroup) -> str:
        record = self.group_record(obj)
        return "—" if record is None else _json_html(record.computed_mapping)

    @admin.display(description=_("Created"), ordering="created_at")
    def created(self, obj: UserGroup) -> str:
        return when(obj.created_at)

    @admin.display(description=_("Updated"), ordering="updated_at")
    def updated(self, obj: UserGroup) -> str:
        return when(obj.updated_at)

    @admin.display(description=_("Token rotated"), ordering="token_rotated_at")
    def rotated(self, obj: UserGroup) -> str:
        return when(obj.token_rotated_at, empty="Never")

    @admin.display(description=_("Embed tokens last revoked"))
    def embed_tokens_revoked(self, obj: UserGroup) -> str:
        return when(obj.embed_tokens_revoked_at, empty=str(_("Never")))

    @admin.display(description=_("Current token"))
    def current_token(self, obj: UserGroup) -> str | SafeString:
        token = obj.token
        if token is None:
            return str(
                _(
                    "Cannot be shown: none of the configured secrets opens it. "
                    "Rotate it to issue a new one."
                )
            )
        return secret_html(token, element_id="current-token", label=str(_("Current token")))

    @admin.display(description=_("Current token"))
    def hidden_token(self, obj: UserGroup) -> str:
        return str(_("Hidden. Seeing it needs the permission “Can view user group tokens”."))

    # Writes go through usergroups.services.groups, as the API's do: the group and its
    # mapping in one transaction, one signal, one log line. The group is written in
    # save_related, where the mapping inline's edits are known; save_model writes nothing.

    def save_model(self, request: HttpRequest, obj: UserGroup, form: Any, change: Any) -> None:
        pass

    def save_related(
        self, request: HttpRequest, form: Any, formsets: list[BaseFormSet], change: Any
    ) -> None:
        group = form.instance
        mappings = next((fs for fs in formsets if isinstance(fs, SchemaMappingFormSet)), None)
        if change:
            # Only what the form edits, on the row as locked now: never a token that an
            # API call rotated while the form was being saved.
            edited = ("provided_id", "name", "properties")
            changes = {name: getattr(group, name) for name in edited if name in form.fields}
            if "parent" in form.changed_data:
                parent = form.cleaned_data.get("parent")
                changes["parent_user_group_id"] = None if parent is None else parent.provided_id
            if mappings is not None and mappings.has_changed():
                changes["mapping"] = mappings.mapping_after(group.mappings.all())
            elif mappings is not None:
                mappings.save(commit=False)  # writes nothing: sets what the history reads
            if groups.update_group_by_team_id(group.pk, changes) is None:
                raise Http404(_("The user group was deleted meanwhile."))
        else:
            mapping = {} if mappings is None else mappings.mapping_after([])
            parent = form.cleaned_data.get("parent")
            record = groups.create_group(
                group.workspace_id,
                group.provided_id,
                group.name,
                mapping,
                group.properties,
                None if parent is None else parent.provided_id,
            )
            group.pk = record.team_id  # the admin's history and redirect name it so
        for formset in formsets:
            if formset is not mappings:
                self.save_formset(request, form, formset, change=change)

    # Django's confirmation page lists the subtree (the parent's foreign key cascades):
    # confirming deletes it all, through the service, in one transaction per group named.

    def delete_model(self, request: HttpRequest, obj: UserGroup) -> None:
        groups.delete_group_by_team_id(obj.pk, cascade=True)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for team_id in queryset.values_list("pk", flat=True):
            # A group already gone with an ancestor's subtree is skipped (none found).
            groups.delete_group_by_team_id(team_id, cascade=True)


def _json_html(value: Any) -> SafeString:
    return format_html("<pre>{}</pre>", readable_json(value))
