"""Deprecated: ``usergroups.authentication`` moved to :mod:`usergroups.auth.api_key` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.auth.api_key", since="0.3")
