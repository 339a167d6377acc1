"""``manage.py usergroups_status``: what the database can tell about the read model.

On PostgreSQL, from ``pg_stat_activity`` and ``pg_locks`` of the database the processes
listen on: who listens (by client address and application name), how full the server's
notification queue is, and who proves hearing for everyone (the holder of the beat's
advisory lock) and how long ago it last beat. It exits with 1 when the read model is on
and no process listens. Elsewhere the read model is off, which it says, exiting with 0.
"""

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import connections

from usergroups import read_model
from usergroups.conf import usergroups_settings
from usergroups.management.base import AuditedCommand
from usergroups.read_model.listening import APPLICATION_NAME as LISTEN_APPLICATION_NAME
from usergroups.read_model.listening import BEAT_APPLICATION_NAME, BEAT_LOCK

# Unix-socket clients have no address: "local".
_CONNECTIONS = """
    SELECT COALESCE(host(client_addr), 'local'), client_hostname, application_name, count(*)
    FROM pg_stat_activity
    WHERE datname = current_database() AND application_name IN (%s, %s)
    GROUP BY 1, 2, 3 ORDER BY 3 DESC, 1, 2
"""
# A bigint advisory key shows in pg_locks as classid (high half), objid (low), objsubid 1.
_BEATER = """
    SELECT a.pid, a.application_name, COALESCE(host(a.client_addr), 'local'),
           a.client_hostname, extract(epoch FROM now() - a.backend_start)
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND (l.classid::bigint << 32 | l.objid::bigint) = %s
"""
# The last statement of each beating connection is its last beat.
_BEATS = """
    SELECT pid, COALESCE(host(client_addr), 'local'),
           extract(epoch FROM now() - COALESCE(query_start, state_change))
    FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = %s
    ORDER BY 3
"""


class Command(AuditedCommand):
    help = (
        "Show what the database tells about the read model: the processes listening, by "
        "host and application name; the notification queue's usage; who proves hearing "
        "for everyone, and how long ago. Exits with 1 when the read model is on and "
        "nobody listens."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="One JSON object on stdout."
        )

    def handle(self, *args: Any, as_json: bool, **options: Any) -> None:
        status = read_model_status()
        self.stdout.write(json.dumps(status, sort_keys=True) if as_json else as_text(status))
        if status["read_model"] == "on" and not status["listening_processes"]:
            raise CommandError("The read model is on, but no process listens.", returncode=1)


def read_model_status() -> dict[str, Any]:
    """The status as plain data (what ``--json`` prints)."""
    alias = read_model.listen_alias()
    database = connections[alias]
    status: dict[str, Any] = {
        "read_model": "on" if read_model.enabled() else "off",
        "off_because": off_because(database.vendor),
        "vendor": database.vendor,
        "database_alias": alias,
    }
    if database.vendor != "postgresql":
        return status
    with database.cursor() as cursor:
        cursor.execute(_CONNECTIONS, [LISTEN_APPLICATION_NAME, BEAT_APPLICATION_NAME])
        connections_seen = [
            {"client": client, "client_hostname": hostname, "application_name": name, "count": n}
            for client, hostname, name, n in cursor.fetchall()
        ]
        cursor.execute("SELECT current_database(), pg_notification_queue_usage()")
        status["database"], usage = cursor.fetchone()
        cursor.execute(_BEATER, [BEAT_LOCK])
        beater = cursor.fetchone()
        cursor.execute(_BEATS, [BEAT_APPLICATION_NAME])
        beats = cursor.fetchall()
    status["connections"] = connections_seen
    status["listening_processes"] = sum(
        row["count"]
        for row in connections_seen
        if row["application_name"] == LISTEN_APPLICATION_NAME
    )
    status["notification_queue_usage"] = usage
    status["beater"] = beater_of(beater, beats)
    return status


def off_because(vendor: str) -> str | None:
    if vendor != "postgresql":
        return f"the read model runs on PostgreSQL only, and this database is {vendor}"
    if usergroups_settings.READ_MODEL is False:
        return 'USERGROUPS["READ_MODEL"] is False'
    if not read_model.enabled():
        return (
            "the database looks pooled in transaction mode (DISABLE_SERVER_SIDE_CURSORS) "
            'and USERGROUPS["LISTEN_DATABASE"] names no direct one (check usergroups.W005)'
        )
    return None


def beater_of(holder: tuple | None, beats: list[tuple]) -> dict[str, Any] | None:
    """The lock holder, and the last beat sent from its host (its own beating connection)."""
    if holder is None:
        return None
    pid, name, client, hostname, session_seconds = holder
    own = [(beat_pid, age) for beat_pid, beat_client, age in beats if beat_client == client]
    return {
        "pid": pid,
        "application_name": name,
        "client": client,
        "client_hostname": hostname,
        "session_seconds": float(session_seconds),
        "beat_pid": own[0][0] if own else None,
        "last_beat_seconds": float(own[0][1]) if own else None,
    }


def as_text(status: dict[str, Any]) -> str:
    if status["off_because"] and status["vendor"] != "postgresql":
        return f"Read model: off ({status['off_because']})."
    lines = [
        f"Read model: {status['read_model']}"
        + (f" ({status['off_because']})" if status["off_because"] else "")
        + f"; database {status['database']!r} (alias {status['database_alias']!r})."
    ]
    lines.append(f"Processes listening: {status['listening_processes']}")
    if status["connections"]:
        lines.append("Connections by client and application name:")
    for row in status["connections"]:
        host = row["client"] + (f" ({row['client_hostname']})" if row["client_hostname"] else "")
        lines.append(f"  {host:<24} {row['application_name']:<20} {row['count']}")
    lines.append(f"Notification queue: {status['notification_queue_usage']:.2%} used")
    beater = status["beater"]
    if beater is None:
        lines.append("Proof of hearing: nobody holds the beat lock (nobody beats).")
    else:
        beat = (
            f"last beat {beater['last_beat_seconds']:.3f} s ago "
            f"(pid {beater['beat_pid']}, {BEAT_APPLICATION_NAME})"
            if beater["beat_pid"] is not None
            else "no beating connection from its host"
        )
        lines.append(
            f"Proof of hearing: pid {beater['pid']} ({beater['application_name']} on "
            f"{beater['client']}) holds the beat lock; {beat}."
        )
    return "\n".join(lines)
