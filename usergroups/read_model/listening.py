"""One process's ear on PostgreSQL: a connection of its own that ``LISTEN``\\s on
:data:`CHANNEL`, where the triggers of migration 0013 send the id of each workspace whose
keys, groups, mappings, end users or denylist a transaction changed.

A thread of the process keeps the ear healthy: it sleeps on the connection's socket, and
every :data:`HEARTBEAT_SECONDS` (or when woken) it notifies a channel of its own and
waits for that notification to come back. Before it does, the server has sent every
notification of a transaction committed before the heartbeat began; and hearing its own
heartbeat proves the connection still listens (through a pooler in transaction mode it
would not: the heartbeat is never heard, and memory never trusted). What it heard goes
to :class:`~usergroups.read_model.memory.Memory`. A request
drains what has arrived on the socket without waiting (:meth:`Listener.trusted`), and
trusts memory only when the last heartbeat is younger than :data:`STALE_SECONDS`: a lost
connection, a stalled server or a thread that cannot run means the database answers,
and a connection made anew forgets everything held from before.

Only psycopg's public API: ``Connection.execute``, ``notifies(timeout=0)`` and
``fileno()``.
"""

import os
import secrets
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from usergroups.logs import get_logger
from usergroups.read_model.memory import Memory

logger = get_logger(__name__)

#: The channel the triggers notify on; a payload is a workspace id, or "*" for all.
CHANNEL = "usergroups"
#: ``application_name`` of listening connections (pg_stat_activity shows which they are).
APPLICATION_NAME = "usergroups-listen"
HEARTBEAT_SECONDS = 0.02
#: Memory answers only while the last completed heartbeat began less than this ago.
STALE_SECONDS = 0.1
#: The longest a write through the app waits for its process to hear it.
CATCH_UP_SECONDS = 1.0
RECONNECT_SECONDS = 0.5
#: How often a heartbeat also looks at the server's notification queue.
QUEUE_CHECK_SECONDS = 1.0
#: The share of the server's notification queue in use past which a listening
#: connection that stopped reading (its server process blocked writing to it) is ended,
#: so that one stopped process can neither fill the queue nor hold writers back.
QUEUE_USAGE_LIMIT = 0.001

_END_STOPPED_LISTENERS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE application_name = %s AND wait_event = 'ClientWrite'"
    " AND pid <> pg_backend_pid() AND pg_notification_queue_usage() > %s"
)


class Listener:
    """The process's listening connection, made by ``connect`` (psycopg, autocommit),
    and the thread that keeps it; what it hears goes to ``memory``."""

    def __init__(self, connect: Callable[[], Any], memory: Memory) -> None:
        self.memory = memory
        self._connect = connect
        self._connection: Any = None
        # Held by whoever uses the connection: the thread's heartbeat, a request's drain.
        self._lock = threading.Lock()
        self._synced = threading.Condition()
        self._synced_at: float | None = None
        self._queue_checked_at = 0.0
        # A channel of this listener's own, which only its heartbeats use.
        self._heartbeat_channel = f"{CHANNEL}_heartbeat_{secrets.token_hex(8)}"
        self._beats = 0
        self._heard_beat = -1
        self._warned = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="usergroups-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        os.write(self._wake_write, b"x")
        self._thread.join(timeout=5)
        with self._lock:
            self._close()
        os.close(self._wake_read)
        os.close(self._wake_write)

    def trusted(self) -> bool:
        """Read what has arrived (no waiting), then whether memory may answer now."""
        if not self._lock.acquire(timeout=STALE_SECONDS):
            return False  # a heartbeat that does not come back: a stalled server
        try:
            if self._connection is None or not self._drain():
                return False
        finally:
            self._lock.release()
        synced_at = self._synced_at
        return synced_at is not None and time.monotonic() - synced_at < STALE_SECONDS

    def catch_up(self) -> bool:
        """Wait (at most :data:`CATCH_UP_SECONDS`) for a heartbeat begun after now, so
        what this process committed before the call has been heard. False, and memory
        forgotten, if none came. Not listening: nothing held is trusted, and listening
        again forgets it all, so there is nothing to wait for."""
        if self._connection is None:
            return False
        wanted = time.monotonic()
        os.write(self._wake_write, b"x")
        with self._synced:
            heard = self._synced.wait_for(
                lambda: self._synced_at is not None and self._synced_at >= wanted,
                timeout=CATCH_UP_SECONDS,
            )
        if not heard:
            logger.warning("The read model did not hear its own write: reading the database")
            self.memory.forget_all()
        return heard

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._connection is None and (
                self._stopping.wait(RECONNECT_SECONDS if self._warned else 0) or not self._listen()
            ):
                continue
            try:
                select.select(
                    [self._connection.fileno(), self._wake_read], [], [], HEARTBEAT_SECONDS
                )
            except (OSError, ValueError):  # the connection closed under us
                pass
            if self._stopping.is_set():
                return
            try:
                os.read(self._wake_read, 4096)
            except BlockingIOError:
                pass
            self._heartbeat()

    def _listen(self) -> bool:
        try:
            connection = self._connect()
            connection.execute(f"LISTEN {CHANNEL}")
            connection.execute(f"LISTEN {self._heartbeat_channel}")
        except Exception as error:  # any failure to connect: try again later
            self._warn(f"The read model cannot listen ({error}): reading the database")
            return False
        with self._lock:
            self.memory.forget_all()
            self._connection = connection
        logger.info("The read model listens on channel %s", CHANNEL)
        return True

    def _warn(self, message: str) -> None:
        """Once until the listener is trusted again: a retry every half second must not
        flood the log."""
        if not self._warned:
            logger.warning(message)
            self._warned = True

    def _heartbeat(self) -> None:
        started = time.monotonic()
        with self._lock:
            if self._connection is None:
                return
            self._beats += 1
            try:
                self._connection.execute(
                    "SELECT pg_notify(%s, %s)", (self._heartbeat_channel, str(self._beats))
                )
                if started - self._queue_checked_at >= QUEUE_CHECK_SECONDS:
                    self._queue_checked_at = started
                    self._connection.execute(
                        _END_STOPPED_LISTENERS, (APPLICATION_NAME, QUEUE_USAGE_LIMIT)
                    )
            except Exception as error:
                self._lose(error)
                return
            if not self._drain():
                return
            if self._heard_beat != self._beats:
                # Connected, yet not listening: a pooler lent the session away.
                self._lose(RuntimeError("its own heartbeat was not heard"))
                return
            self._warned = False
            previous = self._synced_at
            if previous is None or started - previous >= STALE_SECONDS:
                # Not trusted since `previous`: begin afresh rather than reason about it.
                self.memory.forget_all()
        with self._synced:
            self._synced_at = started
            self._synced.notify_all()

    def _drain(self) -> bool:
        """Hand what has arrived to memory; False if the connection is lost. Under the lock."""
        try:
            for notification in self._connection.notifies(timeout=0):
                if notification.channel == self._heartbeat_channel:
                    self._heard_beat = int(notification.payload)
                else:
                    self._heard(notification.payload)
        except Exception as error:
            self._lose(error)
            return False
        return True

    def _heard(self, payload: str) -> None:
        if payload.isdigit():
            self.memory.forget_workspace(int(payload))
        else:
            self.memory.forget_all()

    def _lose(self, error: BaseException) -> None:
        self._warn(f"The read model lost its listening connection ({error}): reading the database")
        self._close()

    def _close(self) -> None:
        self._synced_at = None
        self.memory.forget_all()
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:
                pass
            self._connection = None
