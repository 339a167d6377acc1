"""The app's one door for writes: every change to a group or an API key goes through here.

One module per aggregate: :mod:`.groups` (groups and their mappings: get-or-create,
rotation, update, delete, list, resealing tokens), :mod:`.hierarchy` (the rules a
parent must keep: used by :mod:`.groups`, writes nothing), :mod:`.lineage` (the walks up
and down the hierarchy: a group with what it inherits, ancestors, descendants; reads only),
:mod:`.keys` (API keys: issue, lookup, use, change, revocation, deletion),
:mod:`.end_users` (end users: create-or-update, disable, revoke their tokens, delete) and
:mod:`.embed` (embed tokens: mint, introspect, verify, revoke on every axis; writes a
revocation, and an end user through :mod:`.end_users` when a mint names one). The API
views, the admin, the management commands and host code all call them, so signals,
logging and guarantees are the same from every door.
"""

from usergroups.services import embed, end_users, groups, hierarchy, keys, lineage

__all__ = ["embed", "end_users", "groups", "hierarchy", "keys", "lineage"]
