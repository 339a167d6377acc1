from django.apps import AppConfig


class DemoConfig(AppConfig):
    """``make demo``'s setup command and the example project's own system check; no models."""

    name = "example_project.demo"
    label = "usergroups_demo"
    verbose_name = "Demo setup"

    def ready(self) -> None:
        from example_project.demo import checks  # noqa: F401  (registers the check)
