"""An operator's work in the admin, in a real browser, checked against the real API."""

import json
import re

import pytest
from playwright.sync_api import expect

from tests.support.factories import (
    APIKeyFactory,
    SchemaMappingFactory,
    UserGroupFactory,
    WorkspaceFactory,
)
from tests.support.http import call_api
from usergroups.models import APIKey, UserGroup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")
KEY = re.compile(r"ugk_[A-Za-z0-9_-]{43}")


def json_error(text: str) -> str:
    """What this Python's json module says of ``text`` (the live server runs in this process)."""
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(text)
    return raised.value.msg


@pytest.fixture
def customers(transactional_db):
    """A workspace with a few realistic groups and an API key of its own."""
    acme = WorkspaceFactory(slug="acme-analytics", name="Acme Analytics")
    other = WorkspaceFactory(slug="globex", name="Globex")
    rows = [
        (acme, "cust-1001", "Northwind Traders", {"region": "EU", "plan": "enterprise"}),
        (acme, "cust-1002", "Blue Harbor Logistics", {"region": "US", "plan": "pro"}),
        (acme, "cust-1003", "Contoso Retail", {"region": "APAC"}),
        (other, "g-77", "Initech", None),
    ]
    groups = {}
    for workspace, provided_id, name, properties in rows:
        group = UserGroupFactory(
            workspace=workspace, provided_id=provided_id, name=name, properties=properties
        )
        SchemaMappingFactory(group=group, schema_id="sales", data_source_id=f"pg-{provided_id}")
        SchemaMappingFactory(group=group, schema_id="support", data_source_id="zendesk-main")
        groups[provided_id] = group
    APIKeyFactory(workspace=other, name="Globex backend")
    return {"key": APIKeyFactory(workspace=acme, name="Acme backend").key, "groups": groups}


def test_find_reveal_and_rotate_a_group_token(
    page, live_server, admin_login, screenshot, customers
):
    api_key = customers["key"]
    group = customers["groups"]["cust-1002"]
    old_token = group.token
    admin_login("groups")

    page.locator("tr.model-usergroup").get_by_role("link", name="User groups").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(4)
    screenshot("groups-03-changelist")
    assert not TOKEN.search(page.content())

    page.locator("#searchbar").fill("harbor")
    page.locator("#searchbar").press("Enter")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("cust-1002")
    screenshot("groups-04-search")

    page.get_by_role("link", name="Blue Harbor Logistics").click()
    expect(page.locator("h1")).to_have_text("Change user group")
    value = page.locator("#current-token")
    expect(value).to_be_hidden()
    expect(page.locator("[data-ug-mask]")).to_be_visible()
    screenshot("groups-05-change-page")

    page.get_by_role("button", name="Reveal").click()
    expect(value).to_be_visible()
    expect(value).to_have_text(old_token)
    page.get_by_role("button", name="Copy").click()
    expect(page.locator(".ug-copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == old_token
    screenshot("groups-06-token-revealed")

    page.get_by_role("link", name="Rotate token").click()
    expect(page.locator("h1")).to_have_text("Rotate token?")
    assert not TOKEN.search(page.content())
    screenshot("groups-07-rotate-confirmation")
    page.get_by_role("button", name="Yes, rotate the token").click()

    message = page.locator(".messagelist .success")
    expect(message).to_have_text(
        "The token of “Blue Harbor Logistics (cust-1002)” was rotated. "
        "The old token no longer works."
    )
    assert not TOKEN.search(message.inner_text()) and not TOKEN.search(page.url)
    screenshot("groups-08-rotated")
    page.get_by_role("button", name="Reveal").click()
    new_token = page.locator("#current-token").inner_text()
    assert TOKEN.fullmatch(new_token) and new_token != old_token
    assert UserGroup.objects.get(pk=group.pk).token == new_token
    screenshot("groups-09-new-token-revealed")

    page.get_by_role("link", name="History").click()
    expect(page.locator("#change-history")).to_contain_text("Rotated the token.")
    screenshot("groups-10-history")

    # The API refuses the old token and knows the new one.
    assert call_api(live_server.url, api_key, "POST", {"current_token": old_token})[0] == 404
    status, body = call_api(live_server.url, api_key, "GET", {"user_group_id": "cust-1002"})
    assert status == 200 and body["user_group"]["token"] == new_token
    status, body = call_api(live_server.url, api_key, "POST", {"current_token": new_token})
    assert status == 200 and body["user_group"]["token"] != new_token


def test_bulk_rotation_and_workspaces(page, live_server, admin_login, screenshot, customers):
    admin_login("bulk")
    page.goto(f"{live_server.url}/admin/usergroups/workspace/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="Acme Analytics")).to_contain_text("3")
    screenshot("bulk-03-workspaces")

    rows.filter(has_text="Acme Analytics").get_by_role("link", name="3").first.click()
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    screenshot("bulk-04-groups-of-workspace")
    old = {g.pk: g.token for g in UserGroup.objects.filter(workspace__slug="acme-analytics")}
    page.locator("#action-toggle").check()
    page.locator("select[name=action]").select_option("rotate_tokens")
    page.locator(".actions button[type=submit]").click()  # "Go" before Django 6, "Run" since
    expect(page.locator("h1")).to_have_text("Rotate tokens?")
    screenshot("bulk-05-rotate-confirmation")
    page.get_by_role("button", name="Yes, rotate the tokens").click()
    expect(page.locator(".messagelist .success")).to_contain_text(
        "Rotated the tokens of 3 user groups."
    )
    screenshot("bulk-06-rotated")
    for pk, token in old.items():
        assert UserGroup.objects.get(pk=pk).token != token
        assert (
            call_api(live_server.url, customers["key"], "POST", {"current_token": token})[0] == 404
        )


def test_create_use_and_revoke_an_api_key(page, live_server, admin_login, screenshot, customers):
    admin_login("keys")
    page.locator("tr.model-apikey").get_by_role("link", name="API keys").click()
    screenshot("keys-03-changelist")
    page.get_by_role("link", name="Add API key").click()
    page.get_by_label("Workspace").select_option(label="Acme Analytics")
    page.get_by_label("Name").fill("Reporting job")
    screenshot("keys-04-add")
    page.get_by_role("button", name="Create API key").click()

    expect(page.locator("h1")).to_have_text("Copy your new API key")
    key = page.locator("#new-api-key").inner_text()
    assert KEY.fullmatch(key)
    assert len(KEY.findall(page.content())) == 1
    page.get_by_role("button", name="Copy").click()
    expect(page.locator(".ug-copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == key
    screenshot("keys-05-created-once")

    status, body = call_api(live_server.url, key, "GET", {"user_group_id": "cust-1001"})
    assert status == 200 and body["user_group"]["name"] == "Northwind Traders"

    page.get_by_role("link", name="I have copied the key").click()
    row = page.locator("#result_list tbody tr", has_text="Reporting job")
    expect(row).to_contain_text(f"{key[:12]}…")
    expect(row).to_contain_text("Active")
    assert key not in page.content()
    screenshot("keys-06-changelist-after")

    row.get_by_role("link", name="Reporting job").click()
    assert key not in page.content()
    screenshot("keys-07-change-page")
    page.get_by_role("link", name="Revoke").click()
    expect(page.locator("h1")).to_have_text("Revoke API key?")
    screenshot("keys-08-revoke-confirmation")
    page.get_by_role("button", name="Yes, revoke the key").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was revoked")
    expect(page.locator("h1")).to_have_text("View API key")  # read-only from now on
    expect(page.get_by_role("link", name="Revoke")).to_have_count(0)
    screenshot("keys-09-revoked")

    status, body = call_api(live_server.url, key, "GET", {"user_group_id": "cust-1001"})
    assert status == 401 and body["error"]["code"] == "authentication_failed"
    assert APIKey.objects.get(prefix=key[:12]).is_revoked

    page.locator(".breadcrumbs").get_by_role("link", name="API keys").click()
    page.locator("#changelist-filter").get_by_role("link", name="Revoked").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    screenshot("keys-10-revoked-filter")


def test_add_a_group_with_the_api_rules(page, live_server, admin_login, screenshot, customers):
    admin_login("add")
    page.goto(f"{live_server.url}/admin/usergroups/usergroup/add/")
    page.get_by_label("Workspace").select_option(label="Acme Analytics")
    page.get_by_label("Provided id").fill("cust-2001")
    page.get_by_label("Name").fill("Fabrikam Foods")
    bad_json = '{"region": "EU", "plan": "starter",}'
    page.locator("#id_properties").fill(bad_json)
    page.locator("#id_mappings-0-schema_id").fill("sales")
    page.locator("#id_mappings-0-data_source_id").fill("pg-fabrikam")
    screenshot("add-03-form")
    page.get_by_role("button", name="Save", exact=True).click()

    error = page.locator(".field-properties .errorlist")
    # Python's own reason, which differs between versions (3.13 names the trailing comma).
    expect(error).to_contain_text(f"Invalid JSON: {json_error(bad_json)}")
    expect(page.locator("#id_properties")).to_have_value(bad_json)
    screenshot("add-04-json-error")
    assert not UserGroup.objects.filter(provided_id="cust-2001").exists()

    page.locator("#id_properties").fill('{"region": "EU", "plan": "starter"}')
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist .success")).to_contain_text("Fabrikam Foods (cust-2001)")
    screenshot("add-05-saved")

    status, body = call_api(
        live_server.url, customers["key"], "GET", {"user_group_id": "cust-2001"}
    )
    assert status == 200 and body["new_user_group"] is False
    assert body["user_group"]["mapping"] == {"sales": "pg-fabrikam"}
    assert body["user_group"]["properties"] == {"region": "EU", "plan": "starter"}
    assert body["user_group"]["token"] == UserGroup.objects.get(provided_id="cust-2001").token
