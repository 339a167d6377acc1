"""``manage.py demo_setup`` (example project, for ``make demo``): idempotent demo key."""

import io
import stat

import pytest
from django.core.management import call_command

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
