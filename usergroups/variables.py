"""Deprecated: ``usergroups.variables`` moved to :mod:`usergroups.contrib.variables` in 0.3 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(__name__, "usergroups.contrib.variables", since="0.3")
