"""``manage.py revoke_api_key``: refuse a key from now on, named by its prefix or in full."""

from django.core.management.base import BaseCommand, CommandError

from usergroups import crypto
from usergroups.authentication import find_api_key
from usergroups.models import APIKey


class Command(BaseCommand):
    help = "Revoke an API key, given by its prefix (as shown in the admin and logs) or in full."

    def add_arguments(self, parser):
        parser.add_argument("key", metavar="PREFIX_OR_KEY")

    def handle(self, *args, key: str, **options):
        if crypto.looks_like_api_key(key):
            row = find_api_key(key)
        else:
            row = APIKey.objects.filter(prefix=key).first()
        if row is None:
            raise CommandError("No API key has this prefix or value.")
        if row.is_revoked:
            self.stdout.write(f"API key {row.prefix}… was already revoked.")
            return
        row.revoke()
        self.stdout.write(f"Revoked API key {row.prefix}… of workspace {row.workspace.slug!r}.")
