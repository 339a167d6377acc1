"""The webhooks a workspace registers (CONTRACT section 8): registration, listing and
deletion for the API and the admin; disabling (by staff, or after failed deliveries),
the admin's other changes, and resealing the signing secrets. Each change records its
event in its own transaction. What a delivery writes of its webhook (its hold, its
failures) is :mod:`usergroups.webhooks.deliveries`'s.
"""

import secrets
from contextlib import AbstractContextManager
from urllib.parse import urlsplit

from django.db import router, transaction

from usergroups import crypto, read_model
from usergroups.logs import get_logger
from usergroups.models import Webhook
from usergroups.services import audit

logger = get_logger(__name__)


def atomic() -> transaction.Atomic:
    """A transaction on the database that webhooks and their deliveries are written to."""
    return transaction.atomic(using=router.db_for_write(Webhook))


def _changing() -> AbstractContextManager[None]:
    """:func:`atomic` for a change of a webhook that reads remember: answered once heard."""
    return read_model.writing(router.db_for_write(Webhook))


def new_webhook_id() -> str:
    return f"wh_{secrets.token_hex(12)}"


def _named(webhook: Webhook) -> dict[str, object]:
    """What an event says of a webhook: its id, the host it sends to (not the whole URL,
    whose path or query may hold a receiver's own secret) and its event prefixes."""
    return {
        "webhook_id": webhook.webhook_id,
        "host": urlsplit(webhook.url).hostname,
        "events": webhook.events,
    }


def create_webhook(
    workspace_id: int, url: str, events: list[str], description: str = ""
) -> tuple[Webhook, str]:
    """A new webhook and its signing secret (shown once: only sealed at rest)."""
    secret = crypto.new_webhook_secret()
    webhook = Webhook(
        workspace_id=workspace_id,
        webhook_id=new_webhook_id(),
        url=url,
        events=list(events),
        description=description,
    )
    webhook.set_secret(secret)
    with _changing():
        webhook.save(force_insert=True)
        audit.record(workspace_id, audit.WEBHOOK_CREATED, details=_named(webhook))
    logger.info("Webhook %s created in workspace %s", webhook.webhook_id, workspace_id)
    return webhook, secret


def list_webhooks(workspace_id: int) -> list[Webhook]:
    return list(Webhook.objects.filter(workspace_id=workspace_id).order_by("created_at", "id"))


def delete_webhook(workspace_id: int, webhook_id: str) -> Webhook | None:
    """Delete the workspace's webhook ``webhook_id`` (and its deliveries); None if none."""
    with _changing():
        webhook = (
            Webhook.objects.select_for_update()
            .filter(workspace_id=workspace_id, webhook_id=webhook_id)
            .first()
        )
        if webhook is None:
            return None
        webhook.delete()
        audit.record(workspace_id, audit.WEBHOOK_DELETED, details=_named(webhook))
    logger.info("Webhook %s deleted from workspace %s", webhook_id, workspace_id)
    return webhook


def disable_webhook(webhook: Webhook, reason: str) -> bool:
    """Disable ``webhook`` with a ``webhook.disabled`` event; False if it already was."""
    with _changing():
        changed = Webhook.objects.filter(pk=webhook.pk, disabled=False).update(disabled=True)
        if changed:
            audit.record(
                webhook.workspace_id,
                audit.WEBHOOK_DISABLED,
                details={**_named(webhook), "reason": reason},
            )
    if changed:
        logger.warning("Webhook %s disabled: %s", webhook.webhook_id, reason)
    return bool(changed)


def change_webhook(pk: int, *, description: str, disabled: bool) -> None:
    """The admin's change: the description, and disabling (with its event) or enabling
    again (the failure count starts over)."""
    stored = Webhook.objects.get(pk=pk)
    if disabled and not stored.disabled:
        disable_webhook(stored, "disabled by staff")
    with _changing():
        changes: dict[str, object] = {"description": description}
        if not disabled:
            changes.update(disabled=False, consecutive_failures=0, failing=False)
        Webhook.objects.filter(pk=pk).update(**changes)


def reseal_secrets() -> tuple[int, int]:
    """Reseal every webhook secret with the current server secret: ``(resealed, lost)``;
    a lost one opens with no configured secret, and its deliveries fail until the webhook
    is registered again. Run while the old secret is still a fallback."""
    resealed = lost = 0
    rows = Webhook.objects.only("pk", "secret_digest", "secret_sealed")
    for webhook in rows.iterator(chunk_size=1000):
        secret = webhook.secret()
        if secret is None:
            lost += 1
            continue
        sealed = crypto.seal_webhook_secret(secret, webhook.secret_digest)
        if sealed != webhook.secret_sealed:
            with atomic():
                Webhook.objects.filter(pk=webhook.pk, secret_digest=webhook.secret_digest).update(
                    secret_sealed=sealed
                )
            resealed += 1
    if resealed:
        logger.info("Resealed %s webhook secret(s) with the current secret", resealed)
    return resealed, lost
