"""``manage.py revoke_api_key``: refuse a key from now on, named by its prefix or in full."""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from usergroups.management.base import AuditedCommand
from usergroups.services import keys


class Command(AuditedCommand):
    help = "Revoke an API key, given by its prefix (as shown in the admin and logs) or in full."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="PREFIX_OR_KEY")

    def handle(self, *args: Any, key: str, **options: Any) -> None:
        row = keys.find_key_by_prefix_or_key(key)
        if row is None:
            raise CommandError("No API key has this prefix or value.")
        if row.is_revoked:
            self.stdout.write(f"API key {row.prefix}… was already revoked.")
            return
        keys.revoke_key(row)
        self.stdout.write(f"Revoked API key {row.prefix}… of workspace {row.workspace.slug!r}.")
