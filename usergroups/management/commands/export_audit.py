"""``manage.py export_audit``: a workspace's audit events as JSON lines, oldest first."""

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware

from usergroups.management.base import AuditedCommand
from usergroups.models import Workspace
from usergroups.services import audit


class Command(AuditedCommand):
    help = (
        "Write a workspace's audit events to stdout as JSON lines (one event a line, oldest "
        "first), reading them in batches: constant memory however many there are."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, metavar="SLUG")
        parser.add_argument(
            "--since", metavar="ISO", help="Only events at or after this ISO 8601 time (UTC)."
        )
        parser.add_argument(
            "--batch-size", type=int, default=1000, help="Events read per query (default 1000)."
        )

    def handle(
        self, *args: Any, workspace: str, since: str | None, batch_size: int, **options: Any
    ) -> None:
        space = Workspace.objects.filter(slug=workspace).first()
        if space is None:
            raise CommandError(f"No workspace has the slug {workspace!r}.")
        start = None
        if since is not None:
            try:
                start = parse_datetime(since)
            except ValueError:
                start = None
            if start is None:
                raise CommandError(f"--since must be an ISO 8601 time, not {since!r}.")
            if is_naive(start):
                start = make_aware(start)
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        for event in audit.export_events(space.pk, since=start, batch_size=batch_size):
            self.stdout.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
