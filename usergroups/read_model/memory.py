"""What a process remembers of the database: answers, each with what it depends on,
bounded in entries and in bytes, forgotten by dependency.

A dependency is a hashable name of something a change can touch (a workspace, a group,
a person, a key, a token; :mod:`usergroups.read_model.reads` names them). Forgetting one
drops every entry that depends on it, and only those. A fill is kept only if none of
its dependencies was forgotten between the :meth:`Memory.mark` taken before its
database read and the :meth:`Memory.put` after it: a change heard during the read may
be one the read missed. What was forgotten when is kept for the latest
:data:`FORGOTTEN_KEPT` dependencies; a fill older than what that window still knows is
dropped too.

A part that many answers share (a group's record, held by every grant of its tokens)
is held once (:meth:`Memory.share`) and weighed once, for as long as an entry holds it.
"""

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple

from cachetools import LRUCache

#: What :meth:`Memory.get` answers for a key it does not hold (None is a value).
MISSING: Any = object()
#: How many forgotten dependencies are kept with the moment they were forgotten.
FORGOTTEN_KEPT = 100_000


def weigh(value: Any) -> int:
    """The bytes a JSON-shaped value takes in memory (containers with what they hold)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(weigh(key) + weigh(item) for key, item in value.items())
    elif isinstance(value, list | tuple):
        size += sum(weigh(item) for item in value)
    return size


class _Entry(NamedTuple):
    value: Any
    depends_on: frozenset[Hashable]
    weight: int
    shared: Hashable | None


class _Shared(NamedTuple):
    value: Any
    weight: int


class _Entries(LRUCache[Hashable, _Entry]):
    """The entries, least recently used first out; ``dropped`` hears of each eviction."""

    def __init__(self, max_entries: int, dropped: Callable[[Hashable, _Entry], None]) -> None:
        super().__init__(max_entries)
        self._dropped = dropped

    def popitem(self) -> tuple[Hashable, _Entry]:
        key, entry = super().popitem()
        self._dropped(key, entry)
        return key, entry


class Memory:
    """At most ``max_entries`` answers and ``max_bytes`` bytes. Thread-safe."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries = _Entries(max_entries, self._dropped)
        self._dependents: dict[Hashable, set[Hashable]] = {}
        self._shared: dict[Hashable, _Shared] = {}
        self._shared_users: dict[Hashable, int] = {}
        self._bytes = 0
        self._moment = 0  # advanced by every forget
        self._forgotten_at: OrderedDict[Hashable, int] = OrderedDict()
        self._floor = 0  # no fill from before this moment is kept
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    def mark(self) -> int:
        """Taken before a database read whose answer may be :meth:`put`."""
        return self._moment

    def get(self, key: Hashable) -> Any:
        with self._lock:
            entry = self._entries.get(key)  # a use: the most recently used now
            return MISSING if entry is None else entry.value

    def share(self, key: Hashable, value: Any, weight: int) -> Any:
        """The value held under ``key`` if it equals ``value``, else ``value``: what a
        :meth:`put` then names as its ``shared`` part is weighed once."""
        with self._lock:
            held = self._shared.get(key)
            if held is not None and held.value == value:
                return held.value
            return value

    def put(
        self,
        key: Hashable,
        value: Any,
        depends_on: Iterable[Hashable],
        mark: int,
        weight: int,
        shared: tuple[Hashable, Any, int] | None = None,
    ) -> bool:
        """Keep ``value``, read after ``mark``, unless one of ``depends_on`` was forgotten
        since, or it alone weighs more than the budget. ``shared``: ``(key, part,
        weight)`` of a part the value holds that others may hold too (see :meth:`share`)."""
        dependencies = frozenset(depends_on)
        with self._lock:
            if mark < self._floor or any(
                self._forgotten_at.get(dependency, -1) > mark for dependency in dependencies
            ):
                return False
            shared_key = None
            if shared is not None:
                shared_key, part, part_weight = shared
                held = self._shared.get(shared_key)
                if held is None or held.value is not part:
                    if held is not None:
                        shared_key = None  # another version is held: this one is the entry's
                        weight += part_weight
                    else:
                        self._shared[shared_key] = _Shared(part, part_weight)
                        self._shared_users[shared_key] = 0
                        self._bytes += part_weight
            if weight > self.max_bytes:
                self._release(shared_key)
                return False
            if key in self._entries:
                self._remove(key)
            self._entries[key] = _Entry(value, dependencies, weight, shared_key)
            self._bytes += weight
            if shared_key is not None:
                self._shared_users[shared_key] += 1
            for dependency in dependencies:
                self._dependents.setdefault(dependency, set()).add(key)
            while self._bytes > self.max_bytes and self._entries:
                self._entries.popitem()
            return True

    def forget(self, dependency: Hashable) -> int:
        """Forget every entry that depends on ``dependency``; how many went."""
        with self._lock:
            self._moment += 1
            self._forgotten_at[dependency] = self._moment
            self._forgotten_at.move_to_end(dependency)
            if len(self._forgotten_at) > FORGOTTEN_KEPT:
                _oldest, moment = self._forgotten_at.popitem(last=False)
                self._floor = max(self._floor, moment)
            keys = list(self._dependents.get(dependency, ()))
            for key in keys:
                self._remove(key)
            return len(keys)

    def forget_all(self) -> int:
        with self._lock:
            self._moment += 1
            self._floor = self._moment
            self._forgotten_at.clear()
            count = len(self._entries)
            self._entries.clear()
            self._dependents.clear()
            self._shared.clear()
            self._shared_users.clear()
            self._bytes = 0
            return count

    def _remove(self, key: Hashable) -> None:
        self._dropped(key, self._entries.pop(key))

    def _dropped(self, key: Hashable, entry: _Entry) -> None:
        """What goes with an entry once it is out of :attr:`_entries`."""
        self._bytes -= entry.weight
        for dependency in entry.depends_on:
            dependents = self._dependents.get(dependency)
            if dependents is not None:
                dependents.discard(key)
                if not dependents:
                    del self._dependents[dependency]
        if entry.shared is not None:
            self._shared_users[entry.shared] -= 1
            self._release(entry.shared)

    def _release(self, shared_key: Hashable | None) -> None:
        if shared_key is not None and self._shared_users.get(shared_key) == 0:
            self._bytes -= self._shared.pop(shared_key).weight
            del self._shared_users[shared_key]
