"""Deprecated: ``usergroups.group_token_auth`` moved to :mod:`usergroups.auth.group_token` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.auth.group_token", since="0.3")
