"""Real concurrency for race tests: threads released at once, each with its own
database connection (a file on SQLite, so every connection sees the same database)."""

import threading

from django.db import connections

THREADS = 8
JOIN_TIMEOUT = 60


def run_together(count, call):
    """Run ``call(i)`` in ``count`` threads released at once; their results, in order.

    Each thread closes its own database connections when done, so none is left open
    when the test database is flushed or dropped.
    """
    barrier = threading.Barrier(count)
    results = [None] * count
    errors = []

    def worker(index):
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            results[index] = call(index)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    assert not errors, errors
    return results
