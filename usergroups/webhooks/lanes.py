"""The attempts a worker process has in flight: a **lane** per webhook, a thread of its
own, at most ``WEBHOOK_ATTEMPTS_IN_FLIGHT`` lanes at once.

A task gives its delivery's turn to its webhook's lane and returns: so a receiver that
hangs holds one lane, not the worker, which goes on to its next task. A lane takes its
turns one at a time, in the order the tasks gave them (deliveries to one webhook stay
ordered and one at a time), and ends when it has none left. When every lane is busy, a
task for another webhook waits for one to end, which an attempt's bound makes short.

Once an attempt fails, the turns waiting in its lane are put off, behind the deliveries of
webhooks that answer, to when that attempt is retried: so a lane is held by a receiver
that hangs for one attempt, and the tasks' priorities decide what runs next, as they did
when a task sent its delivery itself.

When the process exits, each lane ends its attempt in flight and takes no other turn:
the turns still waiting stay pending, for the sweeper to enqueue again.
"""

import atexit
import threading
from collections.abc import Callable
from datetime import datetime

from django.db import close_old_connections, connections
from django.utils import timezone

from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger
from usergroups.webhooks.deliveries import Attempted

logger = get_logger(__name__)


class Lanes:
    """Lanes that run ``take_turn(delivery_id, first)`` for each turn given, in threads of
    this process, or ``put_off(delivery_id, until)`` behind an attempt that failed."""

    def __init__(
        self,
        take_turn: Callable[[str, bool], Attempted],
        put_off: Callable[[str, datetime], None],
    ) -> None:
        self.take_turn, self.put_off = take_turn, put_off
        # By webhook: its lane's waiting turns, delivery id -> first (ordered, each once).
        self.waiting: dict[int, dict[str, bool]] = {}
        self.changed = threading.Condition()
        self.stopping = False
        # Daemon threads, stopped here: the interpreter would join other threads before
        # any hook could tell them to stop, and so wait for every turn still waiting.
        atexit.register(self.stop)

    def give(self, webhook_id: int, delivery_id: str, first: bool, most: int) -> None:
        """Give a delivery's turn to its webhook's lane; without one, open it once fewer
        than ``most`` lanes run."""
        with self.changed:
            if webhook_id in self.waiting:
                self.waiting[webhook_id].setdefault(delivery_id, first)
                return
            self.changed.wait_for(lambda: len(self.waiting) < most)
            self.waiting[webhook_id] = {delivery_id: first}
        name = f"usergroups-webhook-{webhook_id}"
        threading.Thread(target=self.run, args=(webhook_id,), name=name, daemon=True).start()

    def run(self, webhook_id: int) -> None:
        """A lane's thread: its turns, then its database connections closed."""
        failed_until: datetime | None = None  # after an attempt that failed: its retry
        ended = False
        try:
            while (turn := self.next_turn(webhook_id)) is not None:
                close_old_connections()  # as a worker does between two tasks
                try:
                    if failed_until is not None:
                        self.put_off(turn[0], failed_until)
                        continue
                    attempted = self.take_turn(*turn)
                    if attempted.outcome is not None and not attempted.outcome.delivered:
                        failed_until = attempted.retry_at or timezone.now()
                except Exception:  # the lane's other turns still run
                    logger.exception("A webhook delivery's turn failed")
            ended = True
        finally:
            if not ended:  # the lane cannot go on: it makes room for another
                with self.changed:
                    self.waiting.pop(webhook_id, None)
                    self.changed.notify_all()
            connections.close_all()

    def next_turn(self, webhook_id: int) -> tuple[str, bool] | None:
        """The lane's next turn; None, and the lane closed, when it has none left or the
        process is exiting."""
        with self.changed:
            waiting = self.waiting[webhook_id]
            if waiting and not self.stopping:
                delivery_id = next(iter(waiting))
                return delivery_id, waiting.pop(delivery_id)
            del self.waiting[webhook_id]
            self.changed.notify_all()
            return None

    def stop(self) -> None:
        """At exit: wait for the attempts in flight (no longer than their lease, after
        which they may be sent again anyway), and start no other."""
        with self.changed:
            self.stopping = True
            if self.waiting:  # (a process that never sent reads no setting at exit)
                lease = float(usergroups_settings.WEBHOOK_LEASE_SECONDS)
                self.changed.wait_for(lambda: not self.waiting, timeout=lease)
