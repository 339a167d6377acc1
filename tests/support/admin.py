"""Helpers for the admin tests: staff users with chosen permissions, admin URLs, the
POST data of the group form."""

import re
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


def create_key(
    client: Client, workspace: Workspace, follow: bool = True, **fields: str | list[str]
) -> Any:
    """POST the admin's add-key form for ``workspace``, with every scope ticked as the
    form starts (``scopes=["read"]`` narrows), and follow its redirect unless ``follow``
    is False; the response (the one-time key page, or the form again with its errors)."""
    data: dict[str, str | list[str]] = {
        "workspace": str(workspace.pk),
        "name": "Backend",
        "expires_at_0": "",
        "expires_at_1": "",
        "scopes": list(SCOPES),
    }
    data.update(fields)
    return client.post(admin_url("apikey", "add"), data, follow=follow)


def shown_once(client: Client, posted: Any, shape: re.Pattern[str]) -> list[str]:
    """The secrets (matching ``shape``) that the POST answered by ``posted`` made, from
    the page it redirects to. That page shows them on its first GET only, the session
    never holds them in plain form, and a second GET shows them no more: it redirects
    with a message."""
    assert posted.status_code == 302, posted.content
    page = posted["Location"]
    session_before = str(dict(client.session))
    first = client.get(page)
    assert first.status_code == 200 and "no-store" in first["Cache-Control"]
    secrets = shape.findall(first.content.decode())
    assert secrets
    assert not any(secret in session_before for secret in secrets)
    assert not any(secret in str(dict(client.session)) for secret in secrets)
    again = client.get(page, follow=True)
    assert again.redirect_chain and again.status_code == 200
    html = again.content.decode()
    assert not shape.search(html) and "A new secret is shown once" in html
    return secrets
