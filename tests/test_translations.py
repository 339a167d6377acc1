"""API and admin messages go through Django's translation machinery, as DRF's and the
admin's own do: a catalogue in the host's LOCALE_PATHS translates them for the active
language.

The catalogue is written by the test (a GNU .mo file, the format Django reads), so no
translation tools are needed; German is used because Django and DRF ship catalogues for
it, which ours must take precedence over, as a host's would.
"""

import array
import struct
from pathlib import Path

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import override_settings
from django.utils import timezone, translation

from tests.support.admin import admin_url
from tests.support.api import get_or_create, send
from tests.support.factories import APIKeyFactory

GERMAN = {
    "Invalid API key.": "Ungültiger API-Schlüssel.",
    "Must not contain NUL characters.": "Darf keine NUL-Zeichen enthalten.",
    "Must be at most %(limit)s characters.": "Darf höchstens %(limit)s Zeichen lang sein.",
    "The body must be a JSON object.": "Der Body muss ein JSON-Objekt sein.",
    "Invalid input.": "Ungültige Eingabe.",
    # Admin: a column, a filter and its choices, a help text put together per request.
    "Prefix": "Präfix",
    "state": "Zustand",
    "Active": "Aktiv",
    "Search by name or prefix (the first %(length)s characters).": (
        "Suche nach Name oder Präfix (den ersten %(length)s Zeichen)."
    ),
    # Admin: a confirmation page, its template and counted messages. A plural entry is
    # the singular and plural msgid joined by NUL, and its forms likewise, as in a .mo.
    "Revoke API keys?": "API-Schlüssel widerrufen?",
    "in workspace %(workspace)s": "im Arbeitsbereich %(workspace)s",
    "%(count)s selected key already revoked stays as it is.\0"
    "%(count)s selected keys already revoked stay as they are.": (
        "%(count)s ausgewählter, schon widerrufener Schlüssel bleibt, wie er ist.\0"
        "%(count)s ausgewählte, schon widerrufene Schlüssel bleiben, wie sie sind."
    ),
    "Revoked %(count)s API key. Requests with it are refused from now on.\0"
    "Revoked %(count)s API keys. Requests with them are refused from now on.": (
        "%(count)s API-Schlüssel widerrufen. Anfragen damit werden ab jetzt abgelehnt.\0"
        "%(count)s API-Schlüssel widerrufen. Anfragen damit werden ab jetzt abgelehnt."
    ),
}


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """``messages`` as a GNU gettext catalogue (what msgfmt writes), UTF-8."""
    header = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n != 1);\n"
    catalogue = {"": header, **messages}
    keys = sorted(key.encode() for key in catalogue)
    values = {key.encode(): value.encode() for key, value in catalogue.items()}
    ids = strs = b""
    entries = []
    for key in keys:
        entries.append((len(ids), len(key), len(strs), len(values[key])))
        ids += key + b"\0"
        strs += values[key] + b"\0"
    key_start = 7 * 4 + 16 * len(keys)
    value_start = key_start + len(ids)
    offsets = []
    for key_offset, key_length, _, _ in entries:
        offsets += [key_length, key_offset + key_start]
    for _, _, value_offset, value_length in entries:
        offsets += [value_length, value_offset + value_start]
    header = struct.pack("Iiiiiii", 0x950412DE, 0, len(keys), 28, 28 + len(keys) * 8, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + array.array("i", offsets).tobytes() + ids + strs)


@pytest.fixture
def german(tmp_path):
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "django.mo", GERMAN)
    with override_settings(LOCALE_PATHS=[str(tmp_path)]), translation.override("de"):
        yield


def message(response) -> str:
    return response.json()["error"]["message"]


@pytest.mark.django_db
def test_an_authentication_failure_is_translated(german, anon_api_client):
    anon_api_client.credentials(HTTP_AUTHORIZATION="Token ugk_" + "A" * 43)
    assert (
        message(get_or_create(anon_api_client, {"user_group_id": "x"}))
        == GERMAN["Invalid API key."]
    )


def test_validation_messages_are_translated(german, api_client):
    body = get_or_create(api_client, {"user_group_id": "a\x00b"}).json()["error"]
    assert body["message"] == GERMAN["Invalid input."]
    assert body["fields"]["user_group_id"] == [GERMAN["Must not contain NUL characters."]]
    body = get_or_create(api_client, {"user_group_id": "x" * 256}).json()["error"]
    assert body["fields"]["user_group_id"] == ["Darf höchstens 255 Zeichen lang sein."]


def test_parse_errors_are_translated(german, api_client):
    assert message(send(api_client, "GET", b"[]")) == GERMAN["The body must be a JSON object."]


def test_without_a_catalogue_the_messages_are_english(api_client):
    with translation.override("de"):
        assert message(send(api_client, "GET", b"[]")) == "The body must be a JSON object."


@pytest.mark.django_db
def test_the_key_list_is_translated(german, admin_client, api_key):
    page = admin_client.get(admin_url("apikey", "changelist")).content.decode()
    assert ">Präfix</a>" in page  # the column header
    assert "Nach Zustand" in page  # the filter, in Django's own "By ..."
    assert 'ug-state-active">Aktiv</span>' in page
    assert "Suche nach Name oder Präfix (den ersten 12 Zeichen)." in page
    assert "Search by" not in page


def test_revoking_keys_is_translated_with_plurals(german, admin_client, workspace):
    live = APIKeyFactory.create_batch(2, workspace=workspace)
    revoked = APIKeyFactory(workspace=workspace, revoked_at=timezone.now())
    url = admin_url("apikey", "changelist")
    selection = {"action": "revoke_keys", ACTION_CHECKBOX_NAME: [k.pk for k in [*live, revoked]]}
    page = admin_client.post(url, selection).content.decode()
    assert "<h1>API-Schlüssel widerrufen?</h1>" in page
    assert f"im Arbeitsbereich {workspace}" in page
    assert "1 ausgewählter, schon widerrufener Schlüssel bleibt, wie er ist." in page

    page = admin_client.post(url, {**selection, "post": "yes"}, follow=True).content.decode()
    assert "2 API-Schlüssel widerrufen. Anfragen damit werden ab jetzt abgelehnt." in page
