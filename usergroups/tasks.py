"""The app's tasks: webhook delivery through Django's Tasks framework, ``django.tasks`` on
Django 6, the ``django-tasks`` backport on 5.2 (this is the one place that knows which).
A queued task is stored by its path (``usergroups.tasks.deliver_webhook``), so the tasks
stay here, and what they do is :mod:`usergroups.webhooks`'s.

A task sends one delivery once (:func:`usergroups.webhooks.deliveries.attempt`) and, when
it is to be retried, enqueues :func:`retry_webhook` for the time the backoff gives. It
hands the attempt to its webhook's lane (:mod:`usergroups.webhooks.lanes`, up to
``WEBHOOK_ATTEMPTS_IN_FLIGHT`` in flight in a worker) and returns; when that setting is
1, it sends in its own thread. Retries, and the deliveries of a webhook whose latest attempt failed, run at a lower priority than
first deliveries, so that a receiver that hangs delays its own deliveries only. A backend
that cannot defer (``ImmediateBackend``) leaves the retry to the sweeper
(``manage.py sweep_webhooks``), which also enqueues deliveries whose task was lost.
The backend is ``USERGROUPS["WEBHOOK_TASK_BACKEND"]`` of ``TASKS``.
"""

from datetime import datetime
from typing import Any

from django.dispatch import receiver
from django.utils import timezone

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task  # type: ignore[no-redef]

from usergroups import audit_context
from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger
from usergroups.signals import webhook_deliveries_due
from usergroups.webhooks import deliveries
from usergroups.webhooks.lanes import Lanes

logger = get_logger(__name__)

#: The actor of what a delivery changes (a webhook disabled after failing).
WORKER = audit_context.system("webhook_delivery")

#: The priority of retries, and of deliveries to a webhook whose latest attempt failed:
#: below the default (0), so a worker takes every other delivery first and a receiver
#: that hangs delays only its own deliveries.
BEHIND_PRIORITY = -10


@task()
def deliver_webhook(delivery_id: str) -> None:
    """Send one delivery the first time (unless its webhook is failing: then behind the
    others), and enqueue its retry if it needs one."""
    _deliver(delivery_id, first=True)


@task()
def retry_webhook(delivery_id: str) -> None:
    """Send one delivery again (at :data:`BEHIND_PRIORITY`), and enqueue its next retry."""
    _deliver(delivery_id, first=False)


def _deliver(delivery_id: str, first: bool) -> None:
    most = usergroups_settings.WEBHOOK_ATTEMPTS_IN_FLIGHT
    if most == 1:
        take_turn(delivery_id, first)
    elif (webhook_id := deliveries.webhook_of(delivery_id)) is not None:
        LANES.give(webhook_id, delivery_id, first, most)


def take_turn(delivery_id: str, first: bool) -> deliveries.Attempted:
    """Send a delivery once, if its turn has come, and enqueue its next turn if it has one."""
    with audit_context.acting(WORKER):
        attempted = deliveries.attempt(delivery_id, first=first)
    _follow(delivery_id, attempted)
    return attempted


def put_off(delivery_id: str, until: datetime) -> None:
    """Put a delivery's turn off to ``until``, behind others, and enqueue it for then."""
    _follow(delivery_id, deliveries.put_off(delivery_id, until))


def _follow(delivery_id: str, attempted: deliveries.Attempted) -> None:
    if attempted.retry_at is not None:
        enqueue(delivery_id, run_after=attempted.retry_at, behind=attempted.behind)


#: This process's lanes: the attempts it has in flight, each to a different webhook.
LANES = Lanes(take_turn, put_off)


def enqueue(delivery_id: str, run_after: datetime | None = None, behind: bool = False) -> bool:
    """Enqueue the delivery's task (at ``run_after``; ``behind`` other deliveries when the
    backend has priorities); False when the backend cannot defer it, which leaves it to
    the sweeper."""
    deliver = (retry_webhook if behind else deliver_webhook).using(
        backend=usergroups_settings.WEBHOOK_TASK_BACKEND
    )
    backend = deliver.get_backend()
    if behind and backend.supports_priority:
        deliver = deliver.using(priority=BEHIND_PRIORITY)
    if run_after is not None and run_after > timezone.now():
        if not backend.supports_defer:
            return False
        deliver = deliver.using(run_after=run_after)
    deliver.enqueue(delivery_id)
    return True


@receiver(webhook_deliveries_due)
def enqueue_due(sender: Any, delivery_ids: list[str], **kwargs: Any) -> None:
    for delivery_id in delivery_ids:
        enqueue(delivery_id)


def sweep(limit: int = 1000) -> int:
    """Enqueue every pending delivery that is due: how many."""
    due = deliveries.due_deliveries(limit)
    for delivery_id, behind in due:
        enqueue(delivery_id, behind=behind)
    if due:
        logger.info("Enqueued %s due webhook delivery(ies) again", len(due))
    return len(due)
