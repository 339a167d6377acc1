"""The app's one door for writes: every change to a group, an API key, an end user, an
embed token's revocation or an audit event goes through here (a webhook's, through
:mod:`usergroups.webhooks`, which stands above these and records its events here).

One module per aggregate: :mod:`.groups` (groups and their mappings: get-or-create,
rotation, update, delete, list, resealing tokens), :mod:`.hierarchy` (the rules a
parent must keep: used by :mod:`.groups`, writes nothing), :mod:`.lineage` (the walks up
and down the hierarchy: a group with what it inherits, ancestors, descendants; reads only),
:mod:`.statements` (the hot reads of :mod:`.lineage` as SQL the ORM cannot say, run by
``Manager.raw()``), :mod:`.keys` (API keys: issue, lookup, use, change, revocation,
deletion), :mod:`.end_users` (end users: create-or-update, disable, revoke their tokens,
delete), :mod:`.embed` (embed tokens: mint, introspect, verify, revoke on every axis;
writes a revocation, a mint's audit event, and an end user through :mod:`.end_users`
when a mint names one), :mod:`.audit` (the audit trail: the one writer of events, which
every other module calls in its transaction; the list, export and pruning),
:mod:`.outbox` (a webhook delivery per matching event, written with it); :mod:`.retry`
runs again a transaction the database rolled back for a deadlock. The API views, the
admin, the management commands and host code all call them, so signals, logging and
guarantees are the same from every door.
"""

from usergroups.services import audit, embed, end_users, groups, hierarchy, keys, lineage

__all__ = ["audit", "embed", "end_users", "groups", "hierarchy", "keys", "lineage"]
