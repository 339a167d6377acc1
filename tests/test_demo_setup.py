"""``manage.py demo_setup`` (example project, for ``make demo``): idempotent demo key."""

import io
import json
import shlex
import stat

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from usergroups.models import APIKey, Workspace
from usergroups.services.keys import find_api_key, issue_key, revoke_key

pytestmark = pytest.mark.django_db


def demo_setup(key_file) -> str:
    out = io.StringIO()
    call_command("demo_setup", key_file=key_file, stdout=out)
    return out.getvalue()


def test_first_run_creates_workspace_and_key_file(tmp_path):
    key_file = tmp_path / ".demo-api-key"
    output = demo_setup(key_file)
    key = key_file.read_text().strip()
    row = find_api_key(key)
    assert row is not None and row.workspace.slug == "demo"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key in output
    assert "curl" in output and "current_token" in output


def test_second_run_reuses_the_key(tmp_path):
    key_file = tmp_path / ".demo-api-key"
    demo_setup(key_file)
    key = key_file.read_text().strip()
    output = demo_setup(key_file)
    assert key_file.read_text().strip() == key
    assert "Reusing" in output
    assert Workspace.objects.filter(slug="demo").count() == 1
    assert APIKey.objects.count() == 1


@pytest.mark.parametrize("spoil", ["revoke", "garbage", "other_workspace"])
def test_a_key_that_no_longer_works_is_replaced(tmp_path, spoil):
    key_file = tmp_path / ".demo-api-key"
    if spoil == "garbage":
        key_file.write_text("not a key\n")
    elif spoil == "other_workspace":
        other = issue_key(APIKey(workspace=Workspace.objects.create(slug="elsewhere")))
        key_file.write_text(other + "\n")
    else:
        demo_setup(key_file)
        revoke_key(find_api_key(key_file.read_text().strip()))
    old = key_file.read_text().strip()
    output = demo_setup(key_file)
    new = key_file.read_text().strip()
    assert new != old and "Issued a new demo API key" in output
    row = find_api_key(new)
    assert row.workspace.slug == "demo" and not row.is_revoked


def printed_get_or_creates(output: str) -> list[dict]:
    """The input of each get-or-create curl the setup printed: a JSON body (``-d``) or
    query fields (``-G --data-urlencode``, with ``mapping``/``properties`` as JSON)."""
    requests = []
    for line in output.splitlines():
        args = shlex.split(line) if line.startswith("curl ") else []
        if "POST" in args or not ("-G" in args or "GET" in args):
            continue
        values = [args[i + 1] for i, arg in enumerate(args) if arg in {"-d", "--data-urlencode"}]
        if "-G" in args:
            fields = dict(value.split("=", 1) for value in values)
            for name in ("mapping", "properties"):
                if name in fields:
                    fields[name] = json.loads(fields[name])
            requests.append(fields)
        else:
            requests.append(json.loads(values[0]))
    return requests


def test_every_group_the_printed_curls_create_shows_on_the_demo_dashboard(tmp_path):
    """The printed examples create groups the demo's dashboard can show: a mapping to
    one of its data sources and the ``regions`` its query filters on (else 422)."""
    key_file = tmp_path / ".demo-api-key"
    created = [body for body in printed_get_or_creates(demo_setup(key_file)) if "name" in body]
    assert {body["user_group_id"] for body in created} == {"acme", "globex"}
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key_file.read_text().strip()}")
    for body in created:
        answer = api.generic("GET", "/api/user", json.dumps(body), content_type="application/json")
        assert answer.status_code == 200, answer.content
        token = answer.json()["user_group"]["token"]
        data = APIClient().get("/embed/api/sales/", HTTP_AUTHORIZATION=f"GroupToken {token}")
        assert data.status_code == 200, (body["user_group_id"], data.content)
        assert data.json()["rows"], body["user_group_id"]
