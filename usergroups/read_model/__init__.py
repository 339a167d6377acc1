"""The read model (CONTRACT section 9): on PostgreSQL, each process answers its hot reads
(an API key by digest, a group with what it inherits, a verified embed token's grant)
from memory that the database keeps current.

Every read goes through :func:`remember`, which memoizes the read's one path: the
answer held is the answer that path gave, forgotten when the triggers of migration 0013
say its workspace changed. Memory answers only when it can be trusted
(:meth:`~usergroups.read_model.listening.Listener.trusted`); never inside an open
transaction (what it wrote is not committed, so not heard: the database answers, and
the request sees its own writes); never when ``USERGROUPS["READ_MODEL"]`` is False or
the database is not PostgreSQL. A write through the app calls :func:`catch_up` after
its commit (the audit trail's one writer does), so its answer comes only once its own
process has heard it.
"""

import os
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, connections
from django.dispatch import receiver

from usergroups.conf import usergroups_settings
from usergroups.read_model.listening import APPLICATION_NAME, Listener
from usergroups.read_model.memory import MISSING, Memory

__all__ = [
    "catch_up",
    "enabled",
    "listen_alias",
    "looks_pooled",
    "process_listener",
    "remember",
    "stop",
]

T = TypeVar("T")

_process_listener: Listener | None = None
_process_id: int | None = None
_starting = threading.Lock()


def listen_alias() -> str:
    """The database alias the process listens through."""
    return usergroups_settings.LISTEN_DATABASE or DEFAULT_DB_ALIAS


def enabled() -> bool:
    """Whether this site runs the read model: the setting, on PostgreSQL, unless the
    database it would listen through looks pooled in transaction mode (check W005)."""
    if usergroups_settings.READ_MODEL is False:
        return False
    database = connections[listen_alias()]
    pooled = looks_pooled(database.settings_dict, usergroups_settings.LISTEN_DATABASE)
    return database.vendor == "postgresql" and not pooled


def looks_pooled(default_database: Mapping[str, Any], listen_database: str | None) -> bool:
    """Whether a process would listen through a pooler in transaction mode, where LISTEN
    is lost between transactions: no ``LISTEN_DATABASE`` named, and the default database
    set as Django's docs prescribe behind one (``DISABLE_SERVER_SIDE_CURSORS``)."""
    return listen_database is None and bool(default_database.get("DISABLE_SERVER_SIDE_CURSORS"))


def _connect() -> Any:
    import psycopg

    params = connections[listen_alias()].get_connection_params()
    params.update(autocommit=True, application_name=APPLICATION_NAME)
    return psycopg.connect(**params)


def process_listener() -> Listener:
    """This process's listener, started on first use (after a fork, anew)."""
    global _process_listener, _process_id
    if _process_id == os.getpid() and _process_listener is not None:
        return _process_listener
    with _starting:
        if _process_id != os.getpid() or _process_listener is None:
            # A forked child inherits its parent's objects, not its thread: its own.
            listener = Listener(_connect, Memory(usergroups_settings.READ_MODEL_MAX_ENTRIES))
            listener.start()
            _process_listener, _process_id = listener, os.getpid()
    return _process_listener


def _trusted_memory(using: str) -> Memory | None:
    if not enabled() or connections[using].in_atomic_block:
        return None
    listener = process_listener()
    return listener.memory if listener.trusted() else None


def remember(
    key: Hashable, load: Callable[[], T | None], workspace_of: Callable[[T], int], using: str
) -> T | None:
    """``load()``'s answer, from memory when it holds a current one; a found answer
    (not None) is kept as belonging to ``workspace_of(answer)``. ``using``: the alias
    ``load`` reads."""
    memory = _trusted_memory(using)
    if memory is None:
        return load()
    found = memory.get(key)
    if found is not MISSING:
        return found
    mark = memory.mark()
    answer = load()
    if answer is not None:
        memory.put(key, answer, workspace_of(answer), mark)
    return answer


def catch_up() -> None:
    """After a commit: return once this process has heard it (bounded; see Listener)."""
    if _process_id == os.getpid() and _process_listener is not None:
        _process_listener.catch_up()


def stop() -> None:
    """Stop this process's listener and forget what it held (the next use starts anew)."""
    global _process_listener, _process_id
    with _starting:
        listener, ours = _process_listener, _process_id == os.getpid()
        _process_listener, _process_id = None, None
    if listener is not None and ours:  # a parent's, inherited by a fork, is not ours to stop
        listener.stop()


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    # What memory holds depends on these (the database, the token rules): start anew.
    if setting in {"USERGROUPS", "DATABASES", "SECRET_KEY"}:
        stop()
