"""Model fields that behave the same on every supported database."""

from typing import Any

from django.db import models


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

    MariaDB's ``json`` type is LONGTEXT with ``CHECK (JSON_VALID(...))``, and JSON_VALID
    refuses documents nested 32 deep, which ``MAX_PROPERTIES_DEPTH`` allows: storing one
    failed the check (a 500). Plain LONGTEXT holds them; the app validates the JSON itself.
    """

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "mysql" and connection.mysql_is_mariadb:
            return "longtext"
        return super().db_type(connection)
