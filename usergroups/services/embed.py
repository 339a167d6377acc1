"""Embed tokens: minting, introspection, revocation.

A token is bound to everything that can revoke it, and verification
(:mod:`usergroups.services.verification`) checks them all in one indexed query
(:func:`usergroups.services.lineage.find_token_group`):

- its group: ``team_id``, workspace, ``user_group_id`` and the random
  ``embed_binding`` fixed at the group's creation (an id handed out again never revives
  a token), and the group's ``embed_generation`` as minted;
- its workspace's ``embed_generation`` (``{"all": true}``);
- the API key that minted it, by its ``public_id``: revoked, expired, deleted or without
  ``embed``, its tokens die;
- its end user, if any: binding, ``embed_generation``, not disabled, not deleted;
- the denylist of single revoked tokens (:class:`~usergroups.models.RevokedEmbedToken`),
  kept only until each token expires.

Revoking on an axis advances a generation with one ``UPDATE ... + 1`` (or adds one
denylist row), so every process refuses the older tokens at its next verification (a
process that remembers a grant forgets it when the write's notification arrives). A mint racing a revocation never yields a token that
outlives it: the mint reads the generations before it signs, so a revocation that
commits after that read leaves the token's generations behind; one that commits before
it is seen by the read, and the token, minted after the revocation, rightly works.
A mint writes one row, its audit event, named by the token's ``jti`` (never the token);
and its end user when it creates or changes one, or ends the person's earlier sessions.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Model, QuerySet
from django.db.models.query import RawQuerySet
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups import read_model, telemetry
from usergroups.conf import usergroups_settings
from usergroups.crypto import new_binding
from usergroups.embed import tokens
from usergroups.embed.grant import EmbedGrant
from usergroups.logs import get_logger
from usergroups.models import EndUser, RevokedEmbedToken, UserGroup, Workspace
from usergroups.read_model import reads
from usergroups.records import GroupRecord
from usergroups.services import audit, end_users, lineage, statements, verification
from usergroups.services.retry import retry_on_deadlock
from usergroups.signals import embed_tokens_revoked, send_on_commit

logger = get_logger(__name__)


class MintedGroup(NamedTuple):
    """The group a token is minted for: its own row's names and what its tokens carry,
    not what it inherits (verification reads the whole group on every use)."""

    team_id: int
    provided_id: str
    name: str
    embed_generation: int
    embed_binding: str
    workspace_generation: int


@dataclass(frozen=True)
class MintedToken:
    """A new embed token and what the mint answer says about it."""

    token: str = field(repr=False)
    expires_in: int
    expires_at: datetime
    group: MintedGroup
    end_user: end_users.EndUserRecord | None = None


@dataclass(frozen=True)
class EndUserSpec:
    """The ``end_user`` of a mint: who, and the fields to set on them if they differ."""

    end_user_id: str
    changes: dict[str, Any] = field(default_factory=dict)


class VariablesLocked(ValueError):
    """``params`` of a mint would replace top-level keys that the group's lineage or the
    end user's stored attributes set, and the minting key may not (it lacks ``write``).
    ``clashes``: the mint's field (``"params"``) -> the keys."""

    def __init__(self, clashes: dict[str, list[str]]):
        super().__init__(clashes)
        self.clashes = clashes


class AttributesLocked(Exception):
    """The end user's ``attributes`` of a mint differ from the person's stored ones (a new
    person has none), and the minting key may not change them (it lacks ``write``)."""


#: The largest generation a column holds (a 32-bit IntegerField on every database).
MAX_GENERATION = 2**31 - 1

#: The fields of :class:`MintedGroup` that are the group's own columns (not its workspace's).
_GROUP_COLUMNS = ("team_id", "provided_id", "name", "embed_generation", "embed_binding")


def _mint_sql(connection: BaseDatabaseWrapper, with_end_user: bool) -> str:
    """:func:`group_to_mint`'s statement: the group's columns that a mint reads, each
    as ``mint_<name of MintedGroup's field>``, and ``with_end_user``, the whole row of
    the person named, or NULLs."""

    def column(model: type[Model], name: str) -> str:
        return statements.column(connection, model, name)

    selected = [
        *(f"g.{column(UserGroup, name)} AS mint_{name}" for name in _GROUP_COLUMNS),
        f"ws.{column(Workspace, 'embed_generation')} AS mint_workspace_generation",
    ]
    joined = ""
    if with_end_user:
        selected.insert(0, "u.*")
        joined = (
            f" LEFT OUTER JOIN {statements.table(connection, EndUser)} u"
            f" ON u.{column(EndUser, 'workspace')} = g.{column(UserGroup, 'workspace')}"
            f" AND u.{column(EndUser, 'end_user_id')} = %s"
        )
    else:
        selected.insert(0, f"g.{column(UserGroup, 'team_id')}")
    return (
        f"SELECT {', '.join(selected)} FROM {statements.table(connection, UserGroup)} g"
        f" JOIN {statements.table(connection, Workspace)} ws"
        f" ON ws.{column(Workspace, 'id')} = g.{column(UserGroup, 'workspace')}{joined}"
        f" WHERE g.{column(UserGroup, 'workspace')} = %s"
        f" AND g.{column(UserGroup, 'provided_id')} = %s"
    )


def group_to_mint(
    workspace_id: int, provided_id: str, end_user_id: str | None = None
) -> tuple[MintedGroup, end_users.EndUserRecord | None] | None:
    """The workspace's group ``provided_id`` as a mint names it, and the workspace's end
    user ``end_user_id`` if one is named and there is one; None if there is no such
    group. One read on unique indexes: the group's row, its workspace's and the person's;
    none on PostgreSQL when the process holds it (:mod:`usergroups.read_model`).
    """
    return reads.GROUP_TO_MINT(
        (workspace_id, provided_id, end_user_id),
        lambda using: _read_group_to_mint(workspace_id, provided_id, end_user_id, using),
    )


def _read_group_to_mint(
    workspace_id: int, provided_id: str, end_user_id: str | None, using: str
) -> tuple[MintedGroup, end_users.EndUserRecord | None] | None:
    connection = connections[using]
    params = [
        statements.prepared(connection, UserGroup, "workspace", workspace_id),
        statements.prepared(connection, UserGroup, "provided_id", provided_id),
    ]
    rows: RawQuerySet[Any]
    if end_user_id is None:
        sql = statements.written_once(connection, "mint", lambda: _mint_sql(connection, False))
        rows = UserGroup.objects.using(using).raw(sql, params)
    else:
        sql = statements.written_once(
            connection, "mint for an end user", lambda: _mint_sql(connection, True)
        )
        person_id = statements.prepared(connection, EndUser, "end_user_id", end_user_id)
        # On the person's model, whose fields it converts; a row of NULLs for no person.
        rows = EndUser.objects.using(using).raw(sql, [person_id, *params])
    row = next(iter(rows), None)
    if row is None:
        return None
    group = MintedGroup(*(getattr(row, f"mint_{name}") for name in MintedGroup._fields))
    person = None
    if isinstance(row, EndUser) and row.pk is not None:
        person = end_users.EndUserRecord.from_model(row)
    return group, person


def _within_grant(
    group: MintedGroup,
    person: end_users.EndUserRecord | None,
    params: Mapping[str, Any] | None,
    end_user: EndUserSpec | None,
) -> EndUserSpec | None:
    """What a mint by a key without ``write`` may do (contract 8a: its token grants at
    most what the group's lineage and the writers with ``write`` allowed).

    :class:`AttributesLocked` if the end user's given ``attributes`` differ from
    ``person``'s stored ones (``person`` as read with the group; None: none yet), at no
    query; :class:`VariablesLocked` if ``params`` set a top-level key that the lineage
    or the person's stored attributes set, after one read of the lineage (only with
    ``params``). The end user to put: without ``attributes``, which are the stored ones,
    so that a writer's change made since ``person`` was read is not undone."""
    if end_user is not None and "attributes" in end_user.changes:
        changes = dict(end_user.changes)
        if end_users.attributes_differ(person, changes.pop("attributes")):
            raise AttributesLocked(end_user.end_user_id)
        end_user = EndUserSpec(end_user.end_user_id, changes)
    if params:
        record = lineage.find_group(lineage.BY_TEAM_ID, group.team_id)
        locked = set(record.computed_properties) if record is not None else set()
        if person is not None:
            locked |= set(person.attributes)
        clashes = sorted(locked & set(params))
        if clashes:
            raise VariablesLocked({"params": clashes})
    return end_user


@telemetry.spanned("usergroups.embed.mint")
@sensitive_variables("token")
def mint_embed_token(
    workspace_id: int,
    provided_id: str,
    *,
    key_id: str | None = None,
    may_replace_variables: bool = True,
    end_user: EndUserSpec | None = None,
    exclusive: bool = False,
    expires_in: int | None = None,
    resource: str | None = None,
    origin: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> MintedToken | None:
    """A token for the workspace's group ``provided_id``, minted by the API key whose
    ``public_id`` is ``key_id`` (None: host code, in-process: no key to end it by);
    None if there is no such group.

    One read of the group's own row, with its workspace's generation and the end user.
    Unless ``may_replace_variables``, the mint grants no more than the group's lineage
    and the person's stored attributes allow: the ``end_user``'s ``attributes`` may not
    differ from the stored ones (:class:`AttributesLocked`), and ``params`` may not
    replace a key the lineage or the person sets (:class:`VariablesLocked`, after one
    more read); nothing is written then. The API passes whether the key has ``write``;
    host code, which could change the group and the person anyway, may by default.
    ``end_user`` is created if missing, its given fields that differ saved in one write
    (none when nothing differs); a disabled one raises
    :class:`~usergroups.services.end_users.EndUserDisabled`. ``exclusive`` (needs
    ``end_user``) revokes the person's earlier tokens, in any group.

    Writes its audit event (one INSERT).
    ``origin`` must be normalized (:func:`usergroups.embed.origins.normalize_origin`);
    raises :class:`usergroups.embed.tokens.TokenTooLarge` when the token would be.
    """
    if exclusive and end_user is None:
        raise ValueError("An exclusive mint needs an end user.")
    found = group_to_mint(
        workspace_id, provided_id, end_user.end_user_id if end_user is not None else None
    )
    if found is None:
        return None
    group, known_person = found
    if not may_replace_variables:
        end_user = _within_grant(group, known_person, params, end_user)
    seconds = expires_in if expires_in is not None else usergroups_settings.EMBED_TOKEN_SECONDS
    issued_at = int(timezone.now().timestamp())

    def sign(person: tokens.EndUserBinding | None) -> str:
        binding = tokens.Binding(
            workspace_id=workspace_id,
            workspace_generation=group.workspace_generation,
            group_binding=group.embed_binding,
            group_generation=group.embed_generation,
            key_id=key_id,
            end_user=person,
        )
        return tokens.sign(
            team_id=group.team_id,
            user_group_id=group.provided_id,
            binding=binding,
            issued_at=issued_at,
            expires_in=seconds,
            resource=resource,
            origin=origin,
            params=params,
            jti=jti,
            params_win=may_replace_variables,
        )

    jti = tokens.new_jti()
    person = None
    if end_user is None:
        token = sign(None)
    else:
        person_id = end_user.end_user_id

        def check_size() -> None:
            # Signed with the widest values the person's claims can take before the person
            # is written: a token too large is refused with nothing changed. An unchanged
            # person is not written: no trial signature then.
            sign(tokens.EndUserBinding(person_id, new_binding(), MAX_GENERATION))

        if exclusive:
            check_size()
        person, _created = end_users.put_read_end_user(
            known_person,
            workspace_id,
            person_id,
            end_user.changes,
            for_mint=True,
            before_write=None if exclusive else check_size,
        )
        if exclusive:
            person = end_users.start_exclusive_session(person)
        token = sign(
            tokens.EndUserBinding(person.end_user_id, person.embed_binding, person.embed_generation)
        )
    expires_at = datetime.fromtimestamp(issued_at + seconds, UTC)
    # Signed first: a token too large is refused without an event. One INSERT, atomic by
    # itself: record() opens no savepoint for it.
    audit.record(
        workspace_id,
        audit.EMBED_TOKEN_MINTED,
        user_group_id=group.provided_id,
        end_user_id=person.end_user_id if person is not None else None,
        details={
            "jti": jti,
            "team_id": group.team_id,
            "expires_at": audit.timestamp(expires_at),
            "resource": resource,
            "origin": origin,
            # The names only: the values are the host's data.
            "params": sorted(params) if params else [],
            "exclusive": exclusive,
        },
    )
    # DEBUG: a mint comes with every dashboard load and refresh; the app logs its other
    # writes at INFO (an end user's change is logged by services.end_users).
    logger.debug("Minted an embed token for user group team_id=%s", group.team_id)
    telemetry.minted(workspace_id, end_user=person is not None)
    return MintedToken(token, seconds, expires_at, group, person)


@sensitive_variables("token")
def introspect(workspace_id: int, token: object) -> EmbedGrant | None:
    """The grant of ``token`` if it is active for this workspace, else None (expired,
    forged, malformed, revoked, its group deleted, or another workspace's)."""
    try:
        grant = verification.grant_of(token)
    except tokens.InvalidEmbedToken:
        return None
    return grant if grant.group.workspace_id == workspace_id else None


def revoke_embed_tokens(group: UserGroup | GroupRecord | int) -> GroupRecord | None:
    """Revoke every embed token minted so far for ``group`` (a model, a record or a
    ``team_id``), leaving its group token alone; the group after, or None if it is gone.
    Sends ``embed_tokens_revoked`` after commit."""
    team_id = group if isinstance(group, int) else group.team_id
    return _revoke(UserGroup.objects.filter(pk=team_id))


def revoke_embed_tokens_of(
    workspace_id: int, provided_id: str, *, subtree: bool = False
) -> GroupRecord | None:
    """:func:`revoke_embed_tokens` for the workspace's group ``provided_id`` (the API's
    door); ``subtree``: its descendants' tokens too."""
    return _revoke(
        UserGroup.objects.filter(workspace_id=workspace_id, provided_id=provided_id),
        subtree=subtree,
    )


@telemetry.spanned("usergroups.embed.revoke", axis="user_group")
@retry_on_deadlock
def _revoke(matching: QuerySet[UserGroup], *, subtree: bool = False) -> GroupRecord | None:
    with read_model.writing(router.db_for_write(UserGroup)):
        row = matching.select_for_update().values_list("pk", "workspace_id", "provided_id").first()
        if row is None:
            return None
        team_id, workspace_id, provided_id = row
        # The group's row is locked: a move into or out of its subtree waits for this.
        team_ids = [group for group, _level in lineage.subtree(team_id)] if subtree else [team_id]
        UserGroup.objects.filter(pk__in=team_ids).update(
            embed_generation=F("embed_generation") + 1, embed_tokens_revoked_at=timezone.now()
        )
        audit.record(
            workspace_id,
            audit.EMBED_TOKEN_REVOKED,
            user_group_id=provided_id,
            details={
                "axis": "user_group",
                "team_id": team_id,
                "subtree": subtree,
                "groups": len(team_ids),
            },
        )
        record = lineage.find_group(lineage.BY_TEAM_ID, team_id)
    if record is None:  # a read of the row this transaction holds locked: never
        return None
    send_on_commit(embed_tokens_revoked, group=record)
    logger.info("Revoked the embed tokens of user group team_id=%s", record.team_id)
    telemetry.revoked("user_group", record.workspace_id)
    return record


@telemetry.spanned("usergroups.embed.revoke", axis="all")
@retry_on_deadlock
def revoke_workspace_embed_tokens(workspace_id: int) -> bool:
    """Revoke every embed token of the workspace minted so far, in every group, for
    every end user: one ``UPDATE`` of its generation. False if there is no such workspace."""
    with read_model.writing(router.db_for_write(Workspace)):
        changed = Workspace.objects.filter(pk=workspace_id).update(
            embed_generation=F("embed_generation") + 1, embed_tokens_revoked_at=timezone.now()
        )
        if changed:
            audit.record(workspace_id, audit.EMBED_TOKEN_REVOKED, details={"axis": "all"})
    if changed:
        logger.info("Revoked every embed token of workspace %s", workspace_id)
        telemetry.revoked("all", workspace_id)
    return bool(changed)


@telemetry.spanned("usergroups.embed.revoke", axis="embed_token")
@sensitive_variables("token")
def revoke_embed_token(workspace_id: int, token: object) -> EmbedGrant | None:
    """Revoke the one embed ``token`` if it is a live token of the workspace (else None:
    expired, forged, malformed, already revoked, another workspace's): its ``jti`` joins
    the denylist until the token expires. Rows of tokens that have expired are deleted
    on the way, so the list holds only live revoked tokens (``manage.py
    prune_revoked_embed_tokens`` does the same for a site that revokes rarely)."""
    grant = introspect(workspace_id, token)
    if grant is None:
        return None
    now = timezone.now()
    with read_model.writing(router.db_for_write(RevokedEmbedToken)):
        RevokedEmbedToken.objects.filter(expires_at__lte=now).delete()
        # A concurrent revocation of the same token wrote the row already: done too.
        RevokedEmbedToken.objects.bulk_create(
            [
                RevokedEmbedToken(
                    jti=grant.claims.jti,
                    workspace_id=workspace_id,
                    expires_at=grant.expires_at,
                    revoked_at=now,
                )
            ],
            ignore_conflicts=True,
        )
        audit.record(
            workspace_id,
            audit.EMBED_TOKEN_REVOKED,
            user_group_id=grant.group.provided_id,
            end_user_id=grant.end_user_id,
            details={"axis": "embed_token", "jti": grant.claims.jti},
        )
    logger.info(
        "Revoked embed token jti=%s of user group team_id=%s", grant.claims.jti, grant.group.team_id
    )
    telemetry.revoked("embed_token", workspace_id)
    return grant


def prune_revoked_embed_tokens() -> int:
    """Delete the denylist's rows of tokens that have expired (they verify no more
    anyway); how many."""
    with read_model.writing(router.db_for_write(RevokedEmbedToken)):
        deleted, _kinds = RevokedEmbedToken.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
