"""The demo's embed tokens, lived through in a real browser at their real pace.

A 30-second token: the dashboard asks its parent for fresh ones and swaps them in, so 45
seconds later it still loads data, with its region filter as the user left it and the
page never reloaded. Then an operator rotates the group's token in the admin: the open
dashboard shows "Access revoked" at its next data request.

This test waits for real (about a minute): the browser's timers and the token's expiry
are what it checks, and a browser's clock cannot be moved for the server too.
Screenshots: artifacts/screenshots/embed-refresh-*.png.
"""

import pytest
from playwright.sync_api import expect

from tests.support.dashboard_page import (
    claims,
    dashboard,
    data_requests,
    embed_token_of,
    expect_rows,
    rows_in_source,
)
from usergroups import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOKEN_SECONDS = 30  # the shortest an embed token may live
LATER_MS = 45_000
PASSWORD = "operator's long passphrase"


def test_a_30_second_token_is_refreshed_without_a_reload_then_revoked_by_the_admin(
    page, live_server, screenshot, demo, watched, settings, django_user_model
):
    settings.DASHBOARDS_EMBED_TOKEN_SECONDS = TOKEN_SECONDS
    workspace, _api_key = demo
    page.goto(f"{live_server.url}/demo/?group=acme-eu")
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    frame = dashboard(page)
    body = frame.locator("#dashboard")
    # A mark on the dashboard's window: a reload of the frame would lose it.
    body.evaluate("() => { window.sessionMark = 'never reloaded'; }")
    frame.locator("#region-filter").select_option("FR")
    expect(frame.locator("#rows tbody td.region")).to_have_count(
        rows_in_source("eu_warehouse", {"FR"})
    )
    first = embed_token_of(data_requests(watched["requests"])[-1])
    assert claims(first)["exp"] - claims(first)["iat"] == TOKEN_SECONDS
    screenshot("embed-refresh-01-filtered")

    # 45 seconds later the first token is long expired; the dashboard holds a fresh one.
    page.wait_for_timeout(LATER_MS)
    expired = page.request.get(
        f"{live_server.url}/embed/api/sales/", headers={"Authorization": f"Embed {first}"}
    )
    assert expired.status == 401 and expired.json()["error"]["code"] == "token_expired"
    # Fresh tokens were asked for at 20 s and 40 s (two thirds of 30 s, twice).
    expect(body).to_have_attribute("data-tokens", "3")
    frame.get_by_role("button", name="Refresh").click()
    expect(body).to_have_attribute("data-state", "ready")
    latest = embed_token_of(data_requests(watched["requests"])[-1])
    assert latest != first and claims(latest)["iat"] >= claims(first)["iat"] + 2 * 20 - 5
    # Same page, same filter, the filtered rows.
    assert body.evaluate("() => window.sessionMark") == "never reloaded"
    expect(frame.locator("#region-filter")).to_have_value("FR")
    expect(frame.locator("#rows tbody td.region")).to_have_count(
        rows_in_source("eu_warehouse", {"FR"})
    )
    assert set(frame.locator("#rows tbody td.region").all_text_contents()) == {"FR"}
    loads = [r for r in watched["requests"] if r.url.endswith("/embed/dashboard/")]
    assert len(loads) == 1
    screenshot("embed-refresh-02-45-seconds-later")

    # An operator rotates the group's token in the admin, in another tab.
    django_user_model.objects.create_superuser("operator", "op@example.com", PASSWORD)
    group = services.groups.find_group(workspace.pk, "acme-eu")
    admin = page.context.new_page()
    admin.goto(f"{live_server.url}/admin/usergroups/usergroup/{group.team_id}/change/")
    admin.get_by_label("Username").fill("operator")
    admin.get_by_label("Password").fill(PASSWORD)
    admin.get_by_role("button", name="Log in").click()
    admin.get_by_role("link", name="Rotate token").click()
    admin.get_by_role("button", name="Yes, rotate the token").click()
    expect(admin.locator(".messagelist")).to_contain_text("was rotated")
    admin.close()

    # The open dashboard's next data request is refused: access revoked, no data shown.
    frame.get_by_role("button", name="Refresh").click()
    expect(body).to_have_attribute("data-state", "revoked")
    expect(frame.get_by_role("status")).to_contain_text("Access revoked.")
    expect(frame.locator("#rows tbody tr")).to_have_count(0)
    assert body.evaluate("() => window.sessionMark") == "never reloaded"
    screenshot("embed-refresh-03-access-revoked")
    assert not watched["problems"]
