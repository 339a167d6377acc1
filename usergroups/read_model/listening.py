r"""One process's ear on PostgreSQL, and the database's one proof of hearing.

Each process listens (``LISTEN``) on one connection of its own (``application_name``
:data:`APPLICATION_NAME`) to :data:`CHANNEL`, where the triggers say what each committed
transaction changed (:mod:`usergroups.read_model.changes`); while it wants memory, to
:data:`BEAT_CHANNEL` too. One process per database, the one holding the session advisory
lock :data:`BEAT_LOCK` on its listening connection, beats from a second connection
(:data:`BEAT_APPLICATION_NAME`): it notifies the time and its snapshot. When its session
ends, the lock goes with it, and the first process that wants memory and misses the beat
takes over.

PostgreSQL wakes every listening session of a database for each notification in it,
whatever its channel (a transaction each), so the beat is sent only while someone needs
it. A process that wants memory to answer listens to :data:`BEAT_CHANNEL` and holds the
shared advisory lock :data:`BUSY_LOCK` (taken with one notification on
:data:`DEMAND_CHANNEL`, which only the beater hears; both let go once it has wanted
nothing for :data:`IDLE_AFTER_SECONDS`). While any process holds it, the beat comes every
:data:`BEAT_SECONDS`; while none does, there is none, until a demand brings it back. An
idle site costs the database one statement of the beater's every :data:`LOOK_SECONDS`
(the queue's guard, below), however many processes listen; an idle process runs no
statement, and its thread is not woken by the beats others ask for (its session does
not pass them on).

A beat heard on the listening connection proves that this very session receives other
sessions' notifications, and, as notifications arrive in commit order, that everything
committed before the beat has been heard. A request reads what has arrived on the
socket itself, without waiting (:meth:`Listener.trusted`), and trusts memory while the
last beat heard is younger than :data:`STALE_SECONDS`, whether or not the listener's
thread has run. A write through the app waits until its process has heard that write
(:meth:`Listener.catch_up`): its own notification, or a beat whose snapshot shows it
committed. A lost listening connection forgets everything; one made anew starts empty.

Behind a pooler in transaction mode the session that ``LISTEN``\s is lent to others
between statements, who may take its notifications: the process id the server gives
the listening session (``pg_backend_pid()``) is then not the one the connection was
told at its start (``info.backend_pid``, the pooler's own). Such a listener never
trusts memory and never beats, whatever the settings say (:attr:`Listener.pooled`).

The beater also guards the server's one notification queue: a listening session that
has been blocked writing to its client (``ClientWrite``) at every beat or look for
:data:`STOPPED_READER_SECONDS` while the queue did not shrink is ended, and no other.

Only psycopg's public API: ``connect``, ``Connection.execute``, ``notifies(timeout=0,
stop_after=...)``, ``info.backend_pid`` and ``fileno()``.
"""

import os
import select
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from usergroups.logs import get_logger
from usergroups.read_model.changes import EVERYTHING, Change, parse
from usergroups.read_model.memory import Memory

logger = get_logger(__name__)

#: The channel the triggers notify on (:mod:`usergroups.read_model.changes`).
CHANNEL = "usergroups"
#: The channel of the shared beat, ``"<sender's time> <its snapshot>"``: heard by the
#: processes that want memory, and the beater.
BEAT_CHANNEL = "usergroups_beat"
#: ``application_name`` of listening connections (pg_stat_activity shows which they are).
APPLICATION_NAME = "usergroups-listen"
#: ``application_name`` of the one connection that beats.
BEAT_APPLICATION_NAME = "usergroups-beat"
#: The session advisory lock whose holder beats for the database ("ugrp").
BEAT_LOCK = 0x75677270
#: The shared advisory lock that a process wanting memory holds ("ugrq").
BUSY_LOCK = 0x75677271
#: The channel a process notifies when it starts wanting memory; the beater alone listens.
DEMAND_CHANNEL = "usergroups_demand"
#: The beat while some process wants memory (while none does, there is none).
BEAT_SECONDS = 0.025
#: While nobody wants memory, the beater still looks at the queue this often (a
#: statement on its own connection, no notification: it wakes nobody).
LOOK_SECONDS = 2.0
#: A process that wanted no memory for this long lets go of :data:`BUSY_LOCK`.
IDLE_AFTER_SECONDS = 1.0
#: Memory answers only while the last beat heard was sent less than this ago.
STALE_SECONDS = 0.1
#: No beat heard for this long while it wants memory: the process tries to beat itself.
TAKE_OVER_SECONDS = 0.15
#: The beater hears nothing at all, its own beats included, for this long past a beat's
#: interval: it steps down (a flood it is still reading delays its beats, and is no
#: reason to).
STEP_DOWN_SECONDS = 1.0
#: The longest a write through the app waits for its process to hear it.
CATCH_UP_SECONDS = 1.0
RECONNECT_SECONDS = 0.5
#: The share of the server's notification queue in use past which the beat looks for
#: listening sessions that stopped reading.
QUEUE_USAGE_LIMIT = 0.001
#: How long a listening session is seen blocked on its client at every beat, in one and the
#: same read of the queue, while the queue does not shrink, before it is ended. A live
#: listener reading a flood is blocked too, often at every beat, but its server process
#: reads the queue in turns, each in a transaction of its own with a snapshot of its own:
#: a new snapshot is a new read, and its time starts again. One session is ended at a
#: time, the one whose read is oldest; the others' time starts again, as the queue may now
#: shrink (the queue is 8 GB: at 100,000 notifications a second this is a few hundred MB).
STOPPED_READER_SECONDS = 30.0
#: A beater's clock behind this one's by more than this: its beats are never fresh
#: enough to trust (failing closed, never open, on a skewed clock).
CLOCK_SLACK_SECONDS = 0.05
#: The longest a request waits for another thread's use of the listening connection.
LOCK_WAIT_SECONDS = 0.005
#: Transactions remembered as heard, for writers catching up.
HEARD_KEPT = 10_000
#: The most notifications one read of the socket hands to memory: under a flood the
#: thread still beats between reads, and a request's read stays short (what is left is
#: read next time; until then the proof is older, and the database answers).
DRAIN_AT_MOST = 2_000

# What the beater looks at each time: the listening sessions blocked on their client
# while the queue is over its limit (each with the xmin of the read it is in, the oldest
# read first), the queue's usage, and whether some process holds
# BUSY_LOCK (shared): the exclusive lock, tried for this statement's transaction alone, is
# refused (cheaper than reading pg_locks).
_LOOK = (
    "SELECT CASE WHEN pg_notification_queue_usage() > %s THEN ARRAY(SELECT"
    " ARRAY[pid, backend_xmin::text::bigint] FROM pg_stat_activity WHERE application_name = %s"
    " AND wait_event = 'ClientWrite' ORDER BY age(backend_xmin) DESC NULLS LAST) END,"
    " pg_notification_queue_usage(), NOT pg_try_advisory_xact_lock(%s)"
)
#: The beat: the same look, and the notification.
_BEAT = (
    _LOOK + ", pg_notify(%s, %s || ' ' || CASE WHEN length(s::text) > 7000"
    " THEN pg_snapshot_xmin(s) || ':' || pg_snapshot_xmin(s) || ':' ELSE s::text END)"
    " FROM (SELECT pg_current_snapshot() AS s) AS now"
)


class _Snapshot:
    """A beat's snapshot (``xmin:xmax:xip,...``): which transactions had ended before it."""

    def __init__(self, text: str) -> None:
        xmin, xmax, running = text.split(":")
        self.xmin, self.xmax = int(xmin), int(xmax)
        self.running = {int(xid) for xid in running.split(",") if xid}

    def ended(self, xid: int) -> bool:
        return xid < self.xmin or (xid < self.xmax and xid not in self.running)


class Listener:
    """The process's listening connection, made by ``connect(application_name)``
    (psycopg, autocommit), and the thread that keeps it; what it hears goes to
    ``memory``; ``forgot(change, entries)`` is told of each change heard."""

    def __init__(
        self,
        connect: Callable[[str], Any],
        memory: Memory,
        forgot: Callable[[Change | None, int], None] | None = None,
    ) -> None:
        self.memory = memory
        self._connect = connect
        self._forgot = forgot
        self._connection: Any = None
        self._beat_connection: Any = None
        # Held by whoever reads the listening connection: the thread, a request, a writer.
        self._lock = threading.Lock()
        self._heard = threading.Condition()
        self._proven_at: float | None = None  # the last beat's sending, in this clock
        self._offsets = [float("inf"), float("inf")]  # min(receipt - sent), two windows
        self._offsets_since = time.monotonic()
        self._last_beat = time.monotonic()
        self._snapshot: _Snapshot | None = None
        self._heard_xids: OrderedDict[int, None] = OrderedDict()
        self._next_beat = 0.0
        self._next_attempt = 0.0
        self._attempt_backoff = TAKE_OVER_SECONDS
        # (pid, xmin of its read): (since when, the queue's usage then)
        self._blocked_since: dict[tuple[int, int | None], tuple[float, float]] = {}
        self._last_heard = time.monotonic()  # anything at all
        # A statement ran on the listening connection since the last read: psycopg keeps
        # the notifications that came with its result for the next notifies().
        self._kept = False
        self._wanted_at = float("-inf")  # when memory was last wanted here
        self._busy = False  # this session holds BUSY_LOCK
        self._hears_beats = False  # this session listens to BEAT_CHANNEL
        self._someone_busy = False  # what the last beat saw
        self._warned = False
        #: Listening through a pooler (see the module's docstring): never trusted.
        self.pooled = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="usergroups-listen", daemon=True)

    # What requests and writers call.

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        os.write(self._wake_write, b"x")
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._lock:
            self._close()
        os.close(self._wake_read)
        os.close(self._wake_write)

    @property
    def listening(self) -> bool:
        return self._connection is not None

    @property
    def beating(self) -> bool:
        return self._beat_connection is not None

    @property
    def proven_at(self) -> float | None:
        """When the last beat heard was sent, in this process's clock (None: none yet)."""
        return self._proven_at

    def proof_age(self) -> float | None:
        """Seconds since the last beat heard was sent (None: none heard since listening,
        or since the process last wanted memory)."""
        proven_at = self._proven_at
        return None if proven_at is None else time.time() - proven_at

    def _want(self) -> None:
        """Memory is wanted now: the thread asks for the fast beat if it has not yet."""
        first = not self._busy and time.monotonic() - self._wanted_at > 0.01
        self._wanted_at = time.monotonic()
        if first:
            os.write(self._wake_write, b"w")

    def trusted(self) -> bool:
        """Read what has arrived (no waiting), then whether memory may answer now."""
        if self._connection is None or self.pooled:
            return False
        self._want()
        # What another thread is reading or doing on the connection may be a change that
        # this request must see: wait for it briefly, else the database answers.
        if not self._lock.acquire(timeout=LOCK_WAIT_SECONDS):
            return False
        try:
            if not self._hears_beats:
                # Wanted after an idle spell: hear the beat from now on, whether or not
                # the thread runs (it asks for the fast beat); the database answers this.
                try:
                    self._hear_beats(True)
                except Exception as error:
                    self._lose(error)
                return False
            if not self._drain():
                return False
        finally:
            self._lock.release()
        age = self.proof_age()
        return age is not None and age < STALE_SECONDS

    def catch_up(self, xid: int) -> bool:
        """Wait (at most :data:`CATCH_UP_SECONDS`) until transaction ``xid``, committed
        by this process, has been heard: its notification, or a beat sent after it. False,
        and memory forgotten, if neither came. Not listening: nothing held is trusted,
        and listening again forgets it all, so there is nothing to wait for."""
        deadline = time.monotonic() + CATCH_UP_SECONDS
        self._want()
        while self._connection is not None:
            if self._lock.acquire(blocking=False):
                try:
                    self._drain()
                finally:
                    self._lock.release()
            snapshot = self._snapshot
            if xid in self._heard_xids or (snapshot is not None and snapshot.ended(xid)):
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                logger.warning("The read model did not hear its own write: reading the database")
                self._forget_all(EVERYTHING)
                return False
            with self._heard:
                self._heard.wait(min(remaining, 0.002))
        return False

    # The thread.

    def _run(self) -> None:
        while not self._stopping.is_set():
            if self._connection is None and (
                self._stopping.wait(RECONNECT_SECONDS if self._warned else 0) or not self.listen()
            ):
                continue
            deadlines = []
            if self.beating:
                deadlines.append(self._next_beat)
            elif self._busy:
                deadlines.append(self._last_beat + TAKE_OVER_SECONDS)
            if self._busy:
                deadlines.append(self._wanted_at + IDLE_AFTER_SECONDS)
            # Idle and not beating: nothing to do until a change arrives or memory is wanted.
            timeout = max(min(deadlines) - time.monotonic(), 0.001) if deadlines else None
            try:
                select.select([self._connection.fileno(), self._wake_read], [], [], timeout)
            except (OSError, ValueError):  # the connection closed under us
                pass
            if self._stopping.is_set():
                return
            try:
                os.read(self._wake_read, 4096)
            except BlockingIOError:
                pass
            beat = False
            with self._lock:
                if self._connection is None or not self._drain():
                    continue
                now = time.monotonic()
                if self.pooled:
                    continue
                wanted = now - self._wanted_at < IDLE_AFTER_SECONDS
                if wanted != self._busy and not self._set_busy(wanted):
                    continue
                if self.beating:
                    # Only while it beats (a demand, heard, resumes it: quiet counts from it).
                    quiet = now - max(self._last_beat, self._last_heard)
                    if self._wanted_anywhere() and quiet > STEP_DOWN_SECONDS + BEAT_SECONDS:
                        self._step_down("it hears none of its own beats")
                    else:
                        beat = now >= self._next_beat
                elif (
                    self._busy
                    and now - self._last_beat > TAKE_OVER_SECONDS
                    and now >= self._next_attempt
                ):
                    self._take_over(now)
            if beat:  # on the beat connection: requests keep reading the listening one
                self._beat(now)

    def _wanted_anywhere(self) -> bool:
        """Whether some process wants memory, as the last beat or a demand showed."""
        return self._someone_busy or self._busy

    def _set_busy(self, busy: bool) -> bool:
        """Take (with a demand for the fast beat) or let go of :data:`BUSY_LOCK`; False if
        the connection was lost. Under the lock."""
        try:
            if busy:
                self._hear_beats(True)  # before the demand: the beat it brings is heard
                self._execute(
                    "SELECT pg_advisory_lock_shared(%s), pg_notify(%s, '')",
                    (BUSY_LOCK, DEMAND_CHANNEL),
                )
                # The beater's answer to the demand has this long before a take-over.
                self._last_beat = time.monotonic()
            else:
                self._execute("SELECT pg_advisory_unlock_shared(%s)", (BUSY_LOCK,))
                self._hear_beats(self.beating)
        except Exception as error:
            self._lose(error)
            return False
        self._busy = busy
        return True

    def _hear_beats(self, on: bool) -> None:
        """Listen to the beat, or stop (raises as ``_execute``). Under the lock."""
        if on != self._hears_beats:
            self._execute(f"{'LISTEN' if on else 'UNLISTEN'} {BEAT_CHANNEL}")
            self._hears_beats = on
            if not on:
                self._proven_at = None  # no proof while not hearing: none to report

    def listen(self) -> bool:
        """Connect and listen (the thread does, and again after a loss); False if it cannot."""
        try:
            connection = self._connect(APPLICATION_NAME)
            connection.execute(f"LISTEN {CHANNEL}")
            server_pid = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
        except Exception as error:  # any failure to connect: try again later
            self._warn(f"The read model cannot listen ({error}): reading the database")
            return False
        if server_pid != connection.info.backend_pid:
            self.pooled = True
            self._warn(
                "The read model listens through a pooler in transaction mode, where a"
                " listening session is lent to others: reading the database (set"
                ' USERGROUPS["LISTEN_DATABASE"] to a direct connection)'
            )
        with self._lock:
            self._forget_all(None)
            self._connection = connection
            self._hears_beats = False
            self._kept = True  # what came with LISTEN's answers
            self._last_beat = time.monotonic()
            self._offsets = [float("inf"), float("inf")]
        logger.info("The read model listens on channel %s", CHANNEL)
        return True

    def _take_over(self, now: float) -> None:
        """No beat heard: beat, if this session can take the lock. Under the lock."""
        try:
            row = self._execute("SELECT pg_try_advisory_lock(%s)", (BEAT_LOCK,))
            won = row.fetchone()[0]
        except Exception as error:
            self._lose(error)
            return
        if not won:  # another beats, or is about to; try again later, less often
            self._next_attempt = now + self._attempt_backoff
            self._attempt_backoff = min(self._attempt_backoff * 2, 5.0)
            return
        try:
            self._execute(f"LISTEN {DEMAND_CHANNEL}")
            self._hear_beats(True)  # its own beats: it steps down without them
            self._beat_connection = self._connect(BEAT_APPLICATION_NAME)
        except Exception as error:
            self._step_down(f"it cannot connect to beat ({error})")
            return
        self._attempt_backoff = TAKE_OVER_SECONDS
        self._last_beat = now  # its own first beat has this long to arrive
        self._next_beat = now  # at once, once the listening connection is free
        logger.info("The read model beats for every process of this database")

    def _beat(self, now: float) -> None:
        """Beat, or, while nobody wants memory, only look."""
        look: tuple[Any, ...] = (QUEUE_USAGE_LIMIT, APPLICATION_NAME, BUSY_LOCK)
        try:
            if self._wanted_anywhere():
                statement = _BEAT, (*look, BEAT_CHANNEL, f"{time.time():.6f}")
            else:
                statement = _LOOK, look
            # Planned once: it runs 40 times a second while memory is wanted.
            row = self._beat_connection.execute(*statement, prepare=True).fetchone()
        except Exception as error:
            with self._lock:
                self._step_down(f"its beat failed ({error})")
            return
        self._someone_busy = row[2]
        self._next_beat = now + (BEAT_SECONDS if self._wanted_anywhere() else LOOK_SECONDS)
        self._end_stopped_readers(now, row[0], row[1])

    def _end_stopped_readers(
        self, now: float, blocked: list[list[Any]] | None, usage: float
    ) -> None:
        """Only while the queue holds more than its limit: end the listening session blocked
        on its client at every beat, in one read, for :data:`STOPPED_READER_SECONDS` while
        the queue did not shrink (a live one goes on to a new read, and the queue shrinks
        once the flood ends); one at a time, the oldest read first."""
        if not blocked:
            self._blocked_since.clear()
            return
        reads = [(pid, xmin) for pid, xmin in blocked]  # [pid, xmin of its read]
        self._blocked_since = {read: self._blocked_since.get(read, (now, usage)) for read in reads}
        stopped = [
            read
            for read, (since, usage_then) in self._blocked_since.items()
            if now - since >= STOPPED_READER_SECONDS and usage >= usage_then
        ]
        if not stopped:
            return
        pid = min(stopped, key=lambda read: self._blocked_since[read][0])[0]
        logger.warning(
            "Ending listening session %s: it stopped reading while the notification queue fills",
            pid,
        )
        try:
            self._beat_connection.execute("SELECT pg_terminate_backend(%s)", (pid,))
        except Exception as error:
            with self._lock:
                self._step_down(f"it could not end a stopped reader ({error})")
            return
        self._blocked_since = {read: (now, usage) for read in reads if read[0] != pid}

    def _step_down(self, why: str) -> None:
        """Stop beating (the lock goes with the listening session's unlock, or its end)."""
        logger.warning("The read model stops beating: %s", why)
        if self._beat_connection is not None:
            try:
                self._beat_connection.close()
            except Exception:
                pass
            self._beat_connection = None
        if self._connection is not None:
            try:
                self._execute(f"UNLISTEN {DEMAND_CHANNEL}")
                self._hear_beats(self._busy)
                self._execute("SELECT pg_advisory_unlock(%s)", (BEAT_LOCK,))
            except Exception as error:
                self._lose(error)
        self._next_attempt = time.monotonic() + self._attempt_backoff
        self._attempt_backoff = min(self._attempt_backoff * 2, 30.0)
        self._blocked_since.clear()

    # Reading the connection, under the lock.

    def _execute(self, sql: str, params: tuple[Any, ...] | None = None) -> Any:
        """A statement on the listening connection. Under the lock."""
        self._kept = True
        return self._connection.execute(sql, params)

    def _drain(self) -> bool:
        """Hand what has arrived to memory; False if the connection is lost."""
        if not self._kept and not self._readable():
            return True  # nothing arrived: no read, which would end in psycopg's timeout
        self._kept = False
        heard = 0
        try:
            # stop_after ends between two reads of the socket, never inside one: a batch
            # already read is handed over whole.
            for notification in self._connection.notifies(timeout=0, stop_after=DRAIN_AT_MOST):
                heard += 1
                if notification.channel == BEAT_CHANNEL:
                    self._heard_beat(notification.payload)
                elif notification.channel == DEMAND_CHANNEL:
                    self._someone_busy, self._next_beat = True, 0.0  # beat at once, and fast
                else:
                    self._heard_change(notification.payload)
        except Exception as error:
            self._lose(error)
            return False
        if heard:
            self._last_heard = time.monotonic()
            with self._heard:
                self._heard.notify_all()
        return True

    def _readable(self) -> bool:
        """Whether the listening socket has bytes to read (or is broken: a read tells)."""
        try:
            return bool(select.select([self._connection.fileno()], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def _heard_beat(self, payload: str) -> None:
        sent_text, snapshot_text = payload.split(" ", 1)
        sent, received = float(sent_text), time.time()
        now = time.monotonic()
        if now - self._offsets_since > 5.0:  # a window of the last 5-10 s
            self._offsets = [self._offsets[1], float("inf")]
            self._offsets_since = now
        self._offsets[1] = min(self._offsets[1], received - sent)
        offset = min(min(self._offsets), CLOCK_SLACK_SECONDS)
        self._snapshot = _Snapshot(snapshot_text)
        self._proven_at = sent + offset
        self._last_beat = now
        if not self._warned:
            return
        self._warned = False
        logger.info("The read model hears again")

    def _heard_change(self, payload: str) -> None:
        xid, change = parse(payload)
        if xid is not None:
            self._heard_xids[xid] = None
            if len(self._heard_xids) > HEARD_KEPT:
                self._heard_xids.popitem(last=False)
        if change is EVERYTHING:
            self._forget_all(EVERYTHING)
        else:
            forgotten = self.memory.forget(change.dependency)
            if self._forgot is not None:
                self._forgot(change, forgotten)

    def _forget_all(self, change: Change | None) -> None:
        forgotten = self.memory.forget_all()
        if self._forgot is not None:
            self._forgot(change, forgotten)

    def _warn(self, message: str) -> None:
        """Once until the listener hears again: a retry every half second must not
        flood the log."""
        if not self._warned:
            logger.warning(message)
            self._warned = True

    def _lose(self, error: BaseException) -> None:
        self._warn(f"The read model lost its listening connection ({error}): reading the database")
        self._close()

    def _close(self) -> None:
        self._proven_at = None
        self._snapshot = None
        for connection in (self._beat_connection, self._connection):
            if connection is not None:
                try:
                    connection.close()
                except Exception:
                    pass
        self._beat_connection = self._connection = None
        self._busy = self._someone_busy = self._hears_beats = False
        self._blocked_since.clear()
        self._forget_all(None)
