"""Deprecated: ``usergroups.services.webhooks`` moved to :mod:`usergroups.webhooks.registry` and :mod:`usergroups.webhooks.deliveries` in 0.4 (see docs/upgrading.md)."""

from usergroups.deprecation import moved_module

__getattr__ = moved_module(
    __name__, "usergroups.webhooks.registry", "usergroups.webhooks.deliveries", since="0.4"
)
