"""Every read the read model remembers, in one place: its key, what it depends on
(:mod:`usergroups.read_model.changes`), what it weighs, and the database it reads.

A service calls its plain read through one of these (``API_KEY(digest, load)``), where
``load(using)`` reads the database alias it is given: with the read model on, the
primary (``router.db_for_write``), which is the database the process hears, never a
replica that may lag behind a notification already heard; otherwise the router's
choice for reading. Only found answers (not None) are remembered. What memory hands out
cannot be changed by its receiver: records and grants are read-only all the way down
(:mod:`usergroups.frozen`), and a model row is handed out as a copy of its own.
"""

import copy
import dataclasses
import sys
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from django.db import router
from django.db.models import Model

from usergroups import telemetry
from usergroups.embed.grant import EmbedGrant
from usergroups.models import APIKey, UserGroup, Webhook
from usergroups.read_model import changes, enabled, trusted_memory
from usergroups.read_model.memory import MISSING, weigh
from usergroups.records import GroupRecord

T = TypeVar("T")

#: What a row or a small record weighs, beyond its JSON values.
ROW_BYTES = 1024


class Read(Generic[T]):
    """One remembered read. ``depends_on(key, answer)``: what a change must name to
    forget it; ``weight(answer)``: its bytes; ``hand_out``: what a receiver gets of a held
    answer; ``shared(answer)``: ``(key, part, bytes)`` of a part other answers hold too,
    and ``rebuild(answer, part)`` the answer holding the one copy kept of it."""

    def __init__(
        self,
        name: str,
        model: type[Model],
        depends_on: Callable[[Any, T], Iterable[Hashable]],
        weight: Callable[[T], int],
        *,
        hand_out: Callable[[T], T] | None = None,
        shared: Callable[[T], tuple[Hashable, Any, int]] | None = None,
        rebuild: Callable[[T, Any], T] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.depends_on = depends_on
        self.weight = weight
        self.hand_out = hand_out
        self.shared = shared
        self.rebuild = rebuild

    def database(self, on: bool | None = None) -> str:
        """The alias this read loads from (``on``: :func:`enabled`'s answer, if known)."""
        if enabled() if on is None else on:
            return router.db_for_write(self.model)
        return router.db_for_read(self.model)

    def __call__(self, key: Hashable, load: Callable[[str], T | None]) -> T | None:
        on = enabled()
        using = self.database(on)
        memory = trusted_memory(using, on=True) if on else None
        if memory is None:
            return self._load(load, using)
        held = memory.get((self.name, key))
        if held is not MISSING:
            telemetry.read_model_answered(self.name, "memory")
            return held if self.hand_out is None else self.hand_out(held)
        mark = memory.mark()
        answer = self._load(load, using)
        if answer is None:
            return None
        part = None
        if self.shared is not None and self.rebuild is not None:
            part_key, value, part_weight = self.shared(answer)
            kept = memory.share(part_key, value, part_weight)
            if kept is not value:
                answer = self.rebuild(answer, kept)
            part = (part_key, kept, part_weight)
        key_weight = sys.getsizeof(key) + sum(sys.getsizeof(item) for item in _items(key))
        memory.put(
            (self.name, key),
            answer,
            self.depends_on(key, answer),
            mark,
            key_weight + self.weight(answer),
            part,
        )
        return answer if self.hand_out is None else self.hand_out(answer)

    def _load(self, load: Callable[[str], T | None], using: str) -> T | None:
        telemetry.read_model_answered(self.name, "database")
        with telemetry.span("usergroups.read_model.load", read=self.name):
            return load(using)


def _items(key: Hashable) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else ()


def record_weight(record: GroupRecord) -> int:
    return ROW_BYTES + sum(
        weigh(value)
        for value in (
            record.properties,
            record.computed_properties,
            record.mapping,
            record.computed_mapping,
            record.variable_sources,
        )
    )


def lineage(record: GroupRecord) -> list[Hashable]:
    """A group's answers depend on it and on each of its ancestors."""
    return [changes.group(team_id) for team_id in (*record.ancestor_ids, record.team_id)]


#: An API key by its digest: its row, a copy for each receiver (``request.auth``).
API_KEY: Read[APIKey] = Read(
    "api key",
    APIKey,
    lambda digest, row: (
        changes.workspace(row.workspace_id),
        changes.key(row.public_id),
        changes.key_use(row.public_id),
    ),
    lambda row: ROW_BYTES,
    hand_out=copy.copy,
)


def _group_to_mint_depends_on(key: tuple[int, str, str | None], found: Any) -> list[Hashable]:
    workspace_id, _provided_id, end_user_id = key
    group, _person = found
    dependencies = [changes.workspace(workspace_id), changes.group(group.team_id)]
    if end_user_id is not None:  # the person, found or not yet
        dependencies.append(changes.person(workspace_id, end_user_id))
    return dependencies


#: The group a mint names by ``(workspace id, provided_id, end_user_id)`` (its own row),
#: with the person named, if any and found.
GROUP_TO_MINT: Read[Any] = Read(
    "group to mint",
    UserGroup,
    _group_to_mint_depends_on,
    lambda found: ROW_BYTES * 2 + (0 if found[1] is None else weigh(found[1].attributes)),
)

#: A workspace's enabled webhooks, by its id (an empty answer is an answer).
WEBHOOKS: Read[tuple[Webhook, ...]] = Read(
    "webhooks",
    Webhook,
    lambda workspace_id, found: (
        changes.workspace(workspace_id),
        changes.webhooks(workspace_id),
    ),
    lambda found: ROW_BYTES + sum(ROW_BYTES + weigh(webhook.events) for webhook in found),
)


def _grant_depends_on(token: str, grant: EmbedGrant) -> list[Hashable]:
    claims, workspace_id = grant.claims, grant.group.workspace_id
    dependencies = [
        changes.workspace(workspace_id),
        *lineage(grant.group),
        changes.token(claims.jti),
    ]
    if claims.binding.key_id is not None:
        dependencies.append(changes.key(claims.binding.key_id))
    if claims.end_user_id is not None:
        dependencies.append(changes.person(workspace_id, claims.end_user_id))
    return dependencies


def _grant_weight(grant: EmbedGrant) -> int:
    weight = ROW_BYTES + weigh(grant.claims.raw) + weigh(grant.end_user_attributes)
    if grant.variables is not grant.group.computed_properties:  # layered: its own top level
        weight += weigh(grant.variable_sources) + sys.getsizeof(grant.variables)
    return weight


def _shared_record(record: GroupRecord) -> tuple[Hashable, GroupRecord, int]:
    return ("group record", record.team_id), record, record_weight(record)


#: A group by ``(workspace id, provided_id)``, with what it inherits; its record is
#: held once for every answer that holds it.
GROUP: Read[GroupRecord] = Read(
    "user group",
    UserGroup,
    lambda key, record: (changes.workspace(record.workspace_id), *lineage(record)),
    lambda record: 0,  # all of it is the shared record
    shared=_shared_record,
    rebuild=lambda record, kept: kept,
)

#: An embed token's grant, by the token: what it is bound to, and its group's record,
#: held once however many of the group's tokens are remembered.
GRANT: Read[EmbedGrant] = Read(
    "embed token",
    UserGroup,
    _grant_depends_on,
    _grant_weight,
    shared=lambda grant: _shared_record(grant.group),
    rebuild=lambda grant, group: dataclasses.replace(grant, group=group),
)
