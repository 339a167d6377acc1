"""``manage.py reseal_group_tokens``: after rotating the secret, reseal with the new one.

Webhook signing secrets, sealed the same way, are resealed too. Tokens keep working throughout (lookups use the digest, which no secret touches), but a
token sealed with a secret that is later dropped from the fallbacks can no longer be
shown by get-or-create. Run this while the old secret is still a fallback.
"""

from typing import Any

from usergroups.management.base import AuditedCommand
from usergroups.services import groups
from usergroups.webhooks import registry


class Command(AuditedCommand):
    help = (
        "Reseal stored group tokens and webhook secrets with the current secret (run after "
        "rotating SECRET_KEY)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        resealed, lost = groups.reseal_tokens()
        self.stdout.write(f"Resealed {resealed} group token(s).")
        if lost:
            self.stderr.write(
                f"{lost} group token(s) open with no configured secret; "
                "they still work but cannot be shown again until rotated."
            )
        resealed, lost = registry.reseal_secrets()
        if resealed:  # said only when there are any, so a site without webhooks sees no change
            self.stdout.write(f"Resealed {resealed} webhook secret(s).")
        if lost:
            self.stderr.write(
                f"{lost} webhook secret(s) open with no configured secret; their deliveries "
                "fail until the webhooks are registered again."
            )
