"""The app's management commands: what they change is recorded as done by the command."""

from typing import Any

from django.core.management.base import BaseCommand

from usergroups import audit_context


class AuditedCommand(BaseCommand):
    """A command whose changes name it as their actor (``{"type": "system", "id": name}``)."""

    @property
    def command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]

    def execute(self, *args: Any, **options: Any) -> str | None:
        with audit_context.acting(audit_context.system(self.command_name)):
            return super().execute(*args, **options)
