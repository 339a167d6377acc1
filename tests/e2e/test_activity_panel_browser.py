"""The customer site's activity panel in a real browser, fed through the real webhook path.

What the test does on the site and through the API commits audit events; a real worker
process (``manage.py db_worker``) delivers them, signed, to the site's own receiver
(``/demo/webhook/``, which verifies the signature), and the panel, which polls the
receiver's list, shows each within a bounded wait: the mints of a customer's and a
person's dashboards, the revocations of the person's tokens (sign out everywhere) and of
the group's (each with its axis), a rotation of the group's token. The site's backend
mints and revokes over HTTP with the demo's API key: the panel names the key.
Nothing secret is shown. Screenshot: artifacts/screenshots/activity-*.png.
"""

import io
import re

import pytest
from playwright.sync_api import expect

from example_project.demo.management.commands.demo_setup import Command as DemoSetup
from tests.support.dashboard_page import expect_rows
from tests.support.http import call_api
from usergroups import services
from usergroups.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)

# Delivery takes a worker poll (0.05 s) and a POST; the panel polls every 2 s.
ARRIVES_MS = 15_000
SECRETS = re.compile(r"ugt_[A-Za-z0-9_-]{20,}|whsec_|eyJ[A-Za-z0-9_-]+\.eyJ")


def test_the_activity_panel_lists_mints_revocations_and_changes_as_they_happen(
    page, live_server, screenshot, demo, task_worker, settings, tmp_path, watched
):
    workspace, api_key = demo
    settings.DEMO_WEBHOOK_SECRET_FILE = tmp_path / ".demo-webhook-secret"
    # What make demo registers: this site's receiver, for every change, mint and revocation.
    DemoSetup(stdout=io.StringIO()).register_receiver(
        workspace, f"{live_server.url}/demo/webhook/", settings.DEMO_WEBHOOK_SECRET_FILE
    )
    webhook_secret = settings.DEMO_WEBHOOK_SECRET_FILE.read_text().strip()

    page.goto(f"{live_server.url}/demo/")
    panel = page.get_by_role("region", name="Activity")
    events = panel.get_by_role("log")
    expect(panel).to_be_visible()

    # Opening a customer's dashboard mints an embed token: its event arrives, made by the
    # demo's API key (named by its prefix), as the site's backend calls the API over HTTP.
    page.get_by_role("link", name=re.compile("Acme Europe")).click()
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    minted = events.locator('[data-action="embed_token.minted"]')
    expect(minted.first).to_contain_text("group acme-eu", timeout=ARRIVES_MS)
    expect(minted.first).to_contain_text("for sales")
    prefix = services.keys.find_api_key(api_key).prefix  # a key is named by its prefix only
    expect(minted.first).to_contain_text(f"by api_key {prefix}")
    screenshot("activity-01-a-mint")

    # A person signs in (a mint naming her) and signs out everywhere (her tokens revoked,
    # the end-user axis); the page stays open, the panel takes the events as they come.
    page.get_by_role("list", name="People of Acme Europe").get_by_role(
        "button", name=re.compile("Anna Schmidt")
    ).click()
    expect_rows(page, "eu_warehouse", {"DE"})
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page.locator("#signed-out-notice")).to_be_visible()
    # The customer's backend revokes the group's embed tokens, then rotates its token.
    status, body = call_api(
        live_server.url, api_key, "POST", {"user_group_id": "acme-eu"},
        path="/api/user/embed-token/revoke",
    )  # fmt: skip
    assert status == 200 and body["revoked"] == "user_group", body
    old_token = services.groups.find_group(workspace.pk, "acme-eu").token
    status, body = call_api(live_server.url, api_key, "POST", {"current_token": old_token})
    assert status == 200, body

    rotated = events.locator('[data-action="user_group.token_rotated"]')
    expect(rotated).to_have_count(1, timeout=ARRIVES_MS)
    expect(rotated).to_contain_text("group acme-eu")
    revoked = events.locator('[data-action="embed_token.revoked"]')
    expect(revoked).to_have_count(2, timeout=ARRIVES_MS)
    by_group, by_person = revoked.nth(0), revoked.nth(1)  # newest first
    expect(by_group).to_contain_text("group acme-eu · axis user_group")
    expect(by_group).to_contain_text(f"by api_key {prefix}")
    expect(by_person).to_contain_text("end user anna.schmidt · axis end_user")
    expect(by_person).to_contain_text(f"by api_key {prefix}")  # the site's sign-out
    expect(by_person).to_have_class(re.compile(r"\bis-new\b"))  # came in while open
    expect(minted.filter(has_text="end user anna.schmidt")).to_have_count(1)
    actions = events.locator("[data-action]").evaluate_all(
        "items => items.map(item => item.dataset.action)"
    )
    assert actions.index("user_group.token_rotated") < actions.index("embed_token.revoked")
    assert actions.index("embed_token.revoked") < actions.index("embed_token.minted")
    # Each mint and revocation came to the API over the network, from this machine: the
    # audit trail has the request's address, as for any client's.
    assert {
        (event.actor_type, event.actor_id, event.ip)
        for event in AuditEvent.objects.filter(action__startswith="embed_token.")
    } == {("api_key", prefix, "127.0.0.1")}
    screenshot("activity-02-signed-out-revoked-rotated")

    # Nothing secret on the page: no group token, embed token, key or webhook secret.
    shown = page.content()
    assert not SECRETS.search(shown)
    for secret in (api_key, old_token, webhook_secret):
        assert secret not in shown
    assert not watched["problems"]
