"""The stored groups and mappings, to show that a request changed nothing."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def stored_state() -> tuple[list[Any], list[Any]]:
    """Every UserGroup and SchemaMapping row, all columns: equal before and after a
    request that must not change the database."""
    from usergroups.models import SchemaMapping, UserGroup

    return (
        list(UserGroup.objects.order_by("pk").values()),
        list(SchemaMapping.objects.order_by("pk").values()),
    )


@contextmanager
def database_unchanged() -> Iterator[None]:
    """Fails the test if the body of the ``with`` changed any group or mapping row."""
    before = stored_state()
    yield
    assert stored_state() == before
