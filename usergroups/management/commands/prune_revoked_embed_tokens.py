"""``manage.py prune_revoked_embed_tokens``: delete the denylist's rows of expired tokens."""

from typing import Any

from django.core.management.base import BaseCommand

from usergroups.services import embed


class Command(BaseCommand):
    help = (
        "Delete the rows of single revoked embed tokens that have expired since (they "
        "verify no more anyway). Revoking a token does it too; run this from cron on a "
        "site that revokes rarely."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = embed.prune_revoked_embed_tokens()
        self.stdout.write(f"Deleted {deleted} expired revoked embed token(s).")
