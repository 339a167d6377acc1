"""API keys: their whole lifecycle, issue, lookup, use, change, rotation, revocation and
deletion.

The authentication class, the admin and the management commands all go through here,
so a key is made, checked and retired the same way from every door, and every change is
logged by the key's prefix (never the key). A key itself exists only in the return
value of :func:`issue_key`: the database keeps its prefix and digest.
"""

import hmac
from contextlib import AbstractContextManager
from datetime import timedelta

from django.db import router
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups import crypto, read_model, telemetry
from usergroups.logs import get_logger
from usergroups.models import APIKey
from usergroups.read_model import reads
from usergroups.scopes import SCOPES, field_name
from usergroups.services import audit
from usergroups.signals import api_key_rotated, send_on_commit

logger = get_logger(__name__)


@sensitive_variables("key")
def issue_key(row: APIKey) -> str:
    """Make a new key for ``row`` (unsaved, with its workspace, name, expiry and scopes
    set: all four unless narrowed), save the row, and return the key: shown once, never
    stored."""
    with _atomic():
        key = _insert(row)
        audit.record(
            row.workspace_id,
            audit.API_KEY_CREATED,
            details={
                "prefix": row.prefix,
                "name": row.name,
                "scopes": sorted(row.scopes),
                "expires_at": audit.timestamp(row.expires_at),
            },
        )
    return key


def _atomic() -> AbstractContextManager[None]:
    return read_model.writing(router.db_for_write(APIKey))


@sensitive_variables("key")
def _insert(row: APIKey) -> str:
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
    costs the same single indexed query, whatever its first characters; on PostgreSQL a
    key found before costs none (:mod:`usergroups.read_model`: each request gets its own
    copy of the row remembered until the key, or its workspace, changes).
    """
    if not crypto.looks_like_api_key(key):
        return None
    key_digest = crypto.digest(key)
    row = reads.API_KEY(key_digest, lambda using: _key_row(key_digest, using))
    # The database matched the digest already; comparing again, in constant time, keeps a
    # lenient collation (MariaDB's are case- and pad-insensitive) from accepting a near match.
    if row is None or not hmac.compare_digest(row.digest, key_digest):
        return None
    return row


@sensitive_variables("prefix_or_key")
def _key_row(key_digest: str, using: str) -> APIKey | None:
    try:
        return APIKey.objects.using(using).get(
            digest=key_digest
        )  # unique: no ORDER BY, as .first() adds
    except APIKey.DoesNotExist:
        return None


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
    them, so a revocation made meanwhile is never written back. Scopes change only
    through :func:`narrow_scopes`."""
    editable = [name for name in fields if name in {"name", "expires_at"}]
    api_key.save(update_fields=editable)
    logger.info("Changed API key %s… (%s)", api_key.prefix, ", ".join(editable) or "nothing")


def narrow_scopes(api_key: APIKey, keep: set[str] | frozenset[str]) -> None:
    """Take from ``api_key`` every scope not in ``keep``; never give one.

    Only the scopes taken are written, each set to false: a scope the key lacks stays
    lacking whatever ``keep`` says, and one taken meanwhile by someone else (another
    admin page) is never written back.
    """
    taken = [scope for scope in SCOPES if scope not in keep and api_key.has_scope(scope)]
    if not taken:
        return
    fields = {field_name(scope): False for scope in taken}
    for name, value in fields.items():
        setattr(api_key, name, value)
    with _atomic():
        APIKey.objects.filter(pk=api_key.pk).update(**fields)
        audit.record(
            api_key.workspace_id,
            audit.API_KEY_SCOPES_CHANGED,
            details={"prefix": api_key.prefix, "removed": taken, "scopes": sorted(api_key.scopes)},
        )
    logger.info("Narrowed API key %s…: took %s", api_key.prefix, ", ".join(taken))


class KeyNotRotatable(Exception):
    """The key is revoked or expired (or gone): there is nothing to replace."""


@sensitive_variables("key")
def rotate_key(api_key: APIKey, grace: timedelta) -> tuple[APIKey, str]:
    """Replace ``api_key``: ``(new row, new key)``, the key shown once, never stored.

    The new key has the old one's workspace, name and scopes, and no expiry. The old
    key keeps working for ``grace`` (its expiry is brought forward to then, never put
    back), or is revoked at once when ``grace`` is zero. The old row is locked while
    this happens, so of two concurrent rotations of one key that end it at once, one
    fails with :class:`KeyNotRotatable`. ``api_key_rotated`` is sent after commit.
    """
    if grace < timedelta(0):
        raise ValueError("The grace period cannot be negative.")
    with _atomic():
        old = APIKey.objects.select_for_update().filter(pk=api_key.pk).first()
        if old is None or old.is_revoked or old.is_expired:
            raise KeyNotRotatable(f"API key {api_key.prefix}… is revoked or expired.")
        new = APIKey(workspace_id=old.workspace_id, name=old.name)
        new.set_scopes(old.scopes)
        key = _insert(new)
        if grace:
            valid_until = timezone.now() + grace
            if old.expires_at is not None and old.expires_at <= valid_until:
                valid_until = old.expires_at  # never put back
            else:
                old.expires_at = valid_until
                APIKey.objects.filter(pk=old.pk).update(expires_at=valid_until)
        else:
            _revoke(old)
            valid_until = old.revoked_at or timezone.now()
        audit.record(
            old.workspace_id,
            audit.API_KEY_ROTATED,
            details={
                "prefix": old.prefix,
                "new_prefix": new.prefix,
                "old_key_valid_until": audit.timestamp(valid_until),
            },
        )
        send_on_commit(
            api_key_rotated,
            sender=APIKey,
            old_key=old,
            new_key=new,
            old_key_valid_until=valid_until,
        )
    logger.info(
        "Rotated API key %s… to %s…; the old key works until %s",
        old.prefix,
        new.prefix,
        valid_until.isoformat(timespec="seconds"),
    )
    api_key.expires_at, api_key.revoked_at = old.expires_at, old.revoked_at
    telemetry.rotated("api_key", old.workspace_id)
    return new, key


@telemetry.spanned("usergroups.embed.revoke", axis="api_key")
def revoke_key(api_key: APIKey) -> None:
    """Revoke for good; revoking twice keeps the first time (and records one event). The
    embed tokens the key minted are refused from then on: they name it, and verification
    reads its row."""
    with _atomic():
        if _revoke(api_key):
            audit.record(
                api_key.workspace_id, audit.API_KEY_REVOKED, details={"prefix": api_key.prefix}
            )
            telemetry.revoked("api_key", api_key.workspace_id)


def _revoke(api_key: APIKey) -> bool:
    """Whether this call revoked the key (not someone before)."""
    if api_key.revoked_at is not None:
        return False
    api_key.revoked_at = timezone.now()
    revoked = APIKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=api_key.revoked_at
    )
    logger.info("Revoked API key %s…", api_key.prefix)
    return bool(revoked)


@telemetry.spanned("usergroups.embed.revoke", axis="api_key")
def delete_key(api_key: APIKey) -> None:
    """Delete the key's row; the key is refused from then on, like a revoked one, and so
    are the embed tokens it minted (its event: ``api_key.revoked`` with ``deleted``)."""
    prefix = api_key.prefix
    with _atomic():
        api_key.delete()
        audit.record(
            api_key.workspace_id, audit.API_KEY_REVOKED, details={"prefix": prefix, "deleted": True}
        )
    logger.info("Deleted API key %s…", prefix)
    telemetry.revoked("api_key", api_key.workspace_id)
