"""Signals about user groups and API keys, sent after the transaction that made the
change commits.

:mod:`usergroups.services.groups` sends them, and every door that changes a group (the
API, the admin, the management commands, host code calling the services) goes through
it, so each change is announced once, the same way (API keys: :mod:`usergroups.services.keys`). Writes that bypass the services
(``UserGroup.objects.update()``, a model's ``save()``) send nothing.

Every receiver gets ``sender`` (the ``UserGroup`` model) and ``group``, a
:class:`~usergroups.records.GroupRecord`: the group after the change (before it, for
``group_deleted``), whole, so reading any of it costs no query. No signal carries a
token as an argument; ``group.token`` unseals the current one for a receiver that needs
it.

A cascading delete sends ``group_deleted`` once for every group it deletes.
"""

from functools import partial
from typing import Any

from django.db import router, transaction
from django.db.models import Model
from django.dispatch import Signal

from usergroups.models import UserGroup

group_created = Signal()
group_updated = Signal()
token_rotated = Signal()
#: Also carries ``team_id`` (the same as ``group.team_id``).
group_deleted = Signal()
#: An API key was replaced (``rotate_api_key``, the admin's "rotate" action). Sent from
#: ``APIKey`` with ``old_key`` and ``new_key`` (the two :class:`~usergroups.models.APIKey`
#: rows: prefixes, workspace, scopes; never a key, which no row holds) and
#: ``old_key_valid_until``, the end of the old key's grace (its revocation time when 0).
api_key_rotated = Signal()

#: Sent (after ``group_updated``) when a group gets another parent, or none; also
#: carries ``old_parent_id`` and ``new_parent_id``: the parents' team ids, or None.
#: ``group.parent_user_group_id`` names the new parent.
group_moved = Signal()

#: Every embed token minted for ``group`` before now was revoked (the API's
#: ``/api/user/embed-token/revoke``, the admin, or host code calling
#: ``services.embed.revoke_embed_tokens``). Rotating or deleting a group revokes them
#: too, and says so with ``token_rotated`` / ``group_deleted`` instead.
embed_tokens_revoked = Signal()


def send_on_commit(signal: Signal, sender: type[Model] = UserGroup, **kwargs: Any) -> None:
    """Send ``signal`` from ``sender`` once the current transaction commits."""
    using = router.db_for_write(sender)
    transaction.on_commit(partial(signal.send, sender=sender, **kwargs), using=using)


#: End users (:mod:`usergroups.services.end_users`, the one writer of them). Sent from
#: ``EndUser`` with ``end_user``, an :class:`~usergroups.services.end_users.EndUserRecord`:
#: the person after the change (before it, for ``end_user_deleted``). An unchanged
#: create-or-update sends nothing. Disabling is an update.
end_user_created = Signal()
end_user_updated = Signal()
end_user_deleted = Signal()
#: Every embed token naming ``end_user`` minted before now is to be refused ("revoke
#: this person's tokens"); disabling and deleting say so with their own signals.
end_user_tokens_revoked = Signal()

#: Webhook deliveries (the outbox, :mod:`usergroups.services.outbox`) are due to be sent:
#: sent from ``WebhookDelivery`` with ``delivery_ids`` once the transaction that wrote or
#: reset them commits. :mod:`usergroups.tasks` enqueues a delivery task for each.
webhook_deliveries_due = Signal()
