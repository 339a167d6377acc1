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
