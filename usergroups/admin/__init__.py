"""The Django admin of django-usergroups: one module per model."""

from .groups import SchemaMappingInline, UserGroupAdmin
from .keys import APIKeyAdmin
from .workspaces import WorkspaceAdmin

__all__ = ["APIKeyAdmin", "SchemaMappingInline", "UserGroupAdmin", "WorkspaceAdmin"]
