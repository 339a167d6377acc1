"""Audit events: read-only for everyone, superusers too (CONTRACT section 8).

Events are written only by :func:`usergroups.services.audit.record`, in the transaction
of the change they record; the admin lists, filters and shows them, and nothing else.
A workspace that has events cannot be deleted here either (its events would go with it):
``prune_audit`` retires them by age.
"""

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import OfferedLookupsOnly, readable_json
from usergroups.audit_context import ACTOR_TYPES
from usergroups.models import AuditEvent
from usergroups.services import audit

if TYPE_CHECKING:
    AuditEventAdminBase = admin.ModelAdmin[AuditEvent]
else:
    AuditEventAdminBase = admin.ModelAdmin


class ActionFilter(admin.SimpleListFilter):
    """The actions of the catalogue (not a DISTINCT over every event)."""

    title = _("action")
    parameter_name = "action"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(action, action) for action in audit.ACTIONS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(action=value) if value else queryset


class ActorTypeFilter(admin.SimpleListFilter):
    title = _("actor")
    parameter_name = "actor_type"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in ACTOR_TYPES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(actor_type=value) if value else queryset


@admin.register(AuditEvent)
class AuditEventAdmin(OfferedLookupsOnly, AuditEventAdminBase):
    list_display = ["at", "action", "actor", "user_group_id", "end_user_id", "workspace"]
    list_display_links = ["at", "action"]
    list_filter = [ActionFilter, ActorTypeFilter, "workspace", "at"]
    # Exact matches: each served by an index, however many events there are.
    search_fields = ["=event_id", "=user_group_id", "=end_user_id", "=actor_id", "=request_id"]
    search_help_text = _(
        "Search by event id, user group id, end user id, actor (key prefix, username or "
        "command) or request id: the whole value."
    )
    list_select_related = ["workspace"]
    # Counting every event of a large table on each page would be slow.
    show_full_result_count = False
    date_hierarchy = None
    fields = (
        "event_id",
        "at",
        "workspace",
        "action",
        "actor",
        "user_group_id",
        "end_user_id",
        "request_id",
        "ip",
        "details_json",
    )
    readonly_fields = fields

    def get_urls(self) -> list[URLPattern]:
        # No add or delete page at all (not even one that refuses): the list, each event.
        refused = {
            f"{self.opts.app_label}_{self.opts.model_name}_{page}" for page in ("add", "delete")
        }
        return [pattern for pattern in super().get_urls() if pattern.name not in refused]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        return super().get_queryset(request).order_by("-id")

    @admin.display(description=_("actor"), ordering="actor_id")
    def actor(self, obj: AuditEvent) -> str:
        return f"{obj.actor_type}: {obj.actor_id}"

    @admin.display(description=_("details"))
    def details_json(self, obj: AuditEvent) -> SafeString:
        return format_html("<pre>{}</pre>", readable_json(obj.details))

    # Read-only for everyone: has_*_permission are consulted for superusers too.

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
