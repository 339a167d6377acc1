"""API messages go through Django's translation machinery, as DRF's own do: a catalogue
in the host's LOCALE_PATHS translates them for the active language.

The catalogue is written by the test (a GNU .mo file, the format Django reads), so no
translation tools are needed; German is used because Django and DRF ship catalogues for
it, which ours must take precedence over, as a host's would.
"""

import array
import struct
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import translation

from tests.support.api import get_or_create, send

GERMAN = {
    "Invalid API key.": "Ungültiger API-Schlüssel.",
    "Must not contain NUL characters.": "Darf keine NUL-Zeichen enthalten.",
    "Must be at most %(limit)s characters.": "Darf höchstens %(limit)s Zeichen lang sein.",
    "The body must be a JSON object.": "Der Body muss ein JSON-Objekt sein.",
    "Invalid input.": "Ungültige Eingabe.",
}


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """``messages`` as a GNU gettext catalogue (what msgfmt writes), UTF-8."""
    catalogue = {"": "Content-Type: text/plain; charset=UTF-8\n", **messages}
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
