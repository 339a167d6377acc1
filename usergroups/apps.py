import importlib.util

from django.apps import AppConfig


class UserGroupsConfig(AppConfig):
    name = "usergroups"
    verbose_name = "User groups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)

        if importlib.util.find_spec("drf_spectacular") is not None:
            from . import openapi  # noqa: F401  (registers the OpenAPI extensions)
            from .embed import openapi as embed_openapi  # noqa: F401  (the same, embed tokens)
