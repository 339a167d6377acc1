"""Signals about user groups, sent after the transaction that made the change commits.

Every receiver gets ``group`` (a :class:`UserGroup`). Saves and deletes are relayed from
Django's model signals, so the API, the admin and any host code send them alike;
rotation, which updates in place, sends ``token_rotated`` itself. No signal carries a
token.
"""

from functools import partial

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal

group_created = Signal()
group_updated = Signal()
token_rotated = Signal()
#: Also carries ``team_id``: the instance's own primary key is cleared by the delete.
group_deleted = Signal()


def send_on_commit(signal: Signal, sender, **kwargs) -> None:
    transaction.on_commit(partial(signal.send, sender=sender, **kwargs))


def relay_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if not raw:  # fixtures loading is not an event
        send_on_commit(group_created if created else group_updated, sender, group=instance)


def relay_deleted(sender, instance, **kwargs) -> None:
    send_on_commit(group_deleted, sender, group=instance, team_id=instance.pk)


def connect(model) -> None:
    post_save.connect(relay_saved, sender=model, dispatch_uid="usergroups.relay_saved")
    post_delete.connect(relay_deleted, sender=model, dispatch_uid="usergroups.relay_deleted")
