"""Standard Webhooks signatures: ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">``, keyed with the
bytes of the ``whsec_`` secret (its base64 part decoded)."""

import base64
import hashlib
import hmac

from usergroups.crypto import WEBHOOK_SECRET_PREFIX


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(WEBHOOK_SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    mac = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
