"""A webhook delivery's life: its attempts, each sent once by a task of
:mod:`usergroups.tasks` (:func:`attempt`), until delivered, or failed after
``WEBHOOK_MAX_ATTEMPTS``; the sweeper's list of due deliveries and the admin's
redelivery (CONTRACT section 8). The deliveries themselves are written with each event
by :mod:`usergroups.services.outbox`.
"""

import json
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Case, F, Q, When
from django.utils import timezone

from usergroups import telemetry
from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger
from usergroups.models import Webhook, WebhookDelivery
from usergroups.services import audit
from usergroups.services.outbox import announce_on_commit
from usergroups.webhooks import addresses, sending, signing
from usergroups.webhooks.registry import atomic, disable_webhook

logger = get_logger(__name__)


def backoff(attempts: int) -> timedelta:
    """The wait after ``attempts`` failed attempts: exponential, capped, with jitter (down
    to half), so receivers coming back are not hit by every sender at once."""
    base = float(usergroups_settings.WEBHOOK_RETRY_BASE_SECONDS)
    ceiling = float(usergroups_settings.WEBHOOK_RETRY_MAX_SECONDS)
    delay = min(base * 2 ** max(attempts - 1, 0), ceiling)
    return timedelta(seconds=delay * random.uniform(0.5, 1.0))


def payload(delivery: WebhookDelivery) -> bytes:
    """The body: ``{"type": action, "timestamp": at, "data": event}`` as compact JSON."""
    data = audit.as_dict(delivery.event)
    message = {"type": data["action"], "timestamp": data["at"], "data": data}
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def webhook_of(delivery_id: str) -> int | None:
    """The webhook (its pk) of a pending delivery; None when it is no longer pending."""
    return (
        WebhookDelivery.objects.filter(delivery_id=delivery_id, status=WebhookDelivery.PENDING)
        .values_list("webhook_id", flat=True)
        .first()
    )


def claim(delivery_id: str, now: datetime, attempts: int | None = None) -> bool:
    """Take a due pending delivery for one attempt: count it and move ``next_attempt_at``
    past the lease, so no other worker sends it meanwhile (one UPDATE); with
    ``attempts``, only if it has had that many still."""
    due = WebhookDelivery.objects.filter(
        delivery_id=delivery_id, status=WebhookDelivery.PENDING, next_attempt_at__lte=now
    )
    if attempts is not None:
        due = due.filter(attempts=attempts)
    with atomic():
        return bool(
            due.update(attempts=F("attempts") + 1, last_attempt_at=now, next_attempt_at=_lease(now))
        )


def _lease(now: datetime) -> datetime:
    return now + timedelta(seconds=float(usergroups_settings.WEBHOOK_LEASE_SECONDS))


def hold(webhook: Webhook, now: datetime) -> datetime | None:
    """Hold ``webhook`` for one attempt: at most one attempt is in flight to a webhook, so
    a receiver that hangs holds one lane of one worker, never more. Until when it is held (a
    lease, over on its own if the worker dies), or None if another attempt holds it."""
    until = _lease(now)
    free = Q(sending_until__isnull=True) | Q(sending_until__lte=now)
    with atomic():
        held = Webhook.objects.filter(free, pk=webhook.pk).update(sending_until=until)
    return until if held else None


def _release(webhook: Webhook, until: datetime, outcome: sending.Outcome | None) -> None:
    """End the hold taken until ``until`` (if still ours) and record how the attempt went,
    if one was made: a delivered one also starts the count of failed deliveries over."""
    changes: dict[str, object] = {
        "sending_until": Case(When(sending_until=until, then=None), default=F("sending_until"))
    }
    if outcome is not None:
        changes["failing"] = not outcome.delivered
        if outcome.delivered:
            changes["consecutive_failures"] = 0
    with atomic():
        Webhook.objects.filter(pk=webhook.pk).update(**changes)


def _send(delivery: WebhookDelivery) -> sending.Outcome:
    webhook = delivery.webhook
    if webhook.disabled:
        return sending.Outcome(None, "The webhook is disabled.")
    secret = webhook.secret()
    if secret is None:
        return sending.Outcome(None, "The signing secret cannot be unsealed.")
    try:
        target = addresses.resolve(
            webhook.url, allow_private=usergroups_settings.WEBHOOK_ALLOW_PRIVATE
        )
    except addresses.RefusedURL as exc:
        return sending.Outcome(None, f"Refused: {exc}")
    body = payload(delivery)
    headers = signing.headers(secret, delivery.delivery_id, int(time.time()), body)
    timeouts = sending.Timeouts(
        connect=float(usergroups_settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS),
        exchange=float(usergroups_settings.WEBHOOK_TIMEOUT_SECONDS),
    )
    return sending.post(target, body, headers, timeouts)


#: Seconds a delivery waits when another attempt to its webhook, which answers, is in flight.
BUSY_WAIT_SECONDS = 1.0


@dataclass(frozen=True)
class Attempted:
    """What :func:`attempt` did: ``outcome`` None when nothing was sent (not due: sent,
    given up or held by another worker; or its turn not come); ``retry_at`` when it is to
    be tried again, ``behind`` when then after other webhooks' deliveries (its webhook
    is failing, or this was a retry)."""

    outcome: sending.Outcome | None
    retry_at: datetime | None = None
    behind: bool = False


def attempt(delivery_id: str, *, first: bool = False) -> Attempted:
    """Send a due delivery once and record how it went: delivered; pending with the next
    attempt's time; or failed, after WEBHOOK_MAX_ATTEMPTS (the webhook is disabled after
    WEBHOOK_DISABLE_AFTER_FAILURES failed deliveries in a row).

    Nothing is sent while another attempt to the same webhook is in flight (it waits
    its turn), nor, for a ``first`` turn, when the webhook's latest attempt failed: it
    goes behind the deliveries of webhooks that answer, so a receiver that hangs
    delays only its own deliveries."""
    now = timezone.now()
    delivery = (
        WebhookDelivery.objects.select_related("webhook", "event")
        .filter(delivery_id=delivery_id, status=WebhookDelivery.PENDING, next_attempt_at__lte=now)
        .first()
    )
    if delivery is None:  # not due, or its webhook deleted meanwhile
        return Attempted(None)
    webhook = delivery.webhook
    if first and webhook.failing:
        return _turn_later(delivery, now, behind=True)
    until = hold(webhook, now)
    if until is None:
        wait = timedelta(seconds=BUSY_WAIT_SECONDS)
        if webhook.failing and webhook.sending_until is not None:
            wait = max(webhook.sending_until - now, wait)  # after the attempt that hangs
        return _turn_later(delivery, now + wait, behind=webhook.failing or not first)
    outcome = None
    try:
        if not claim(delivery_id, now, attempts=delivery.attempts):
            return Attempted(None)
        delivery.attempts += 1
        with telemetry.webhook_attempt(delivery.delivery_id):
            outcome = _send(delivery)
            telemetry.webhook_attempted(outcome.status)
        return _record(delivery, outcome, now)
    finally:
        _release(webhook, until, outcome)


def put_off(delivery_id: str, at: datetime) -> Attempted:
    """Put a due delivery's turn off to ``at``, behind other webhooks' deliveries: it
    waited behind an attempt to its webhook that failed."""
    delivery = WebhookDelivery.objects.filter(
        delivery_id=delivery_id, status=WebhookDelivery.PENDING, next_attempt_at__lte=at
    ).first()
    if delivery is None:  # sent, or put off further already
        return Attempted(None)
    return _turn_later(delivery, at, behind=True)


def _turn_later(delivery: WebhookDelivery, at: datetime, behind: bool) -> Attempted:
    """Put off a delivery's turn (not an attempt) to ``at``. A delivery may have several
    tasks (the sweeper's among them): the one that moves its due time (a compare-and-swap
    on it) enqueues the next, the others end."""
    with atomic():
        moved = WebhookDelivery.objects.filter(
            pk=delivery.pk,
            status=WebhookDelivery.PENDING,
            next_attempt_at=delivery.next_attempt_at,
        ).update(next_attempt_at=at)
    return Attempted(None, retry_at=at, behind=behind) if moved else Attempted(None)


def _record(delivery: WebhookDelivery, outcome: sending.Outcome, now: datetime) -> Attempted:
    """Write how an attempt went, the delivery's new state and the webhook's failures."""
    state = {
        "last_status_code": outcome.status,
        "last_response": outcome.excerpt,
        "last_attempt_at": now,
    }
    pending = WebhookDelivery.objects.filter(pk=delivery.pk, status=WebhookDelivery.PENDING)
    webhook = delivery.webhook
    if outcome.delivered:
        with atomic():
            pending.update(status=WebhookDelivery.DELIVERED, **state)
        telemetry.webhook_delivered(delivery.event.at)
        return Attempted(outcome)
    if delivery.attempts < usergroups_settings.WEBHOOK_MAX_ATTEMPTS and not webhook.disabled:
        retry_at = timezone.now() + backoff(delivery.attempts)
        with atomic():
            pending.update(next_attempt_at=retry_at, **state)
        return Attempted(outcome, retry_at, behind=True)
    with atomic():
        pending.update(status=WebhookDelivery.FAILED, **state)
        Webhook.objects.filter(pk=webhook.pk).update(
            consecutive_failures=F("consecutive_failures") + 1
        )
        failures = Webhook.objects.values_list("consecutive_failures", flat=True).get(pk=webhook.pk)
    telemetry.webhook_failed()
    logger.warning(
        "Webhook delivery %s failed after %s attempt(s)", delivery.delivery_id, delivery.attempts
    )
    limit = usergroups_settings.WEBHOOK_DISABLE_AFTER_FAILURES
    if failures >= limit and not webhook.disabled:
        disable_webhook(webhook, f"{failures} deliveries failed in a row")
    return Attempted(outcome)


def due_deliveries(limit: int = 1000) -> list[tuple[str, bool]]:
    """Pending deliveries overdue by a lease (WEBHOOK_LEASE_SECONDS): their task lost, or
    their worker killed mid-send and its lease over. A retry whose task is queued runs
    when due, so it is not taken again meanwhile. Oldest first, for the sweeper: each id,
    and whether it goes behind other deliveries (a retry, or its webhook failing), so
    that the sweeper's tasks never crowd out the retries they stand for."""
    lease = timedelta(seconds=float(usergroups_settings.WEBHOOK_LEASE_SECONDS))
    rows = (
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.PENDING, next_attempt_at__lte=timezone.now() - lease
        )
        .order_by("next_attempt_at")
        .values_list("delivery_id", "attempts", "webhook__failing")[:limit]
    )
    return [(delivery_id, attempts > 0 or failing) for delivery_id, attempts, failing in rows]


def redeliver(pks: Iterable[int]) -> int:
    """Send these deliveries again from their first attempt (the admin's action), with
    the same ``webhook-id``: how many."""
    now = timezone.now()
    with atomic():
        chosen = WebhookDelivery.objects.filter(pk__in=list(pks))
        ids = list(chosen.values_list("delivery_id", flat=True))
        chosen.update(status=WebhookDelivery.PENDING, attempts=0, next_attempt_at=now)
        announce_on_commit(ids)
    return len(ids)
