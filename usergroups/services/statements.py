"""The app's hot reads that the ORM cannot say, or says at a cost above the rest of
their request: SQL statements written once per database vendor from the models'
metadata and run by ``Manager.raw()``, so that they go through Django's cursor and
the fields' converters like any other query. Parameters are prepared as the ORM
prepares them for their field."""

from collections.abc import Callable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model


def field(model: type[Model], name: str) -> "Field[Any, Any]":
    """The concrete field ``name`` (or its attname) of ``model``."""
    found = model._meta.get_field(name)
    assert isinstance(found, Field)
    return found


def column(connection: BaseDatabaseWrapper, model: type[Model], name: str) -> str:
    """The quoted column of ``model``'s field ``name``."""
    return connection.ops.quote_name(field(model, name).column or "")


def table(connection: BaseDatabaseWrapper, model: type[Model]) -> str:
    """The quoted table of ``model``."""
    return connection.ops.quote_name(model._meta.db_table)


def prepared(connection: BaseDatabaseWrapper, model: type[Model], name: str, value: Any) -> Any:
    """``value`` as the ORM sends it for ``model``'s field ``name``."""
    return field(model, name).get_db_prep_value(value, connection, prepared=False)


_WRITTEN: dict[tuple[str, Any], str] = {}


def written_once(connection: BaseDatabaseWrapper, variant: Any, write: Callable[[], str]) -> str:
    """The statement ``variant`` for ``connection``'s vendor: ``write()`` the first time."""
    key = (connection.vendor, variant)
    return _WRITTEN.get(key) or _WRITTEN.setdefault(key, write())
