"""What a notification says changed, and what a remembered answer depends on: the two
ends of one vocabulary, written here once.

The triggers of migration 0016 notify channel ``usergroups`` with
``"<transaction id> <kind> <what>"``:

==========  ==================================  =======================================
kind        what                                written by a change to
==========  ==================================  =======================================
``w``       a workspace id                      the workspace's row
``g``       a group's ``team_id``               the group's row, or its mapping's
``u``       workspace id, then ``end_user_id``  the person's row
``k``       an API key's ``public_id``          the key's row (but its use alone)
``l``       an API key's ``public_id``          the key's ``last_used_at`` alone
``t``       a token's ``jti``                   the denylist
``h``       a workspace id                      a webhook's row
``*``       (nothing)                           a TRUNCATE: everything
==========  ==================================  =======================================

A remembered answer names what it depends on with the functions below; forgetting a
change forgets the answers that depend on it, and no other. A payload of 0.4's
triggers (a bare workspace id, or ``*``), met during a rolling upgrade, still forgets
that workspace or everything; anything else unreadable forgets everything.
"""

from collections.abc import Hashable
from typing import NamedTuple


class Change(NamedTuple):
    #: What telemetry names the change by.
    reason: str
    dependency: Hashable


#: A change that no dependency names: forget everything.
EVERYTHING = Change("all", None)


def workspace(workspace_id: int) -> Hashable:
    return ("w", workspace_id)


def group(team_id: int) -> Hashable:
    return ("g", team_id)


def person(workspace_id: int, end_user_id: str) -> Hashable:
    return ("u", workspace_id, end_user_id)


def key(public_id: str) -> Hashable:
    return ("k", public_id)


def key_use(public_id: str) -> Hashable:
    return ("l", public_id)


def token(jti: str) -> Hashable:
    return ("t", jti)


def webhooks(workspace_id: int) -> Hashable:
    return ("h", workspace_id)


_REASONS = {
    "w": "workspace",
    "g": "group",
    "u": "person",
    "k": "key",
    "l": "key",
    "t": "denylist",
    "h": "webhooks",
}
_NUMBERED = {"w", "g", "h"}


def parse(payload: str) -> tuple[int | None, Change]:
    """The writing transaction's id (None when the payload has none) and the change."""
    parts = payload.split(" ", 2)
    try:
        if len(parts) == 1:  # 0.4's triggers
            return None, EVERYTHING if payload == "*" else Change("workspace", ("w", int(payload)))
        xid, kind = int(parts[0]), parts[1]
        if kind == "*":
            return xid, EVERYTHING
        what = parts[2]
        if kind == "u":
            workspace_id, end_user_id = what.split(" ", 1)
            return xid, Change("person", person(int(workspace_id), end_user_id))
        if kind in _NUMBERED:
            return xid, Change(_REASONS[kind], (kind, int(what)))
        if kind in _REASONS:
            return xid, Change(_REASONS[kind], (kind, what))
    except (ValueError, IndexError):
        pass
    return None, EVERYTHING
