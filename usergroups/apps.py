from django.apps import AppConfig


class UserGroupsConfig(AppConfig):
    name = "usergroups"
    verbose_name = "User groups"
    default_auto_field = "django.db.models.BigAutoField"
