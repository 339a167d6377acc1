"""Model fields that behave the same on every supported database."""

import json
from typing import Any

from django import forms
from django.db import models


def compact_json(value: Any) -> str:
    """The one text form of a JSON value: compact, UTF-8 as is, no NaN or Infinity.

    It is what :class:`JSONTextField` stores and what the size limit of properties is
    measured on. Raises ``ValueError`` for NaN, Infinity, or an integer of more digits
    than Python converts (``sys.get_int_max_str_digits``).
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class ExactCharField(models.CharField):
    """A CharField compared byte for byte on every backend.

    MySQL and MariaDB compare strings case-insensitively and ignore trailing spaces by
    default, which would make ``"Acme"``, ``"acme"`` and ``"acme "`` one user group. A
    binary, no-pad collation there makes them distinct, as they are on PostgreSQL and
    SQLite.
    """

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        params = super().db_parameters(connection)
        if connection.vendor == "mysql":
            params["collation"] = (
                "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
            )
        return params


class PortableJSONField(models.JSONField):
    """A JSONField that stores every document the API accepts, on every backend.

    Replaced by :class:`JSONTextField` (migration 0004); kept for migration 0003.

    MariaDB's ``json`` type is LONGTEXT with ``CHECK (JSON_VALID(...))``, and JSON_VALID
    refuses documents nested 32 deep, which ``MAX_PROPERTIES_DEPTH`` allows: storing one
    failed the check (a 500). Plain LONGTEXT holds them; the app validates the JSON itself.
    """

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "mysql" and connection.mysql_is_mariadb:
            return "longtext"
        return super().db_type(connection)


class JSONTextField(models.TextField):
    """JSON kept as the compact text the app wrote, and read back from that text.

    Databases keep JSON in their own forms and give back those: PostgreSQL's jsonb
    writes ``1e300`` out as a 301-digit integer (a 63 KB value came back as 2.7 MB),
    drops the sign of ``-0.0`` and reorders keys; MariaDB's JSON_VALID refuses
    documents the API allows. A text column gives back the text it was given, on every
    backend, so a value reads back as written and no larger than the size it was
    validated at. The price: no JSON lookups in the database (``properties__key``);
    the app never filters on properties.
    """

    description = "JSON stored as compact text"
    # What django-stubs reads as the field's Python types: any JSON value, not text.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        # The value is already Python data (forms and fixtures hand it over parsed).
        return value

    def get_prep_value(self, value: Any) -> str | None:
        return None if value is None else compact_json(value)

    def value_to_string(self, obj: Any) -> Any:
        # Serialized as JSON data, not as a string holding JSON (like JSONField).
        return self.value_from_object(obj)

    def formfield(self, **kwargs: Any) -> Any:
        # Edited as JSON, not as the text of a TextField.
        return models.Field.formfield(self, **{"form_class": forms.JSONField, **kwargs})
