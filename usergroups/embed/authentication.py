"""Deprecated: ``usergroups.embed.authentication`` moved to :mod:`usergroups.auth.embed` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.auth.embed", since="0.3")
