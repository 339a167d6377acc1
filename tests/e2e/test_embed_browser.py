"""The embed flow in a real browser: a customer site frames the host's dashboard.

Two groups see different rows; after a rotation through the API the old token's embed
is refused, and reloading the customer site (which fetches the current token server
side) shows data again. Screenshots: artifacts/screenshots/embed-*.png.
"""

import re

import pytest
from playwright.sync_api import expect

from example_project.dashboards.demo import seed_demo_groups
from example_project.dashboards.sources import ensure_sample_data, sample_rows
from tests.support.factories import APIKeyFactory, WorkspaceFactory
from tests.support.http import call_api
from usergroups import services

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")


@pytest.fixture
def demo(transactional_db, settings):
    """What ``make demo`` sets up: the demo workspace, its groups, the sample rows, and
    an API key for the customer site's backend."""
    settings.DASHBOARDS_DEMO_SITE = True
    ensure_sample_data()
    workspace = WorkspaceFactory(slug="demo", name="Demo")
    seed_demo_groups(workspace)
    return workspace, APIKeyFactory(workspace=workspace, name="customer site backend").key


@pytest.fixture
def watched(page):
    """Every request the browser makes and every script error or CSP violation."""
    seen = {"requests": [], "problems": []}
    page.on("request", lambda request: seen["requests"].append(request))
    page.on("pageerror", lambda error: seen["problems"].append(f"page error: {error}"))

    def console(message):
        if "Content Security Policy" in message.text or message.type == "warning":
            seen["problems"].append(f"console {message.type}: {message.text}")

    page.on("console", console)
    return seen


def rows_in_source(source: str, regions: set[str]) -> int:
    return sum(row["region"] in regions for row in sample_rows(source))


def dashboard(page):
    return page.frame_locator("#dashboard-frame")


def expect_rows(page, source: str, regions: set[str]) -> None:
    frame = dashboard(page)
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "ready")
    cells = frame.locator("#rows tbody td.region")
    expect(cells).to_have_count(rows_in_source(source, regions))
    assert set(cells.all_text_contents()) == regions
    expect(frame.locator("#chart rect.bar")).to_have_count(6 * len(regions))  # months x regions


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
    new_token = body["user_group"]["token"]
    assert new_token != old_token

    # The embed still holds the old token: its next fetch is refused, the data is gone.
    frame = dashboard(page)
    frame.get_by_role("button", name="Refresh").click()
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "refused")
    expect(frame.get_by_role("status")).to_contain_text("Access refused.")
    expect(frame.locator("#content")).to_be_hidden()
    expect(frame.locator("#rows tbody tr")).to_have_count(0)
    screenshot("embed-04-old-token-refused")

    # Reloading the customer page fetches the current token server side: data again.
    page.reload()
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    assert page.locator("#group-token").text_content() == f'"{new_token}"'
    # The query the host ran: the group's values are parameters, not SQL text.
    frame.get_by_text("Query run for this group").click()
    sql = frame.locator("#query-sql").text_content()
    assert re.search(r"IN \(%s, %s\)", sql) and not re.search(r"\b(DE|FR)\b", sql)
    expect(frame.locator("#query-params")).to_have_text('["DE","FR"]')
    screenshot("embed-05-reloaded-with-new-token")

    # The token never travelled in a URL; the data requests carried it in the header.
    assert not [request.url for request in watched["requests"] if TOKEN.search(request.url)]
    data_requests = [r for r in watched["requests"] if r.url.endswith("/embed/api/sales/")]
    assert len(data_requests) == 5  # A, B, A, refresh (refused), reload
    for request in data_requests:
        assert re.fullmatch(
            r"GroupToken ugt_[A-Za-z0-9_-]{43}", request.all_headers()["authorization"]
        )
    assert data_requests[-2].all_headers()["authorization"] == f"GroupToken {old_token}"
    assert data_requests[-1].all_headers()["authorization"] == f"GroupToken {new_token}"
    assert not watched["problems"]


def test_the_dashboard_opened_alone_asks_for_its_customer_site(page, live_server, screenshot, demo):
    page.goto(f"{live_server.url}/embed/dashboard/")
    expect(page.get_by_role("status")).to_contain_text("Embedded only.")
    expect(page.locator("#content")).to_be_hidden()
    screenshot("embed-06-dashboard-alone")
