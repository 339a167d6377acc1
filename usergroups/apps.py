import importlib.util

from django.apps import AppConfig


class UserGroupsConfig(AppConfig):
    name = "usergroups"
    verbose_name = "User groups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from usergroups import (
            checks,  # noqa: F401  (registers the system checks)
            tasks,  # noqa: F401  (enqueues webhook deliveries)
        )

        if importlib.util.find_spec("drf_spectacular") is not None:
            from usergroups.api import openapi  # noqa: F401  (registers the extensions)
