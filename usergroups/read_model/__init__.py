"""The read model (CONTRACT sections 9 and 9a): on PostgreSQL, each process answers its
hot reads from memory that the database keeps current.

- :mod:`~usergroups.read_model.reads`: every remembered read (an API key, a group, a
  group to mint, a workspace's webhooks, a token's grant): its key, what it depends on,
  what it weighs, and the database it reads. The services call their plain reads
  through it.
- :mod:`~usergroups.read_model.changes`: what a notification says changed, and the
  names of what an answer depends on.
- :mod:`~usergroups.read_model.memory`: the bounded memory, forgotten by dependency.
- :mod:`~usergroups.read_model.listening`: the process's listening connection and the
  database's one shared beat, which proves hearing.

Memory answers only when it can be trusted (:meth:`Listener.trusted`); never inside an
open transaction (what it wrote is not committed, so not heard: the database answers,
and the request sees its own writes); never when ``USERGROUPS["READ_MODEL"]`` is False,
the database is not PostgreSQL, or the listening database looks pooled. A write
through the app opens its transaction with :func:`writing`, the one commit hook: its
answer comes only once its own process has heard it.
"""

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.dispatch import receiver

from usergroups import telemetry
from usergroups.conf import usergroups_settings
from usergroups.read_model.changes import Change
from usergroups.read_model.listening import APPLICATION_NAME, BEAT_LOCK, Listener
from usergroups.read_model.memory import Memory

__all__ = [
    "APPLICATION_NAME",
    "BEAT_LOCK",
    "connect",
    "enabled",
    "listen_alias",
    "looks_pooled",
    "process_listener",
    "stop",
    "trusted_memory",
    "writing",
]

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
    set as Django's docs prescribe behind one (``DISABLE_SERVER_SIDE_CURSORS``). Where
    the settings do not say so, the listener finds out: it never hears a beat there."""
    return listen_database is None and bool(default_database.get("DISABLE_SERVER_SIDE_CURSORS"))


def connect(application_name: str) -> Any:
    """A new autocommit connection to the listening database, named ``application_name``,
    binding parameters on the server (the beat is a prepared statement)."""
    import psycopg

    params = connections[listen_alias()].get_connection_params()
    params.update(autocommit=True, application_name=application_name, cursor_factory=psycopg.Cursor)
    if params.get("prepare_threshold") is None:
        # Django turns psycopg's prepared statements off for poolers' sake; a listener
        # that finds itself pooled never beats, so the beat may be prepared: psycopg's default.
        params.pop("prepare_threshold", None)
    return psycopg.connect(**params)


def _forgot(change: Change | None, entries: int) -> None:
    telemetry.read_model_forgot("connection_lost" if change is None else change.reason, entries)


def _state() -> dict[str, Any] | None:
    listener = _own_listener()
    if listener is None:
        return None
    return {
        "listening": listener.listening,
        "proof_age_seconds": listener.proof_age(),
        "entries": len(listener.memory),
        "bytes": listener.memory.bytes,
    }


def process_listener() -> Listener:
    """This process's listener, started on first use (after a fork, anew)."""
    global _process_listener, _process_id
    if _process_id == os.getpid() and _process_listener is not None:
        return _process_listener
    with _starting:
        if _process_id != os.getpid() or _process_listener is None:
            # A forked child inherits its parent's objects, not its thread: its own.
            memory = Memory(
                usergroups_settings.READ_MODEL_MAX_ENTRIES, usergroups_settings.READ_MODEL_MAX_BYTES
            )
            listener = Listener(connect, memory, _forgot)
            listener.start()
            _process_listener, _process_id = listener, os.getpid()
    return _process_listener


def trusted_memory(using: str, *, on: bool = False) -> Memory | None:
    """This process's memory if it may answer a read of ``using`` now, else None
    (``on``: the caller has just seen :func:`enabled` answer True)."""
    if not (on or enabled()) or connections[using].in_atomic_block:
        return None
    listener = process_listener()
    return listener.memory if listener.trusted() else None


def _own_listener() -> Listener | None:
    return _process_listener if _process_id == os.getpid() else None


@contextmanager
def writing(using: str, *, savepoint: bool = True) -> Iterator[None]:
    """``transaction.atomic(using)`` for a write through the app, whose commit returns
    once this process has heard it (the one commit hook of every write): the
    transaction's id, read as it opens, is what the triggers' notifications carry."""
    with transaction.atomic(using=using, savepoint=savepoint):
        listener = _own_listener()
        if (
            listener is not None
            and listener.listening
            and connections[using].vendor == "postgresql"
        ):
            with connections[using].cursor() as cursor:
                cursor.execute("SELECT pg_current_xact_id()::text")
                xid = int(cursor.fetchone()[0])
            transaction.on_commit(lambda: listener.catch_up(xid), using=using)
        yield


def stop() -> None:
    """Stop this process's listener and forget what it held (the next use starts anew)."""
    global _process_listener, _process_id
    with _starting:
        listener, ours = _process_listener, _process_id == os.getpid()
        _process_listener, _process_id = None, None
    if listener is not None and ours:  # a parent's, inherited by a fork, is not ours to stop
        listener.stop()


telemetry.observe_read_model(_state)


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    # What memory holds depends on these (the database, the token rules): start anew.
    if setting in {"USERGROUPS", "DATABASES", "SECRET_KEY"}:
        stop()
