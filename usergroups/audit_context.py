"""Who is acting, for the audit trail: set by each door, read by the services.

The API views, the admin and the management commands each wrap their work in
:func:`acting`; :func:`usergroups.services.audit.record` reads the actor, the request id
and the client address from here, so the services need no extra arguments for them. A
context variable keeps concurrent requests (threads or tasks) apart.
"""

import ipaddress
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

ACTOR_TYPES = ("api_key", "staff", "system")
# X-Request-ID: at most this many printable ASCII characters (CONTRACT section 8).
MAX_REQUEST_ID_LENGTH = 200


@dataclass(frozen=True)
class Actor:
    """Who did it: an API key (by its prefix), a staff user (by username) or the system
    (by the command's name)."""

    type: str
    id: str

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, "id": self.id}


def api_key(prefix: str) -> Actor:
    return Actor("api_key", prefix)


def staff(username: str) -> Actor:
    return Actor("staff", username)


def system(name: str) -> Actor:
    return Actor("system", name)


#: The actor of a change made outside every door (host code, a shell): the system.
UNATTRIBUTED = system("python")


@dataclass(frozen=True)
class AuditContext:
    actor: Actor
    request_id: str
    ip: str | None


_current: ContextVar[AuditContext | None] = ContextVar("usergroups_audit_context", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def valid_request_id(value: object) -> TypeGuard[str]:
    """A client's ``X-Request-ID`` is kept if it is 1 to 200 printable ASCII characters."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_REQUEST_ID_LENGTH
        and all(" " <= char <= "~" for char in value)
    )


def request_id_from(meta: Mapping[str, Any]) -> str:
    """The request's ``X-Request-ID`` (from a WSGI/ASGI ``META``) if valid, else a new one."""
    given = meta.get("HTTP_X_REQUEST_ID")
    return given if valid_request_id(given) else new_request_id()


@contextmanager
def acting_for_request(actor: Actor, meta: Mapping[str, Any]) -> Iterator[AuditContext]:
    """:func:`acting` for a request: its ``X-Request-ID`` and client address (the
    ``REMOTE_ADDR`` the server saw; a proxy's forwarded address is the host's to trust)."""
    with acting(actor, request_id=request_id_from(meta), ip=meta.get("REMOTE_ADDR")) as context:
        yield context


def current() -> AuditContext:
    """The context of the change being made; outside every door, the system acting with a
    request id of its own."""
    context = _current.get()
    if context is None:
        return AuditContext(UNATTRIBUTED, new_request_id(), None)
    return context


def current_request_id() -> str | None:
    """The request id being served, if any (for log records)."""
    context = _current.get()
    return None if context is None else context.request_id


def set_actor(actor: Actor) -> None:
    """Name the actor of the context already entered (an API request knows its key only
    once authenticated); restored with the rest when :func:`acting` exits."""
    context = _current.get()
    if context is None:
        raise RuntimeError("set_actor() outside acting()")
    _current.set(replace(context, actor=actor))


def _valid_ip(value: str | None) -> str | None:
    # REMOTE_ADDR may be empty or a socket path behind some servers: no address then.
    try:
        return str(ipaddress.ip_address(value)) if value else None
    except ValueError:
        return None


@contextmanager
def acting(
    actor: Actor, *, request_id: str | None = None, ip: str | None = None
) -> Iterator[AuditContext]:
    """Attribute the changes made inside to ``actor`` (nested: the innermost wins)."""
    context = AuditContext(actor, request_id or new_request_id(), _valid_ip(ip))
    reset_token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(reset_token)
