"""Deprecated: ``usergroups.permissions`` moved to :mod:`usergroups.auth.permissions` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.auth.permissions", since="0.3")
