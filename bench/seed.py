"""Seed one benchmark data set: ``python -m bench.seed ROWS`` (Django settings from the env).

Makes the workspace, an API key, the target group (through ``usergroups.services``, so
its token is real and sealed), the same for baseline (2) behind a DRF token, and fills
the tables up to ROWS groups in bulk: ``INSERT … SELECT generate_series`` on
PostgreSQL, ``executemany`` on SQLite. Filler rows get random hex digests and sealed
values (no valid token opens them, which the benchmark never needs). Prints one JSON
line with the credentials the load generator needs.
"""

import json
import os
import secrets
import sys
import time


def main() -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from bench.baseline.models import Group, Mapping
    from bench.workload import (
        DEEP_ANCESTORS,
        DEEP_ID,
        TARGET_ID,
        TARGET_MAPPING,
        TARGET_NAME,
        TARGET_PROPERTIES,
    )
    from usergroups.models import APIKey, SchemaMapping, UserGroup, Workspace
    from usergroups.services import groups, keys

    rows = int(sys.argv[1])
    obvious_rows = int(sys.argv[2]) if len(sys.argv) > 2 else min(rows, 1000)
    started = time.monotonic()

    with transaction.atomic():
        workspace, _ = Workspace.objects.get_or_create(slug="bench")
        api_key = keys.issue_key(APIKey(workspace=workspace, name="bench"))
        user, _ = get_user_model().objects.get_or_create(username="bench")
        drf_token, _ = Token.objects.get_or_create(user=user)
    group, _ = groups.get_or_create_group(
        workspace.pk,
        TARGET_ID,
        name=TARGET_NAME,
        mapping=TARGET_MAPPING,
        properties=TARGET_PROPERTIES,
    )
    # The depth-5 group: four ancestors, each with properties and a mapping of its own.
    parent = None
    for level, provided_id in enumerate([*DEEP_ANCESTORS, DEEP_ID], start=1):
        groups.get_or_create_group(
            workspace.pk,
            provided_id,
            mapping={"sales": f"ds-level-{level}", f"schema-{level}": f"ds-{level}"},
            properties={"region": "eu-west", f"level_{level}": level},
            parent_user_group_id=parent,
        )
        parent = provided_id
    obvious, _ = Group.objects.get_or_create(
        owner=user,
        provided_id=TARGET_ID,
        defaults={
            "name": TARGET_NAME,
            "properties": TARGET_PROPERTIES,
            "token": secrets.token_urlsafe(32),
        },
    )
    Mapping.objects.bulk_create(
        [Mapping(group=obvious, schema_id=k, data_source_id=v) for k, v in TARGET_MAPPING.items()],
        ignore_conflicts=True,
    )

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA cache_size = -1000000")  # 1 GB: random-key indexes
    with transaction.atomic():
        fill(connection, UserGroup, SchemaMapping, workspace.pk, rows - 1, "ours")
        fill(connection, Group, Mapping, user.pk, obvious_rows - 1, "obvious")
    now = timezone.now()
    APIKey.objects.filter(workspace=workspace).update(last_used_at=now)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(
        json.dumps(
            {
                "api_key": api_key,
                "drf_token": drf_token.key,
                "groups": UserGroup.objects.count(),
                "obvious_groups": Group.objects.count(),
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )


def fill(connection, group_model, mapping_model, owner_id: int, count: int, kind: str) -> None:
    """``count`` filler groups with one mapping each, in bulk, in the caller's transaction.

    Rows are inserted in the order of their (random) digests, so every index grows at its
    right edge instead of being written all over.
    """
    if count <= 0:
        return
    meta = group_model._meta
    groups, mappings = meta.db_table, mapping_model._meta.db_table
    pk = meta.pk.column
    owner = "workspace_id" if kind == "ours" else "owner_id"
    secret = "token_digest" if kind == "ours" else "token"
    now = "2026-01-01 00:00:00+00"
    props = '{"region": "eu-west"}'
    random = os.urandom(32 * count).hex()
    digests = sorted(random[64 * i : 64 * i + 64] for i in range(count))
    del random
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX({pk}), 0) FROM {groups}")
        base = cursor.fetchone()[0] + 1
        extra_cols = ", token_sealed, embed_generation" if kind == "ours" else ""

        def group_rows():
            for i, digest in enumerate(digests):
                row = [base + i, owner_id, f"filler-{i:07d}", f"Filler {i}", props, digest]
                if kind == "ours":
                    row.append(digest[::-1][:43])  # a 43-character stand-in sealed value
                    row.append(0)  # embed_generation: no embed token revoked yet
                yield (*row, now, now)

        columns = f"{pk}, {owner}, provided_id, name, properties, {secret}{extra_cols}, created_at, updated_at"
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # psycopg's own cursor, for COPY
            # Foreign keys are DEFERRABLE INITIALLY DEFERRED: a million checks at COMMIT.
            # The rows are consistent by construction, so skip the triggers for this load.
            raw.execute("SET LOCAL session_replication_role = replica")
            raw.execute("SET LOCAL synchronous_commit = off")
            with raw.copy(f"COPY {groups} ({columns}) FROM STDIN") as copy:
                for row in group_rows():
                    copy.write_row(row)
            with raw.copy(
                f"COPY {mappings} (group_id, schema_id, data_source_id) FROM STDIN"
            ) as copy:
                for i in range(count):
                    copy.write_row((base + i, "sales", f"ds-{i}"))
            raw.execute(
                f"SELECT setval(pg_get_serial_sequence('{groups}', '{pk}'), %s)",
                [base + count],
            )
            return
        placeholders = ", ".join(["%s"] * len(columns.split(",")))
        cursor.executemany(
            f"INSERT INTO {groups} ({columns}) VALUES ({placeholders})", group_rows()
        )
        cursor.executemany(
            f"INSERT INTO {mappings} (group_id, schema_id, data_source_id) VALUES (%s, %s, %s)",
            ((base + i, "sales", f"ds-{i}") for i in range(count)),
        )


if __name__ == "__main__":
    main()
