"""``manage.py prune_audit``: delete audit events older than AUDIT_RETENTION_DAYS."""

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from usergroups.conf import usergroups_settings
from usergroups.management.base import AuditedCommand
from usergroups.services import audit


class Command(AuditedCommand):
    help = (
        'Delete audit events older than USERGROUPS["AUDIT_RETENTION_DAYS"] (default 365), '
        "in batches, each its own short transaction."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=1000, help="Events deleted per transaction."
        )

    def handle(self, *args: Any, batch_size: int, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        days = usergroups_settings.AUDIT_RETENTION_DAYS
        before = timezone.now() - timedelta(days=days)
        deleted, batches = audit.prune_events(before, batch_size=batch_size)
        self.stdout.write(
            f"Deleted {deleted} audit event(s) older than {days} day(s) "
            f"(before {before.isoformat(timespec='seconds')}) in {batches} batch(es)."
        )
