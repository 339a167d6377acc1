"""The machine's PostgreSQL, administered directly (never through a pooler): a database made
anew for a run, dropped after it, and its backends terminated to inject a fault.

Used by the fault and restart tests (.ci/), the cluster (tests/support/cluster.py) and the
benchmark's scale step (bench/scale.py, whose server ``admin_url`` names).
"""

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ADDRESS = ("127.0.0.1", 5432)


def direct_url(database: str) -> str:
    """The Django ``DATABASE_URL`` of ``database`` on the machine's PostgreSQL."""
    return f"postgres://postgres@{ADDRESS[0]}:{ADDRESS[1]}/{database}"


def recreate_database(database: str, admin_url: str = ADMIN_URL) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{database}"')


def drop_database(database: str, admin_url: str = ADMIN_URL) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def terminate_backends(database: str, admin_url: str = ADMIN_URL) -> int:
    """``pg_terminate_backend`` on every other connection to ``database``: how many went."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return sum(1 for (done,) in rows if done)


def listening_backends(
    database: str, application_name: str | None = None, admin_url: str = ADMIN_URL
) -> list[int]:
    """The backends of ``database`` the read model listens on (its application name), or
    those named ``application_name`` (the beat's)."""
    import psycopg

    from usergroups.read_model.listening import APPLICATION_NAME

    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = %s",
            (application_name or APPLICATION_NAME, database),
        ).fetchall()
    return [pid for (pid,) in rows]


def stored_groups(database: str, workspace: str, prefix: str) -> dict[str, list[dict]]:
    """The groups of ``workspace`` whose id starts with ``prefix``, read with SQL: provided
    id -> its rows (``token_digest``, ``properties``), a list so a doubled group shows."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(
        f"postgresql://postgres@{ADDRESS[0]}:{ADDRESS[1]}/{database}", row_factory=dict_row
    ) as conn:
        rows = conn.execute(
            "SELECT g.provided_id, g.token_digest, g.properties"
            " FROM usergroups_usergroup g JOIN usergroups_workspace w ON w.id = g.workspace_id"
            " WHERE w.slug = %s AND g.provided_id LIKE %s",
            (workspace, prefix.replace("%", r"\%").replace("_", r"\_") + "%"),
        ).fetchall()
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["provided_id"], []).append(row)
    return groups
