"""What a leaked secret looks like, for the tests that look for one where none may be
(database dumps, logs, error reports, a server's output).

A secret is an API key (``ugk_…``), a group token (``ugt_…``), a webhook secret
(``whsec_…``) or an embed token (a
JWS, ``eyJ….eyJ….…``: :func:`secrets_in` finds them; :func:`fragments` is for the first two). Besides the secret
itself, a leak may show only its random part, a piece of it, or its raw bytes in hex or
in standard base64; :func:`fragments` lists all of these so a test can look for each.
"""

import base64
import re

from usergroups import crypto

# A window of the random part this long is a leak (a key's lookup prefix is public).
WINDOW = 16


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fragments(secret: str) -> set[str]:
    """Every string whose presence would give ``secret`` (or most of it) away."""
    assert secret.startswith((crypto.KEY_PREFIX, crypto.TOKEN_PREFIX)), secret
    random_part = secret[4:]
    # An API key's first characters are stored and logged on purpose: its prefix names it.
    public = crypto.KEY_LOOKUP_LENGTH - 4 if secret.startswith(crypto.KEY_PREFIX) else 0
    private = random_part[public:]
    raw = _unb64(random_part)
    found = {secret, random_part, raw.hex(), raw.hex().upper()}
    found.add(base64.b64encode(raw).decode().rstrip("="))
    found.update(private[i : i + WINDOW] for i in range(len(private) - WINDOW + 1))
    return found


def find_leaks(haystack: str | bytes, secrets: dict[str, str]) -> list[str]:
    """Names of the ``{name: secret}`` entries of which some fragment is in ``haystack``."""
    if isinstance(haystack, bytes):
        # Text may be stored as UTF-8 (SQLite, dumps) or UTF-16; look in both.
        texts = [haystack.decode("latin-1"), haystack.decode("utf-16-le", errors="ignore")]
    else:
        texts = [haystack]
    leaks: list[str] = []
    for name, secret in secrets.items():
        for fragment in sorted(fragments(secret)):
            if any(fragment in text for text in texts):
                leaks.append(f"{name}: {fragment!r}")
                break
    return leaks


# A whole API key or group token, wherever it stands in a text; or an embed token: a JWS
# in compact form, three base64url parts of which the first two are JSON objects ("eyJ" is
# '{"' in base64). A payload and signature alone are a usable token too, if the header is
# guessed: a header followed by a payload is enough to count.
SECRET_SHAPE = re.compile(
    r"ug[kt]_[A-Za-z0-9_-]{43}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?"
    # A webhook signing secret: whsec_ + standard base64 of 32 bytes.
    r"|whsec_[A-Za-z0-9+/]{43}="
)


def secrets_in(text: str) -> list[str]:
    """Every API key, group token or embed token shaped string in ``text``."""
    return SECRET_SHAPE.findall(text)


def audit_event_leaks() -> list[str]:
    """Every secret-shaped string in the audit events the database holds now (as the API
    and the export show them): an event names a token by its ``jti``, a key by its prefix."""
    import json

    from usergroups.models import AuditEvent
    from usergroups.services import audit

    found = []
    for event in AuditEvent.objects.order_by("id").iterator():
        text = json.dumps(audit.as_dict(event), ensure_ascii=False)
        # The caller names its groups and people as it likes, a token's shape included
        # (Hypothesis does): its own ids are not secrets.
        named = {event.user_group_id, event.end_user_id} - {None, ""}
        found.extend(f"{event.action}: {leak}" for leak in secrets_in(text) if leak not in named)
    return found
