"""A per-process memory of the embed tokens whose signature this process has checked.

A dashboard sends the same embed token with every data request of its life, and the
Ed25519 check is most of verification's CPU. A token whose exact bytes were verified
under a key still in force needs no second check: the same bytes carry the same
signature. Only that is remembered, never what the token grants: its claims are read
from the token again and checked against the clock (``exp``), and the group's generation
(revocation) is read from the database, on every request, so expiry and revocation stay
immediate on every process.

Entries are keyed by the SHA-256 digest of the token, never the token itself (a heap
dump holds no usable token), bounded (least recently used first out), and all dropped
when the keys in force change (a secret rotation that removes a key, another
``EMBED_SIGNING_KEY``): a remembered check holds only for the keys it was made with.
A lookup by digest tells a caller nothing about other tokens: it would need a token
whose digest matches, i.e. the token.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

from usergroups.embed.keys import SigningKey

#: How many verified tokens a process remembers (about 150 bytes each).
MAX_ENTRIES = 4096


def digest(token: str) -> bytes:
    """What the memory keys a token by (``token`` is ASCII: its shape was checked)."""
    return hashlib.sha256(token.encode("ascii")).digest()


class VerifiedSignatures:
    """Digests of tokens whose signature held, under one set of keys in force."""

    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, None] = OrderedDict()
        # The key objects the entries were checked under; compared by identity, and
        # held, so that an identity is never reused by another key while remembered.
        self._ring: tuple[SigningKey, ...] = ()
        self._lock = threading.Lock()  # threaded servers: an OrderedDict is not atomic

    def _same_ring(self, ring: Sequence[SigningKey]) -> bool:
        mine = self._ring
        return len(mine) == len(ring) and all(a is b for a, b in zip(mine, ring, strict=True))

    def holds(self, key: bytes, ring: Sequence[SigningKey]) -> bool:
        """Whether the token of digest ``key`` was verified under the keys ``ring``."""
        with self._lock:
            if not self._same_ring(ring):
                self._entries.clear()
                self._ring = tuple(ring)
                return False
            if key not in self._entries:
                return False
            self._entries.move_to_end(key)
            return True

    def remember(self, key: bytes, ring: Sequence[SigningKey]) -> None:
        """Note that the token of digest ``key`` verified under ``ring``."""
        with self._lock:
            if not self._same_ring(ring):
                self._entries.clear()
                self._ring = tuple(ring)
            self._entries[key] = None
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def forget(self, key: bytes) -> None:
        """Drop one token (e.g. once it has expired: it never verifies again)."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._ring = ()

    def __len__(self) -> int:
        return len(self._entries)


#: This process's memory (see the module's docstring).
signatures = VerifiedSignatures()
