from django.apps import AppConfig


class DemoConfig(AppConfig):
    """``make demo``'s setup command; no models."""

    name = "example_project.demo"
    label = "usergroups_demo"
    verbose_name = "Demo setup"
