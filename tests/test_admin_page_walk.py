"""Every admin page of the app, walked as staff who may do everything but view tokens.

The contract: staff without ``usergroups.view_token`` never see a token, a sealed token
or a digest, in any page. The walk is derived from the admin itself (every URL each
ModelAdmin of the app registers, every link of every changelist, every action), so a new
page or action is walked without changing this test. It runs twice, before and after
the pages that change things (rotation, revocation, add, change, delete), and every
secret any row held at any point is looked for in every page.
"""

import html
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from tests.support.admin import admin_url, create_key, group_form, staff_client
from tests.support.factories import (
    APIKeyFactory,
    SchemaMappingFactory,
    UserGroupFactory,
    WorkspaceFactory,
)
from tests.support.leaks import find_leaks
from usergroups import crypto, services
from usergroups.models import APIKey, UserGroup, Workspace

pytestmark = pytest.mark.django_db

WINDOW = 16  # this many characters of a digest or a sealed token in a page is a leak
RUN = re.compile(rf"[A-Za-z0-9_-]{{{WINDOW},}}")
# Links a changelist offers within the app: its filters, orderings, counts of other lists.
LINK = re.compile(r'href="((?:/admin/usergroups/[^"]*)?\?[^"]*)"')
KEY_SHAPE = re.compile(r"ugk_[A-Za-z0-9_-]{43}")


def app_admins():
    return [
        (model, model_admin)
        for model in apps.get_app_config("usergroups").get_models()
        if admin.site.is_registered(model)
        for model_admin in [admin.site.get_model_admin(model)]
    ]


def all_but_view_token() -> list[str]:
    codenames = Permission.objects.filter(content_type__app_label="usergroups").values_list(
        "codename", flat=True
    )
    return sorted(set(codenames) - {"view_token"})


class Secrets:
    """Every secret seen in the database during the test, by a name that says whose."""

    def __init__(self) -> None:
        self.plain: dict[str, str] = {}  # keys and tokens (ugk_/ugt_)
        self.stored: dict[str, str] = {}  # digests and sealed tokens

    def snapshot(self) -> None:
        for group in UserGroup.objects.all():
            name = f"group {group.pk}"
            self.stored[f"{name} digest {group.token_digest[:6]}"] = group.token_digest
            self.stored[f"{name} sealed {group.token_sealed[:6]}"] = group.token_sealed
            if group.previous_token_digest:
                self.stored[f"{name} previous digest"] = group.previous_token_digest
            if group.token:
                self.plain[f"{name} token {group.token_digest[:6]}"] = group.token
        for key in APIKey.objects.all():
            self.stored[f"key {key.prefix} digest"] = key.digest

    def add_key(self, key: str) -> None:
        self.plain[f"key {key[: crypto.KEY_LOOKUP_LENGTH]}"] = key

    def shown_in(self, page: str, allowed: frozenset = frozenset()) -> list[str]:
        plain = {name: value for name, value in self.plain.items() if value not in allowed}
        leaks = find_leaks(page, plain)
        windows = {
            value[i : i + WINDOW]: name
            for name, value in self.stored.items()
            for i in range(len(value) - WINDOW + 1)
        }
        for run in RUN.findall(page):
            for i in range(len(run) - WINDOW + 1):
                if run[i : i + WINDOW] in windows:
                    leaks.append(windows[run[i : i + WINDOW]])
        return sorted(set(leaks))


class Walk:
    """A client and every page it was answered, each with what it may show."""

    def __init__(self, client) -> None:
        self.client = client
        self.pages: list[tuple[str, str, frozenset]] = []
        self.visited: set[str] = set()

    def keep(self, label: str, response, allowed: frozenset = frozenset()) -> str:
        assert response.status_code == 200, (label, response.status_code)
        page = response.content.decode()
        self.pages.append((label, page, allowed))
        return page

    def get(self, url: str, params=None) -> str:
        label = f"GET {url} {params or ''}"
        if label in self.visited:
            return ""
        self.visited.add(label)
        return self.keep(label, self.client.get(url, params, follow=True))

    def post(self, url: str, data=None) -> str:
        return self.keep(f"POST {url} {data or ''}", self.client.post(url, data, follow=True))

    def every_page(self) -> None:
        """Index pages, every URL of every app admin for every row, changelist links,
        searches and the confirmation pages of every action."""
        self.visited.clear()
        self.get(reverse("admin:index"))
        self.get(reverse("admin:app_list", args=["usergroups"]))
        for model, model_admin in app_admins():
            rows = list(model._default_manager.values_list("pk", flat=True))
            for pattern in model_admin.get_urls():
                if pattern.name is None:
                    continue  # "<id>/": Django's redirect to the change page
                if "object_id" in pattern.pattern.converters:
                    for pk in rows:
                        self.get(reverse(f"admin:{pattern.name}", args=[pk]))
                else:
                    self.get(reverse(f"admin:{pattern.name}"))
            self.changelist(model, model_admin, rows)

    def changelist(self, model, model_admin, rows) -> None:
        url = admin_url(model._meta.model_name, "changelist")
        page = self.get(url)
        for link in sorted(set(LINK.findall(page))):
            link = html.unescape(link)
            self.get(url + link if link.startswith("?") else link)
        for term in ("customer", "a", "ugk_", "ugt_"):
            self.get(url, {"q": term})
        request = self.client.get(url).wsgi_request
        for action in model_admin.get_actions(request):
            self.post(url, {"action": action, ACTION_CHECKBOX_NAME: rows})


@pytest.fixture
def world(settings):
    """Two workspaces with groups (one with mappings, one rotated within a grace period so
    its previous digest is stored) and keys in every state."""
    settings.USERGROUPS = {"ROTATION_GRACE_SECONDS": 300}
    north, south = WorkspaceFactory(slug="north"), WorkspaceFactory(slug="south")
    mapped = UserGroupFactory(workspace=north)
    SchemaMappingFactory.create_batch(2, group=mapped)
    rotated = UserGroupFactory(workspace=north)
    services.groups.rotate_group_token(rotated)
    UserGroupFactory(workspace=south, properties={"nested": {"list": [1, 2.5, "x"]}})
    now = timezone.now()
    keys = [
        APIKeyFactory(workspace=north, name="live"),
        APIKeyFactory(workspace=north, name="used", last_used_at=now),
        APIKeyFactory(workspace=south, name="expired", expires_at=now - timedelta(days=1)),
        APIKeyFactory(workspace=south, name="revoked", revoked_at=now),
    ]
    return {"groups": [mapped, rotated], "keys": keys, "workspaces": [north, south]}


def test_no_page_shows_a_secret_to_staff_without_view_token(world):
    secrets = Secrets()
    for key in world["keys"]:
        secrets.add_key(key.key)
    secrets.snapshot()
    walk = Walk(staff_client(*all_but_view_token()))

    walk.every_page()
    count_before = len(walk.pages)

    # What changes things, each followed to the page it lands on.
    mapped, rotated = world["groups"]
    live_key = world["keys"][0]
    walk.post(admin_url("usergroup", "rotate_token", mapped.pk))
    secrets.snapshot()
    changelist = admin_url("usergroup", "changelist")
    walk.post(
        changelist,
        {"action": "rotate_tokens", "post": "yes", ACTION_CHECKBOX_NAME: [mapped.pk, rotated.pk]},
    )
    secrets.snapshot()
    walk.post(admin_url("apikey", "revoke", live_key.pk))
    walk.post(
        admin_url("usergroup", "add"),
        group_form("walked", "Walked", '{"a": 1}', [("s", "d")], world["workspaces"][0]),
    )
    secrets.snapshot()
    walk.post(
        admin_url("usergroup", "change", rotated.pk),
        group_form(rotated.provided_id, "Renamed", '{"b": 2}'),
    )
    response = create_key(walk.client, world["workspaces"][1], name="walked")
    (new_key,) = set(KEY_SHAPE.findall(response.content.decode()))
    walk.keep("POST apikey add", response, allowed=frozenset([new_key]))
    secrets.add_key(new_key)
    secrets.snapshot()
    used_key = world["keys"][1]
    response = walk.client.post(
        admin_url("apikey", "changelist"),
        {
            "action": "rotate_keys",
            "post": "yes",
            "grace_hours": "1",
            ACTION_CHECKBOX_NAME: [used_key.pk],
        },
        follow=True,
    )
    rotated_keys = frozenset(KEY_SHAPE.findall(response.content.decode()))
    assert len(rotated_keys) == 1 and used_key.key not in rotated_keys
    walk.keep("POST apikey rotate_keys", response, allowed=rotated_keys)
    for key in rotated_keys:
        secrets.add_key(key)
    secrets.snapshot()
    walk.post(admin_url("usergroup", "delete", mapped.pk), {"post": "yes"})
    assert not UserGroup.objects.filter(pk=mapped.pk).exists()

    walk.every_page()
    assert len(walk.pages) > count_before > 40
    assert Workspace.objects.count() == 2 and UserGroup.objects.count() == 3

    assert len(secrets.plain) >= 10 and len(secrets.stored) >= 14
    leaks = {
        label: found
        for label, page, allowed in walk.pages
        if (found := secrets.shown_in(page, allowed))
    }
    assert leaks == {}


def test_the_walk_sees_a_token_where_one_is_shown(world):
    """The check is not blind: a page that does show a token (to someone holding
    ``view_token``) is reported."""
    group = world["groups"][0]
    secrets = Secrets()
    secrets.snapshot()
    walk = Walk(staff_client("view_usergroup", "view_token"))
    page = walk.get(admin_url("usergroup", "change", group.pk))
    assert [name for name in secrets.shown_in(page) if "token" in name]
    planted = f"<p>{group.token_digest}</p><p>x{group.token_sealed[5:30]}x</p>"
    assert len(secrets.shown_in(planted)) == 2
