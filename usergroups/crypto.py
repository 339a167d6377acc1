"""How API keys and group tokens are made, stored and checked.

Both are 256 random bits, URL-safe base64 behind a prefix (``ugk_`` / ``ugt_``), so a
plain SHA-256 digest is enough to store them: nothing can be guessed or brute-forced
from it, and unlike a password hasher it costs microseconds on the hot path.

A group token must also be shown again on get-or-create, so next to its digest the
database keeps the token *sealed*: XOR-ed with an HMAC keystream keyed by a server
secret (``SECRET_KEY`` unless ``USERGROUPS["TOKEN_SECRET"]`` is set). The keystream is
unique per token (it is keyed on the token's digest), and a copy of the database
without the secret opens nothing. Fallback secrets open tokens sealed before a
rotation of the secret; ``manage.py reseal_group_tokens`` reseals them with the new one.
"""

import base64
import hashlib
import hmac
import re
import secrets
from typing import TypeGuard

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.utils.crypto import salted_hmac
from django.utils.encoding import force_bytes

from usergroups.conf import usergroups_settings

KEY_PREFIX = "ugk_"
TOKEN_PREFIX = "ugt_"
RANDOM_BYTES = 32
# The start of a key that identifies it in the database, in logs and in the admin.
KEY_LOOKUP_LENGTH = len(KEY_PREFIX) + 8

_KEY_SHAPE = re.compile(r"ugk_[A-Za-z0-9_-]{43}")
#: What a group token looks like (the OpenAPI description states it from here).
GROUP_TOKEN_PATTERN = "ugt_[A-Za-z0-9_-]{43}"
_TOKEN_SHAPE = re.compile(GROUP_TOKEN_PATTERN)
_SEAL_SALT = "usergroups.crypto.seal_token"
# Webhook signing secrets: Standard Webhooks' form, ``whsec_`` + standard base64 of the
# key's bytes, sealed at rest like group tokens (with a salt of their own).
WEBHOOK_SECRET_PREFIX = "whsec_"
_WEBHOOK_SEAL_SALT = "usergroups.crypto.seal_webhook_secret"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def digest(secret: str) -> str:
    """The SHA-256 hex digest under which a key or token is stored."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def looks_like_api_key(value: object) -> TypeGuard[str]:
    """Cheap shape check, so malformed keys never reach the database."""
    return isinstance(value, str) and _KEY_SHAPE.fullmatch(value) is not None


def looks_like_group_token(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _TOKEN_SHAPE.fullmatch(value) is not None


#: Bytes of an embed binding: what tells one incarnation of a group or an end user from
#: another that took its id (a restore, a sequence reset, a re-created person).
BINDING_BYTES = 12
BINDING_LENGTH = 16  # base64 of BINDING_BYTES


def new_binding() -> str:
    """A random value fixed when a group or an end user is created (or an API key, whose
    embed tokens name it by one); embed tokens carry it and verification compares it.
    Not a secret: it only has to differ."""
    return secrets.token_urlsafe(BINDING_BYTES)


def new_api_key() -> str:
    return KEY_PREFIX + _b64(secrets.token_bytes(RANDOM_BYTES))


def new_group_token() -> str:
    return TOKEN_PREFIX + _b64(secrets.token_bytes(RANDOM_BYTES))


def token_secrets() -> list[str]:
    """The current sealing secret first, then the fallbacks still accepted."""
    if usergroups_settings.TOKEN_SECRET:
        return [
            usergroups_settings.TOKEN_SECRET,
            *(usergroups_settings.TOKEN_SECRET_FALLBACKS or []),
        ]
    return [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]


def _xor_keystream(raw: bytes, token_digest: str, secret: str, salt: str = _SEAL_SALT) -> bytes:
    stream = salted_hmac(salt, token_digest, secret=secret, algorithm="sha256").digest()
    return bytes(a ^ b for a, b in zip(raw, stream, strict=True))


def seal_token(token: str, token_digest: str) -> str:
    """The token's random part, sealed with the current secret, for storage."""
    raw = _unb64(token[len(TOKEN_PREFIX) :])
    return _b64(_xor_keystream(raw, token_digest, token_secrets()[0]))


def unseal_token(sealed: str, token_digest: str) -> str | None:
    """The token again, or None when no configured secret opens it."""
    raw_sealed = _unb64(sealed)
    for secret in token_secrets():
        token = TOKEN_PREFIX + _b64(_xor_keystream(raw_sealed, token_digest, secret))
        if hmac.compare_digest(digest(token), token_digest):
            return token
    return None


def new_webhook_secret() -> str:
    return WEBHOOK_SECRET_PREFIX + base64.b64encode(secrets.token_bytes(RANDOM_BYTES)).decode()


def seal_webhook_secret(secret: str, secret_digest: str) -> str:
    """A webhook's signing secret, sealed with the current secret, for storage."""
    raw = base64.b64decode(secret[len(WEBHOOK_SECRET_PREFIX) :])
    return _b64(_xor_keystream(raw, secret_digest, token_secrets()[0], _WEBHOOK_SEAL_SALT))


def unseal_webhook_secret(sealed: str, secret_digest: str) -> str | None:
    """The signing secret again, or None when no configured secret opens it."""
    raw_sealed = _unb64(sealed)
    for secret in token_secrets():
        raw = _xor_keystream(raw_sealed, secret_digest, secret, _WEBHOOK_SEAL_SALT)
        candidate = WEBHOOK_SECRET_PREFIX + base64.b64encode(raw).decode()
        if hmac.compare_digest(digest(candidate), secret_digest):
            return candidate
    return None


# Boxes: a value the server hands out or keeps and must get back unread and unchanged
# (an audit cursor, a new secret kept in the session for the one page that shows it).
_BOX_LABEL = b"usergroups.crypto.box:"


def _box(secret: str, purpose: str) -> AESSIV:
    key = HKDF(
        algorithm=hashes.SHA256(), length=64, salt=None, info=_BOX_LABEL + force_bytes(purpose)
    )
    return AESSIV(key.derive(force_bytes(secret)))


def seal_box(purpose: str, data: bytes, context: str) -> str:
    """``data`` encrypted and authenticated (AES-SIV) with a key derived from the current
    secret for ``purpose`` alone, bound to ``context`` (which :func:`open_box` must be
    given again). The same input gives the same text, which shows nothing else of it."""
    return _b64(_box(token_secrets()[0], purpose).encrypt(data, [force_bytes(context)]))


def open_box(purpose: str, sealed: str, context: str) -> bytes | None:
    """The data of :func:`seal_box`, or None when it was not sealed for ``purpose`` and
    ``context`` by a configured secret, or was changed."""
    try:
        raw = _unb64(sealed)
    except ValueError:  # binascii.Error is one
        return None
    for secret in token_secrets():
        try:
            return _box(secret, purpose).decrypt(raw, [force_bytes(context)])
        except (InvalidTag, ValueError):  # ValueError: too short to hold a tag
            continue
    return None
