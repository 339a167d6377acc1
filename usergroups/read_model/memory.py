"""What a process remembers of the database: a bounded map whose entries each belong to
one workspace, forgotten a workspace at a time.

An entry is kept with the generation its workspace had when it was filled; forgetting a
workspace advances that generation, so its entries stop answering at once, whatever
their number (the map's least recently used entries make room for new ones). A fill is
kept only if nothing was forgotten between the :meth:`Memory.mark` taken before its
database read and the :meth:`Memory.put` after it: a change heard during the read may
be one the read missed.
"""

import threading
from collections.abc import Hashable
from typing import Any, NamedTuple

from cachetools import LRUCache

#: What :meth:`Memory.get` answers for a key it does not hold (None is a value).
MISSING: Any = object()


class _Entry(NamedTuple):
    value: Any
    workspace_id: int
    workspace_generation: int
    generation: int


class Memory:
    """At most ``max_entries`` values, each of one workspace. Thread-safe."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: LRUCache[Hashable, _Entry] = LRUCache(maxsize=max_entries)
        self._workspace_generations: dict[int, int] = {}
        self._generation = 0  # advanced by forget_all
        self._forgotten = 0  # advanced by every forget
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def mark(self) -> int:
        """Taken before a database read whose answer may be :meth:`put`."""
        return self._forgotten

    def get(self, key: Hashable) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return MISSING
            current = (
                entry.generation == self._generation
                and entry.workspace_generation
                == self._workspace_generations.get(entry.workspace_id, 0)
            )
            if not current:
                del self._entries[key]
                return MISSING
            return entry.value

    def put(self, key: Hashable, value: Any, workspace_id: int, mark: int) -> bool:
        """Keep ``value``, read after ``mark``, unless something was forgotten since."""
        with self._lock:
            if self._forgotten != mark:
                return False
            generation = self._workspace_generations.get(workspace_id, 0)
            self._entries[key] = _Entry(value, workspace_id, generation, self._generation)
            return True

    def forget_workspace(self, workspace_id: int) -> None:
        with self._lock:
            self._forgotten += 1
            if len(self._workspace_generations) >= self.max_entries:
                # Bounded too: past it, forgetting everything is the cheap safe answer.
                self._forget_all()
                return
            generations = self._workspace_generations
            generations[workspace_id] = generations.get(workspace_id, 0) + 1

    def forget_all(self) -> None:
        with self._lock:
            self._forget_all()

    def _forget_all(self) -> None:
        self._forgotten += 1
        self._generation += 1
        self._entries.clear()
        self._workspace_generations.clear()
