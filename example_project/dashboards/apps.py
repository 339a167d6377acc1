from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    """The embed flow, visible: a customer site, an embedded dashboard, its data endpoint."""

    name = "example_project.dashboards"
    label = "dashboards"
    verbose_name = "Demo dashboards"
    default_auto_field = "django.db.models.BigAutoField"
