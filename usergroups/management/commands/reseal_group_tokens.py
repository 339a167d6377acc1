"""``manage.py reseal_group_tokens``: after rotating the secret, reseal with the new one.

Tokens keep working throughout (lookups use the digest, which no secret touches), but a
token sealed with a secret that is later dropped from the fallbacks can no longer be
shown by get-or-create. Run this while the old secret is still a fallback.
"""

from django.core.management.base import BaseCommand

from usergroups import crypto
from usergroups.models import UserGroup


class Command(BaseCommand):
    help = "Reseal stored group tokens with the current secret (run after rotating SECRET_KEY)."

    def handle(self, *args, **options):
        resealed = lost = 0
        groups = UserGroup.objects.only("team_id", "token_digest", "token_sealed")
        for group in groups.iterator(chunk_size=1000):
            token = crypto.unseal_token(group.token_sealed, group.token_digest)
            if token is None:
                lost += 1
                continue
            sealed = crypto.seal_token(token, group.token_digest)
            if sealed != group.token_sealed:
                UserGroup.objects.filter(pk=group.pk, token_digest=group.token_digest).update(
                    token_sealed=sealed
                )
                resealed += 1
        self.stdout.write(f"Resealed {resealed} group token(s).")
        if lost:
            self.stderr.write(
                f"{lost} group token(s) open with no configured secret; "
                "they still work but cannot be shown again until rotated."
            )
