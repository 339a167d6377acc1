"""``manage.py sweep_webhooks``: enqueue webhook deliveries left pending (a lost task, a
worker killed mid-send), so that each is delivered at least once."""

import time
from typing import Any

from django.core.management.base import CommandParser
from django.db import DatabaseError, close_old_connections

from usergroups import tasks
from usergroups.management.base import AuditedCommand


class Command(AuditedCommand):
    help = (
        "Enqueue the webhook deliveries that are pending and due (their task lost, or their "
        "worker killed mid-send). Run it from cron, or with --every beside the worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every",
            type=float,
            default=None,
            metavar="SECONDS",
            help="Sweep again every SECONDS until stopped, instead of once.",
        )

    def handle(self, *args: Any, every: float | None, **options: Any) -> None:
        while True:
            try:
                count = tasks.sweep()
            except DatabaseError as exc:
                if every is None:
                    raise
                # A restarted database or a cut connection: the next sweep reconnects,
                # as the worker beside it does; a sweeper that died would strand the
                # deliveries of a killed worker.
                self.stderr.write(f"Sweep failed ({type(exc).__name__}); trying again.")
                close_old_connections()
                count = 0
            if options["verbosity"] > 1 or (every is None):
                self.stdout.write(f"Enqueued {count} due webhook delivery(ies).")
            if every is None:
                return
            time.sleep(every)
