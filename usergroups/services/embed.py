"""Embed tokens: minting, introspection, revocation, and the one query of verification.

Revocation needs no list of revoked tokens: a token carries its group's
``embed_generation`` as minted, and verification reads the group (one indexed query,
which also finds it deleted) and refuses any other generation. Rotating the group's
token and :func:`revoke_embed_tokens` advance it with one ``UPDATE ... + 1``, so every
process refuses the older tokens at its next verification.

A mint racing a revocation never yields a token that outlives it: the mint reads the
generation before it signs, so a revocation that commits after that read leaves the
token's generation behind; one that commits before it is seen by the read, and the
token, minted after the revocation, rightly works. Minting writes one row: its audit
event, named by the token's ``jti`` (never the token).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import router, transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups.conf import usergroups_settings
from usergroups.embed import tokens
from usergroups.embed.grant import EmbedGrant
from usergroups.logs import get_logger
from usergroups.models import UserGroup
from usergroups.records import GroupRecord
from usergroups.services import audit, lineage
from usergroups.services.retry import retry_on_deadlock
from usergroups.signals import embed_tokens_revoked, send_on_commit

logger = get_logger(__name__)


class MintedGroup(NamedTuple):
    """The group a token is minted for: its own row's names, not what it inherits (a
    mint reads no more; verification reads the whole group on every use)."""

    team_id: int
    provided_id: str
    name: str
    embed_generation: int


@dataclass(frozen=True)
class MintedToken:
    """A new embed token and what the mint answer says about it."""

    token: str = field(repr=False)
    expires_in: int
    expires_at: datetime
    group: MintedGroup


def group_to_mint(workspace_id: int, provided_id: str) -> MintedGroup | None:
    """The workspace's group ``provided_id``, as a mint names it; None if there is none.
    One indexed read of the group's own row."""
    groups = UserGroup.objects.filter(workspace_id=workspace_id, provided_id=provided_id)
    rows = groups.order_by().values_list(*MintedGroup._fields)[:1]
    return next((MintedGroup(*row) for row in rows), None)


@sensitive_variables("token")
def mint_embed_token(
    workspace_id: int,
    provided_id: str,
    *,
    expires_in: int | None = None,
    resource: str | None = None,
    origin: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> MintedToken | None:
    """A token for the workspace's group ``provided_id``; None if there is none.

    One read of the group's own row and one write, its audit event.
    ``origin`` must be normalized (:func:`usergroups.embed.origins.normalize_origin`);
    raises :class:`usergroups.embed.tokens.TokenTooLarge` when the token would be.
    """
    group = group_to_mint(workspace_id, provided_id)
    if group is None:
        return None
    seconds = expires_in if expires_in is not None else usergroups_settings.EMBED_TOKEN_SECONDS
    issued_at = int(timezone.now().timestamp())
    jti = tokens.new_jti()
    token = tokens.sign(
        team_id=group.team_id,
        user_group_id=group.provided_id,
        generation=group.embed_generation,
        issued_at=issued_at,
        expires_in=seconds,
        resource=resource,
        origin=origin,
        params=params,
        jti=jti,
    )
    expires_at = datetime.fromtimestamp(issued_at + seconds, UTC)
    # Signed first: a token too large is refused without an event. One INSERT, atomic by
    # itself: record() opens no savepoint for it.
    audit.record(
        workspace_id,
        audit.EMBED_TOKEN_MINTED,
        user_group_id=group.provided_id,
        details={
            "jti": jti,
            "team_id": group.team_id,
            "expires_at": audit.timestamp(expires_at),
            "resource": resource,
            "origin": origin,
            # The names only: the values are the host's data.
            "params": sorted(params) if params else [],
        },
    )
    # DEBUG: a mint comes with every dashboard load and refresh; the app logs its other
    # writes at INFO.
    logger.debug("Minted an embed token for user group team_id=%s", group.team_id)
    return MintedToken(token, seconds, expires_at, group)


def current_grant(claims: tokens.Claims) -> EmbedGrant | None:
    """The grant of verified ``claims`` if their group still exists and has not revoked
    them since: one indexed query (by primary key, with what the group inherits, at any
    depth)."""
    group = lineage.find_group(lineage.BY_TEAM_ID, claims.team_id)
    if group is None or group.embed_generation != claims.generation:
        return None
    return EmbedGrant(group, claims)


@sensitive_variables("token")
def introspect(workspace_id: int, token: object) -> EmbedGrant | None:
    """The grant of ``token`` if it is active for this workspace, else None (expired,
    forged, malformed, revoked, its group deleted, or another workspace's)."""
    try:
        claims = tokens.verify(token)
    except tokens.InvalidEmbedToken:
        return None
    grant = current_grant(claims)
    if grant is None or grant.group.workspace_id != workspace_id:
        return None
    return grant


def revoke_embed_tokens(group: UserGroup | GroupRecord | int) -> GroupRecord | None:
    """Revoke every embed token minted so far for ``group`` (a model, a record or a
    ``team_id``), leaving its group token alone; the group after, or None if it is gone.
    Sends ``embed_tokens_revoked`` after commit."""
    team_id = group if isinstance(group, int) else group.team_id
    return _revoke(UserGroup.objects.filter(pk=team_id))


def revoke_embed_tokens_of(workspace_id: int, provided_id: str) -> GroupRecord | None:
    """:func:`revoke_embed_tokens` for the workspace's group ``provided_id`` (the API's door)."""
    return _revoke(UserGroup.objects.filter(workspace_id=workspace_id, provided_id=provided_id))


@retry_on_deadlock
def _revoke(matching: QuerySet[UserGroup]) -> GroupRecord | None:
    with transaction.atomic(using=router.db_for_write(UserGroup)):
        row = matching.select_for_update().values_list("pk", "workspace_id", "provided_id").first()
        if row is None:
            return None
        team_id, workspace_id, provided_id = row
        UserGroup.objects.filter(pk=team_id).update(
            embed_generation=F("embed_generation") + 1, embed_tokens_revoked_at=timezone.now()
        )
        audit.record(
            workspace_id,
            audit.EMBED_TOKEN_REVOKED,
            user_group_id=provided_id,
            details={"axis": "user_group", "team_id": team_id},
        )
        record = lineage.find_group(lineage.BY_TEAM_ID, team_id)
    if record is None:  # a read of the row this transaction holds locked: never
        return None
    send_on_commit(embed_tokens_revoked, group=record)
    logger.info("Revoked the embed tokens of user group team_id=%s", record.team_id)
    return record
