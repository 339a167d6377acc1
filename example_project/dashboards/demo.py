"""The demo groups and people ``make demo`` seeds, through the services the API uses."""

from django.conf import settings

from example_project.dashboards.sources import ensure_sample_data
from usergroups.models import Workspace
from usergroups.records import GroupRecord
from usergroups.services import end_users, groups

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


#: The customer site's own directory of people: who may sign in for which customers, and
#: the attributes its backend sends with each mint (``end_user`` in the mint body). A
#: person's ``territory`` narrows the customer's ``regions`` (the dashboard's query ANDs
#: both): it cannot widen them, and it cannot replace the key the group sets (contract 6a).
#: One person may work for several customers (Dana), with one set of attributes.
DEMO_PEOPLE = [
    {
        "end_user_id": "anna.schmidt",
        "display_name": "Anna Schmidt",
        "title": "Sales rep, Germany",
        "customers": ["acme-eu"],
        "attributes": {"territory": ["DE"]},
    },
    {
        "end_user_id": "bruno.lefevre",
        "display_name": "Bruno Lefèvre",
        "title": "Sales rep, France",
        "customers": ["acme-eu"],
        "attributes": {"territory": ["FR"]},
    },
    {
        "end_user_id": "carla.rossi",
        "display_name": "Carla Rossi",
        "title": "Head of sales, Europe",
        "customers": ["acme-eu"],
        "attributes": {"territory": ["DE", "FR"]},
    },
    {
        "end_user_id": "peter.gibbons",
        "display_name": "Peter Gibbons",
        "title": "Sales rep, UK",
        "customers": ["initech-uk"],
        "attributes": {"territory": ["UK"]},
    },
    {
        "end_user_id": "dana.kowalski",
        "display_name": "Dana Kowalski",
        "title": "Consultant (Germany, UK)",
        "customers": ["acme-eu", "initech-uk"],
        "attributes": {"territory": ["DE", "UK"]},
    },
    {
        "end_user_id": "hank.scorpio",
        "display_name": "Hank Scorpio",
        "title": "Director of sales, Americas",
        "customers": ["globex-us"],
        "attributes": {"territory": ["US-East", "US-West"]},
    },
    {
        "end_user_id": "frank.grimes",
        "display_name": "Frank Grimes",
        "title": "Sales rep, US West",
        "customers": ["globex-us"],
        "attributes": {"territory": ["US-West"]},
    },
]


def people_of(provided_id: str) -> list[dict]:
    """The people who may sign in for the customer ``provided_id``, in directory order."""
    return [person for person in DEMO_PEOPLE if provided_id in person["customers"]]


def person_of(provided_id: str, end_user_id: str) -> dict | None:
    """The person ``end_user_id`` if they may sign in for ``provided_id``, else None."""
    return next((p for p in people_of(provided_id) if p["end_user_id"] == end_user_id), None)


def end_user_of(person: dict) -> dict:
    """What the customer site's backend sends as ``end_user`` in the API's mint body when
    it mints for ``person``: their id and the directory's fields."""
    return {
        "id": person["end_user_id"],
        "display_name": person["display_name"],
        "attributes": person["attributes"],
    }


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


def seed_demo_people(workspace: Workspace) -> list[tuple[end_users.EndUserRecord, bool]]:
    """Create each demo person as an end user, or set the fields that differ: the admin
    lists them before anyone signs in. Minting for them later writes nothing."""
    return [
        end_users.put_end_user(
            workspace.pk,
            person["end_user_id"],
            {"display_name": person["display_name"], "attributes": person["attributes"]},
        )
        for person in DEMO_PEOPLE
    ]


def seed_demo(workspace: Workspace, stdout, base_url: str) -> None:
    """For ``manage.py demo_setup``: seed the groups and the people, and print the demo
    page's address."""
    created = sum(new for _, new in seed_demo_groups(workspace))
    names = ", ".join(spec["user_group_id"] for spec in DEMO_GROUPS)
    people = sum(new for _, new in seed_demo_people(workspace))
    ids = ", ".join(person["end_user_id"] for person in DEMO_PEOPLE)
    stdout.write(
        f"Demo groups in workspace {workspace.slug!r}: {names} ({created} new).\n"
        f"Demo people (end users): {ids} ({people} new).\n"
        f"Embedded dashboards demo (customer site): {base_url.rstrip('/')}/demo/\n"
    )
