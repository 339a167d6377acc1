"""API keys: their whole lifecycle, issue, lookup, use, change, revocation and deletion.

The authentication class, the admin and the management commands all go through here,
so a key is made, checked and retired the same way from every door, and every change is
logged by the key's prefix (never the key). A key itself exists only in the return
value of :func:`issue_key`: the database keeps its prefix and digest.
"""

import hmac
import logging
from datetime import timedelta

from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from .. import crypto, sql
from ..models import APIKey

logger = logging.getLogger(__name__)

# The whole row, as ``APIKey.objects.get(prefix=...)`` would load it.
_KEY_FIELDS = [field.attname for field in APIKey._meta.concrete_fields]


@sensitive_variables("key")
def issue_key(row: APIKey) -> str:
    """Make a new key for ``row`` (unsaved, with its workspace, name and expiry set),
    save the row, and return the key: shown once, never stored."""
    key = crypto.new_api_key()
    row.prefix = key[: crypto.KEY_LOOKUP_LENGTH]
    row.digest = crypto.digest(key)
    row.save(force_insert=True)
    logger.info("Issued API key %s… for workspace %s", row.prefix, row.workspace_id)
    return key


@sensitive_variables("key", "key_digest")
def find_api_key(key: str) -> APIKey | None:
    """The key's row, or None. Costs no query unless the key has the right shape.

    The row is found by the key's full digest, never by its prefix: a lookup by prefix
    answers measurably slower when the prefix exists (a row is read, then its digest
    compared), which tells an attacker which prefixes are real. Every well-formed key
    costs the same single indexed query, whatever its first characters.
    """
    if not crypto.looks_like_api_key(key):
        return None
    key_digest = crypto.digest(key)
    using, rows = sql.API_KEY_BY_DIGEST.fetch([key_digest])
    if not rows:
        return None
    row = APIKey.from_db(using, _KEY_FIELDS, rows[0])
    # The database matched the digest already; comparing again, in constant time, keeps a
    # lenient collation (MariaDB's are case- and pad-insensitive) from accepting a near match.
    if not hmac.compare_digest(row.digest, key_digest):
        return None
    return row


@sensitive_variables("prefix_or_key")
def find_key_by_prefix_or_key(prefix_or_key: str) -> APIKey | None:
    """The key named by its prefix (as the admin and the logs show it) or in full."""
    if crypto.looks_like_api_key(prefix_or_key):
        return find_api_key(prefix_or_key)
    return APIKey.objects.filter(prefix=prefix_or_key).first()


def record_use(api_key: APIKey, interval_seconds: int) -> None:
    """Record use, at most once per ``interval_seconds``, so reads stay write-free."""
    now = timezone.now()
    last = api_key.last_used_at
    if last is None or now - last >= timedelta(seconds=interval_seconds):
        api_key.last_used_at = now
        APIKey.objects.filter(pk=api_key.pk).update(last_used_at=now)


def change_key(api_key: APIKey, fields: list[str]) -> None:
    """Save the ``fields`` of ``api_key`` a person may change (name, expiry), and only
    them, so a revocation made meanwhile is never written back."""
    editable = [name for name in fields if name in {"name", "expires_at"}]
    api_key.save(update_fields=editable)
    logger.info("Changed API key %s… (%s)", api_key.prefix, ", ".join(editable) or "nothing")


def revoke_key(api_key: APIKey) -> None:
    """Revoke for good; revoking twice keeps the first time."""
    if api_key.revoked_at is not None:
        return
    api_key.revoked_at = timezone.now()
    APIKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=api_key.revoked_at
    )
    logger.info("Revoked API key %s…", api_key.prefix)


def delete_key(api_key: APIKey) -> None:
    """Delete the key's row; the key is refused from then on, like a revoked one."""
    prefix = api_key.prefix
    api_key.delete()
    logger.info("Deleted API key %s…", prefix)
