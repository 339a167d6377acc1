"""Helpers for the admin tests: staff users with chosen permissions, admin URLs, the
POST data of the group form."""

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from usergroups.models import Workspace
from usergroups.scopes import SCOPES


def staff_client(*codenames: str, username: str = "operator") -> Client:
    """A client logged in as a staff user (not superuser) holding ``codenames``
    (of the usergroups app, e.g. ``"view_usergroup"``)."""
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="usergroups", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def admin_url(model: str, view: str, *args: object) -> str:
    return reverse(f"admin:usergroups_{model}_{view}", args=args)


def group_form(
    provided_id: str = "acme",
    name: str = "Acme",
    properties: str = "",
    mappings: Sequence[tuple[str, str]] = (),
    workspace: Workspace | None = None,
) -> dict[str, str]:
    """POST data of the group change form with new (not yet saved) mappings."""
    data = {
        "provided_id": provided_id,
        "name": name,
        "properties": properties,
        "mappings-TOTAL_FORMS": str(len(mappings)),
        "mappings-INITIAL_FORMS": "0",
        "mappings-MIN_NUM_FORMS": "0",
        "mappings-MAX_NUM_FORMS": "1000",
    }
    if workspace is not None:
        data["workspace"] = str(workspace.pk)
    for i, (schema_id, source) in enumerate(mappings):
        data[f"mappings-{i}-schema_id"] = schema_id
        data[f"mappings-{i}-data_source_id"] = source
    return data


def create_key(client: Client, workspace: Workspace, **fields: str | list[str]) -> Any:
    """POST the admin's add-key form for ``workspace``, with every scope ticked as the
    form starts (``scopes=["read"]`` narrows); the response (the one-time key page)."""
    data: dict[str, str | list[str]] = {
        "workspace": str(workspace.pk),
        "name": "Backend",
        "expires_at_0": "",
        "expires_at_1": "",
        "scopes": list(SCOPES),
    }
    data.update(fields)
    return client.post(admin_url("apikey", "add"), data)
