"""Deprecated: ``usergroups.api.exceptions`` moved to :mod:`usergroups.errors.handler` and :mod:`usergroups.errors.failures` in 0.4 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(
    __name__, "usergroups.errors.handler", "usergroups.errors.failures", since="0.4"
)
