"""Transactions the database rolled back to resolve a deadlock or a serialization failure,
through no fault of their own, are run again, a bounded number of times.

(Not the API's 409 ``Conflict``, which answers a request at odds with what is stored.)

When two transactions each wait for a lock the other holds (a deadlock), or the
database cannot serialize them, it rolls one back so the other can go on. Nothing was
wrong with the one rolled back: run again, it succeeds or gets the answer the winner
left (404, "id taken"). InnoDB (MariaDB, MySQL) deadlocks even among single-row inserts,
updates and deletes of one unique key, so without this a race of ordinary requests on
one ``user_group_id`` would be answered 503.
"""

import functools
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, router, transaction

from usergroups.logs import get_logger
from usergroups.models import UserGroup

logger = get_logger(__name__)

ATTEMPTS = 5

P = ParamSpec("P")
R = TypeVar("R")

# PostgreSQL SQLSTATEs: serialization_failure, deadlock_detected.
_POSTGRES_CONFLICTS = {"40001", "40P01"}
# MySQL/MariaDB error numbers: ER_LOCK_DEADLOCK, ER_CHECKREAD (a snapshot-isolation conflict).
_MYSQL_CONFLICTS = {1213, 1020}


def is_deadlock_or_serialization_failure(exc: OperationalError) -> bool:
    """Whether ``exc`` is a deadlock or serialization failure, not another failure (a lost
    connection, a lock wait that timed out: running again would only wait again)."""
    cause = exc.__cause__
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if state in _POSTGRES_CONFLICTS:
        return True
    return bool(exc.args) and exc.args[0] in _MYSQL_CONFLICTS


def retry_on_deadlock(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` again when the database rolls it back to resolve a deadlock or a
    serialization failure, at most :data:`ATTEMPTS` times in all; the last failure
    propagates (answered 503). Not inside an enclosing transaction: InnoDB rolls the
    whole of it back, so only its owner can run it again."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return function(*args, **kwargs)
            except OperationalError as exc:
                connection = transaction.get_connection(router.db_for_write(UserGroup))
                if (
                    attempt == ATTEMPTS
                    or connection.in_atomic_block
                    or not is_deadlock_or_serialization_failure(exc)
                ):
                    raise
                logger.info(
                    "%s lost a conflict with another transaction (%s); running it again",
                    function.__name__,
                    str(exc).strip().split("\n", 1)[0],
                )
            # A random pause, growing, so the same transactions do not meet again at once.
            time.sleep(random.uniform(0, 0.005 * 2**attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    return run
