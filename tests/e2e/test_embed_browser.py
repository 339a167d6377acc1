"""The embed flow in a real browser: a customer site frames the host's dashboard.

Two groups see different rows, each through embed tokens its customer site's backend
mints; after a rotation of the group's token through the API the open embed is refused
("Access revoked"), and reloading the customer site (which mints a new embed token)
shows data again. No group token ever reaches the browser, no token is in any URL.
Screenshots: artifacts/screenshots/embed-*.png.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.support.dashboard_page import (
    claims,
    dashboard,
    data_requests,
    embed_token_of,
    expect_rows,
)
from tests.support.http import call_api
from usergroups import services

pytestmark = pytest.mark.django_db(transaction=True)

GROUP_TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")
EMBED_TOKEN = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+")


def test_customer_site_embeds_each_groups_dashboard_and_survives_a_rotation(
    page, live_server, screenshot, demo, watched
):
    workspace, api_key = demo
    page.goto(f"{live_server.url}/demo/")
    expect(page.get_by_role("heading", name="Pick a customer")).to_be_visible()
    expect(page.locator(".group-link")).to_have_count(3)
    screenshot("embed-01-customer-site")

    # Group A: only its regions, from the data source its mapping names.
    page.get_by_role("link", name=re.compile("Acme Europe")).click()
    expect(page.get_by_role("heading", name="Sales of Acme Europe")).to_be_visible()
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    expect(dashboard(page).locator("#dash-sub")).to_have_text(
        "Data source eu_warehouse · regions DE, FR"
    )
    screenshot("embed-02-acme-eu")

    # Group B: another data source, other rows.
    page.get_by_role("link", name=re.compile("Globex Americas")).click()
    expect(page.get_by_role("heading", name="Sales of Globex Americas")).to_be_visible()
    expect_rows(page, "us_warehouse", {"US-East", "US-West"})
    screenshot("embed-03-globex-us")

    # Back to A, then its backend rotates A's token through the API.
    page.get_by_role("link", name=re.compile("Acme Europe")).click()
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    old_token = services.groups.find_group(workspace.pk, "acme-eu").token
    status, body = call_api(live_server.url, api_key, "POST", {"current_token": old_token})
    assert status == 200, body

    # The rotation revoked the embed token the dashboard holds: its next fetch is refused.
    frame = dashboard(page)
    frame.get_by_role("button", name="Refresh").click()
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "revoked")
    expect(frame.get_by_role("status")).to_contain_text("Access revoked.")
    expect(frame.locator("#content")).to_be_hidden()
    expect(frame.locator("#rows tbody tr")).to_have_count(0)
    screenshot("embed-04-access-revoked")

    # Reloading the customer page mints a new embed token: data again.
    page.reload()
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    # The query the host ran: the group's values are parameters, not SQL text.
    frame.get_by_text("Query run for this group").click()
    sql = frame.locator("#query-sql").text_content()
    assert re.search(r"IN \(%s, %s\)", sql) and not re.search(r"\b(DE|FR)\b", sql)
    expect(frame.locator("#query-params")).to_have_text('["DE","FR"]')
    screenshot("embed-05-reloaded-with-a-new-embed-token")

    # No token travelled in a URL; the data requests carried embed tokens in the header,
    # each locked to the customer site's origin and to the sales dashboard.
    for request in watched["requests"]:
        assert not GROUP_TOKEN.search(request.url) and not EMBED_TOKEN.search(request.url)
        assert not GROUP_TOKEN.search(request.all_headers().get("authorization", ""))
    sent = data_requests(watched["requests"])
    assert len(sent) == 5  # A, B, A, refresh (revoked), reload
    tokens = [embed_token_of(request) for request in sent]
    for token in tokens:
        assert claims(token)["origin"] == live_server.url
        assert claims(token)["resource"] == "sales"
    assert tokens[-2] == tokens[-3] != tokens[-1]  # refused: the one A's view was given
    team_id = str(services.groups.find_group(workspace.pk, "acme-eu").team_id)
    assert claims(tokens[-1])["sub"] == team_id
    assert not watched["problems"]


def test_the_dashboard_opened_alone_asks_for_its_customer_site(page, live_server, screenshot, demo):
    page.goto(f"{live_server.url}/embed/dashboard/")
    expect(page.get_by_role("status")).to_contain_text("Embedded only.")
    expect(page.locator("#content")).to_be_hidden()
    screenshot("embed-06-dashboard-alone")
