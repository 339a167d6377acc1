"""``manage.py rotate_api_key``: replace a key without downtime; the new key is printed
once, alone on stdout, for scripts, and the old one keeps working for a grace period."""

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser

from usergroups.management.base import AuditedCommand
from usergroups.scopes import ordered
from usergroups.services import keys

DEFAULT_GRACE_HOURS = 24


def grace_hours(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


class Command(AuditedCommand):
    help = (
        "Replace an API key, given by its prefix or in full, by a new key with the same "
        "workspace, name and scopes, and print the new key, shown this once. The old key "
        f"keeps working for --grace-hours (default {DEFAULT_GRACE_HOURS}; 0 revokes it now)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="PREFIX_OR_KEY")
        parser.add_argument(
            "--grace-hours",
            type=grace_hours,
            default=DEFAULT_GRACE_HOURS,
            help=f"Hours the old key keeps working (default {DEFAULT_GRACE_HOURS}; 0: revoke it now).",
        )

    def handle(self, *args: Any, key: str, grace_hours: int, **options: Any) -> None:
        row = keys.find_key_by_prefix_or_key(key)
        if row is None:
            raise CommandError("No API key has this prefix or value.")
        try:
            new_row, new_key = keys.rotate_key(row, timedelta(hours=grace_hours))
        except keys.KeyNotRotatable:
            raise CommandError(
                f"API key {row.prefix}… is revoked or expired: create a new key instead."
            )
        until = (
            f"keeps working until {row.expires_at.isoformat(timespec='seconds')}"
            if grace_hours and row.expires_at
            else "is revoked"
        )
        self.stderr.write(
            f"Replaced API key {row.prefix}… by {new_row.prefix}… in workspace "
            f"{new_row.workspace.slug!r} with scopes {', '.join(ordered(new_row.scopes))}; "
            f"the old key {until}. Store the new key now: it is not shown again."
        )
        self.stdout.write(new_key)
