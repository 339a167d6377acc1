"""The Django admin of django-usergroups: one module per model."""

from usergroups.admin.audit import AuditEventAdmin
from usergroups.admin.end_users import EndUserAdmin
from usergroups.admin.groups import SchemaMappingInline, UserGroupAdmin
from usergroups.admin.keys import APIKeyAdmin
from usergroups.admin.webhooks import WebhookAdmin, WebhookDeliveryAdmin
from usergroups.admin.workspaces import WorkspaceAdmin

__all__ = [
    "APIKeyAdmin",
    "AuditEventAdmin",
    "EndUserAdmin",
    "SchemaMappingInline",
    "UserGroupAdmin",
    "WebhookAdmin",
    "WebhookDeliveryAdmin",
    "WorkspaceAdmin",
]
