"""Deprecated: ``usergroups.exceptions`` moved to :mod:`usergroups.api.exceptions` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.api.exceptions")
