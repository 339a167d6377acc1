"""A move of a group with 1,000 descendants, timed: ``python -m bench.moves [MOVES]``
(Django settings and database from the environment, migrated; ``bench.run`` runs it on
each backend's ``scratch`` data set).

Builds, in a workspace of its own, two top-level groups and a group under the first with
1,000 descendants (10 children of 99 children each: 3 levels), then moves it, through
``usergroups.services.groups.update_group`` as PUT does, back and forth between the two,
MOVES times (default 20). A move locks the workspace's row and the group's, reads the new
parent's ancestors and the group's subtree (one recursive query each), and updates one
row: its cost grows with the subtree only through the subtree query. Prints one JSON
line: the median and the slowest move, in milliseconds.
"""

import json
import statistics
import sys
import time
import uuid

CHILDREN, GRANDCHILDREN = 10, 99  # 10 + 10 * 99 = 1,000 descendants


def main() -> None:
    import django

    django.setup()
    from usergroups import crypto
    from usergroups.models import UserGroup, Workspace
    from usergroups.services import groups

    moves = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    workspace = Workspace.objects.create(slug=f"bench-moves-{uuid.uuid4().hex[:12]}")
    for provided_id in ("from", "to"):
        groups.create_group(workspace.pk, provided_id, provided_id, {}, None)
    groups.create_group(workspace.pk, "moved", "moved", {}, {"a": 1}, "from")
    moved = UserGroup.objects.get(workspace=workspace, provided_id="moved")

    def new(provided_id: str, parent_id: int) -> UserGroup:
        group = UserGroup(
            workspace=workspace, provided_id=provided_id, name=provided_id, parent_id=parent_id
        )
        group.set_token(crypto.new_group_token())
        return group

    children = UserGroup.objects.bulk_create([new(f"child-{c}", moved.pk) for c in range(CHILDREN)])
    UserGroup.objects.bulk_create(
        [
            new(f"grandchild-{c}-{g}", child.pk)
            for c, child in enumerate(children)
            for g in range(GRANDCHILDREN)
        ]
    )
    descendants = UserGroup.objects.filter(workspace=workspace).count() - 3
    timings = []
    for number in range(moves):
        parent = "to" if number % 2 == 0 else "from"
        started = time.perf_counter()
        record = groups.update_group(workspace.pk, "moved", {"parent_user_group_id": parent})
        timings.append((time.perf_counter() - started) * 1000)
        assert record is not None and record.parent_user_group_id == parent
    print(
        json.dumps(
            {
                "descendants": descendants,
                "moves": moves,
                "median_ms": round(statistics.median(timings), 2),
                "max_ms": round(max(timings), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
