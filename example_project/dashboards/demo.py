"""The demo groups ``make demo`` seeds, through the same service the API uses."""

from django.conf import settings

from example_project.dashboards.sources import ensure_sample_data
from usergroups.models import Workspace
from usergroups.records import GroupRecord
from usergroups.services import groups

#: What a customer site's backend would send to ``GET /api/user`` for each of its customers.
DEMO_GROUPS = [
    {
        "user_group_id": "acme-eu",
        "name": "Acme Europe",
        "mapping": {"sales": "eu_warehouse"},
        "properties": {"regions": ["DE", "FR"], "plan": "enterprise"},
    },
    {
        "user_group_id": "initech-uk",
        "name": "Initech UK",
        "mapping": {"sales": "eu_warehouse"},
        "properties": {"regions": "UK", "plan": "pro"},
    },
    {
        "user_group_id": "globex-us",
        "name": "Globex Americas",
        "mapping": {"sales": "us_warehouse"},
        "properties": {"regions": ["US-East", "US-West"], "plan": "pro"},
    },
]


def demo_workspace_slug() -> str:
    return getattr(settings, "DASHBOARDS_DEMO_WORKSPACE", "demo")


def seed_demo_groups(workspace: Workspace) -> list[tuple[GroupRecord, bool]]:
    """Get or create each demo group (a group that exists is left as it is)."""
    ensure_sample_data()
    return [
        groups.get_or_create_group(
            workspace.pk,
            spec["user_group_id"],
            name=spec["name"],
            mapping=spec["mapping"],
            properties=spec["properties"],
        )
        for spec in DEMO_GROUPS
    ]


def seed_demo(workspace: Workspace, stdout, base_url: str) -> None:
    """For ``manage.py demo_setup``: seed the groups and print the demo page's address."""
    created = sum(new for _, new in seed_demo_groups(workspace))
    names = ", ".join(spec["user_group_id"] for spec in DEMO_GROUPS)
    stdout.write(
        f"Demo groups in workspace {workspace.slug!r}: {names} ({created} new).\n"
        f"Embedded dashboards demo (customer site): {base_url.rstrip('/')}/demo/\n"
    )
