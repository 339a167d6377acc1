"""Deprecated: ``usergroups.exceptions`` moved to ``usergroups.api.exceptions`` in 0.3, and on to :mod:`usergroups.errors` in 0.4 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(
    __name__, "usergroups.errors.handler", "usergroups.errors.failures", since="0.3"
)
