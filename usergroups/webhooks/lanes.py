"""The attempts a worker process has in flight: a **lane** per webhook, a thread of its
own, at most ``WEBHOOK_ATTEMPTS_IN_FLIGHT`` lanes at once.

A task gives its delivery's turn to its webhook's lane and returns: so a receiver that
hangs holds one lane, not the worker, which goes on to its next task. A lane takes its
turns one at a time, in the order the tasks gave them (deliveries to one webhook stay
ordered and one at a time), and ends when it has none left. When every lane is busy, a
task for another webhook waits for one to end, which an attempt's bound makes short.

When the process exits, each lane ends its attempt in flight and takes no other turn:
the turns still waiting stay pending, for the sweeper to enqueue again.
"""

import atexit
import threading
from collections import deque
from collections.abc import Callable

from django.db import close_old_connections, connections

from usergroups.conf import usergroups_settings
from usergroups.logs import get_logger

logger = get_logger(__name__)

#: A delivery's turn: its id, and whether it is its first.
Turn = tuple[str, bool]


class Lanes:
    """Lanes that run ``take_turn`` for each turn given, in threads of this process."""

    def __init__(self, take_turn: Callable[[str, bool], None]) -> None:
        self.take_turn = take_turn
        self.waiting: dict[int, deque[Turn]] = {}  # by webhook: the turns of its lane
        self.changed = threading.Condition()
        self.stopping = False
        # Daemon threads, stopped here: the interpreter would join other threads before
        # any hook could tell them to stop, and so wait for every turn still waiting.
        atexit.register(self.stop)

    def give(self, webhook_id: int, turn: Turn, most: int) -> None:
        """Give ``turn`` to ``webhook_id``'s lane; without one, open it once fewer than
        ``most`` lanes run."""
        with self.changed:
            if webhook_id in self.waiting:
                self.waiting[webhook_id].append(turn)
                return
            self.changed.wait_for(lambda: len(self.waiting) < most)
            self.waiting[webhook_id] = deque([turn])
        name = f"usergroups-webhook-{webhook_id}"
        threading.Thread(target=self.run, args=(webhook_id,), name=name, daemon=True).start()

    def run(self, webhook_id: int) -> None:
        """A lane's thread: its turns, then its database connections closed."""
        ended = False
        try:
            while (turn := self.next_turn(webhook_id)) is not None:
                close_old_connections()  # as a worker does between two tasks
                try:
                    self.take_turn(*turn)
                except Exception:  # the lane's other turns still run
                    logger.exception("A webhook delivery's turn failed")
            ended = True
        finally:
            if not ended:  # the lane cannot go on: it makes room for another
                with self.changed:
                    self.waiting.pop(webhook_id, None)
                    self.changed.notify_all()
            connections.close_all()

    def next_turn(self, webhook_id: int) -> Turn | None:
        """The lane's next turn; None, and the lane closed, when it has none left or the
        process is exiting."""
        with self.changed:
            waiting = self.waiting[webhook_id]
            if waiting and not self.stopping:
                return waiting.popleft()
            del self.waiting[webhook_id]
            self.changed.notify_all()
            return None

    def stop(self) -> None:
        """At exit: wait for the attempts in flight (no longer than their lease, after
        which they may be sent again anyway), and start no other."""
        lease = float(usergroups_settings.WEBHOOK_LEASE_SECONDS)
        with self.changed:
            self.stopping = True
            self.changed.wait_for(lambda: not self.waiting, timeout=lease)
