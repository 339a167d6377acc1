"""The Django admin of django-usergroups: one module per model (:mod:`.workspaces`,
:mod:`.keys`, :mod:`.groups`, :mod:`.end_users`, :mod:`.audit`, :mod:`.webhooks`), one per
confirmed action (:mod:`.rotation`, :mod:`.key_rotation`, :mod:`.revocation`,
:mod:`.embed_revocation`), the forms (:mod:`.forms`) and what the pages share
(:mod:`.common`)."""

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
