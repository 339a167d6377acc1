"""``manage.py create_api_key``: the key is printed once, alone on stdout, for scripts."""

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone

from usergroups.management.base import AuditedCommand
from usergroups.models import APIKey, Workspace
from usergroups.scopes import SCOPES, ordered, parse_scopes
from usergroups.services import keys


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(AuditedCommand):
    help = "Create an API key (and its workspace if needed) and print the key, shown this once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--workspace", default="default", help="Workspace slug (default: default)."
        )
        parser.add_argument("--name", default="", help="A label for the key.")
        parser.add_argument(
            "--expires-in-days", type=positive_int, default=None, help="Days until the key expires."
        )
        parser.add_argument(
            "--scopes",
            default=",".join(SCOPES),
            help=f"Comma-separated scopes among {', '.join(SCOPES)} (default: all of them).",
        )

    def handle(
        self,
        *args: Any,
        workspace: str,
        name: str,
        expires_in_days: int | None,
        scopes: str,
        **options: Any,
    ) -> None:
        try:
            granted = parse_scopes(scopes)
        except ValueError as exc:
            raise CommandError(str(exc))
        try:
            validate_slug(workspace)
        except ValidationError:
            raise CommandError(
                f"Invalid workspace slug {workspace!r}: use letters, digits, - and _."
            )
        if len(name) > 255:
            raise CommandError("The name must be at most 255 characters.")
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
        with transaction.atomic():
            space, created = Workspace.objects.get_or_create(slug=workspace)
            row = APIKey(workspace=space, name=name, expires_at=expires_at)
            row.set_scopes(granted)
            key = keys.issue_key(row)
        if created:
            self.stderr.write(f"Created workspace {space.slug!r}.")
        self.stderr.write(
            f"Created API key {row.prefix}… in workspace {space.slug!r} with scopes "
            f"{', '.join(ordered(granted))}. Store it now: it is not shown again."
        )
        self.stdout.write(key)
