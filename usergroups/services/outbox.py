"""The webhook outbox: one :class:`~usergroups.models.WebhookDelivery` per (event,
webhook), written by :func:`usergroups.services.audit.record` in the event's transaction.

A rolled-back change leaves no event and so no delivery; a committed event has one for
each webhook it matched, which a worker sends after the commit (at least once: a
delivery whose task is lost stays pending, and the sweeper enqueues it again). It
stands here, beside the audit writer, and not in :mod:`usergroups.webhooks`, which
records events itself: so the two import each other in one direction only.
"""

import secrets
from collections.abc import Iterable, Sequence
from functools import partial

from django.db import router, transaction

from usergroups.models import AuditEvent, Webhook, WebhookDelivery
from usergroups.read_model import reads
from usergroups.signals import webhook_deliveries_due


def new_delivery_id() -> str:
    """The ``webhook-id`` of a delivery: the same on every attempt."""
    return f"msg_{secrets.token_hex(12)}"


def matches(prefixes: Iterable[str], action: str) -> bool:
    """Whether a webhook subscribed to ``prefixes`` receives ``action``: a prefix names
    an action or a dotted family of them (``"user_group"``, ``"embed_token.minted"``)."""
    return any(action == prefix or action.startswith(prefix + ".") for prefix in prefixes)


def announce_on_commit(delivery_ids: list[str]) -> None:
    """Once the transaction commits, say the deliveries are due (the tasks enqueue
    them); a failure to enqueue is logged, not raised: the sweeper covers it."""
    send = partial(webhook_deliveries_due.send, sender=WebhookDelivery, delivery_ids=delivery_ids)
    transaction.on_commit(send, using=router.db_for_write(WebhookDelivery), robust=True)


def webhooks_of(workspace_ids: Iterable[int]) -> list[Webhook]:
    """The enabled webhooks of ``workspace_ids``: one SELECT, none on PostgreSQL for a
    workspace read before (:mod:`usergroups.read_model`)."""
    return [
        webhook
        for workspace_id in sorted(set(workspace_ids))
        for webhook in reads.WEBHOOKS(workspace_id, partial(_enabled_webhooks, workspace_id)) or ()
    ]


def _enabled_webhooks(workspace_id: int, using: str) -> tuple[Webhook, ...]:
    return tuple(
        Webhook.objects.using(using)
        .filter(workspace_id=workspace_id, disabled=False)
        .only("pk", "workspace_id", "events")
        .order_by("pk")
    )


def deliveries_of(
    events: Sequence[AuditEvent], webhooks: Sequence[Webhook]
) -> list[WebhookDelivery]:
    """A delivery of each event for each of ``webhooks`` of its workspace that receives
    its action (unsaved)."""
    return [
        WebhookDelivery(
            delivery_id=new_delivery_id(),
            webhook_id=webhook.pk,
            event=event,
            created_at=event.at,
            next_attempt_at=event.at,
        )
        for event in events
        for webhook in webhooks
        if webhook.workspace_id == event.workspace_id and matches(webhook.events, event.action)
    ]


def add_deliveries(deliveries: list[WebhookDelivery]) -> list[str]:
    """Write ``deliveries`` (in the caller's transaction, with their events) in one
    INSERT, and have them enqueued once it commits; their ids."""
    if not deliveries:
        return []
    WebhookDelivery.objects.bulk_create(deliveries)
    ids = [delivery.delivery_id for delivery in deliveries]
    announce_on_commit(ids)
    return ids
