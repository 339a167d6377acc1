"""Nothing a reader needs is cut at 1280 px, the width of a common laptop screen, in
Debian's Chromium: the dashboard's KPI cards, a signed-in person's bar and filters, and
the admin's group list. Each check measures the element (its text's width against the
box's) and saves a screenshot: artifacts/screenshots/layout-1280-*.png.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.support.dashboard_page import dashboard
from tests.support.factories import UserGroupFactory

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1280
# (scrollWidth, clientWidth) of each element: more to scroll than shown is a cut.
WIDTHS = "elements => elements.map(e => [e.textContent.trim(), e.scrollWidth, e.clientWidth])"


def cut(measured: list[list]) -> list[list]:
    return [[text, scroll, client] for text, scroll, client in measured if scroll > client]


@pytest.fixture
def laptop(page):
    page.set_viewport_size({"width": WIDTH, "height": 800})
    return page


@pytest.mark.parametrize("customer", ["Acme Europe", "Globex Americas", "Initech"])
def test_the_dashboards_kpi_cards_show_their_whole_value(
    laptop, live_server, screenshot, demo, customer
):
    laptop.goto(f"{live_server.url}/demo/")
    laptop.get_by_role("link", name=re.compile(customer)).click()
    frame = dashboard(laptop)
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "ready")
    measured = frame.locator(".kpi-value").evaluate_all(WIDTHS)
    assert len(measured) == 4 and all(text for text, _, _ in measured), measured
    best = frame.locator("#kpi-best").text_content()
    assert re.fullmatch(r"\w{3} \d{4} \([\d,.]+\)", best), best  # e.g. "Jun 2025 (21,240)"
    screenshot(f"layout-1280-dashboard-{customer.split()[0].lower()}")
    assert cut(measured) == []


def test_a_signed_in_persons_bar_and_filters_show_whole(laptop, live_server, screenshot, demo):
    """The customer site's "signed in as" bar with its sign-out button, the people to
    sign in as, and the dashboard's "viewing as" line with each filter's source."""
    laptop.goto(f"{live_server.url}/demo/?group=acme-eu")
    laptop.get_by_role("button", name=re.compile("Dana Kowalski")).click()
    frame = dashboard(laptop)
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "ready")
    expect(frame.locator("#provenance li")).to_have_count(2)
    screenshot("layout-1280-person")
    site = laptop.locator(".viewer-text, .person-name, .person-meta").evaluate_all(WIDTHS)
    shown = frame.locator("#viewing-as, #provenance li").evaluate_all(WIDTHS)
    assert len(site) == 1 + 2 * 4 and len(shown) == 3, (site, shown)
    assert cut(site) == [] and cut(shown) == []
    button = laptop.get_by_role("button", name="Sign out everywhere")
    assert button.evaluate("e => e.getBoundingClientRect().right") <= WIDTH


def test_the_admin_group_list_shows_the_created_column(laptop, admin_login, screenshot, demo):
    workspace, _ = demo
    for number in range(3):
        UserGroupFactory.create(
            workspace=workspace, name=f"A customer with a rather long name {number}"
        )
    admin = admin_login("layout-1280-admin")
    laptop.goto(f"{admin}usergroups/usergroup/")
    expect(laptop.locator("th.column-created")).to_be_visible()
    screenshot("layout-1280-admin-group-list")
    results = laptop.locator("#changelist .results").evaluate_all(WIDTHS)
    assert len(results) == 1 and cut(results) == [], results[0][1:]
    created = laptop.locator("td.field-created, th.column-created").evaluate_all(WIDTHS)
    assert len(created) == 1 + UserGroupFactory._meta.model.objects.count()
    assert cut(created) == []
    # The column is inside the page, not past its right edge.
    right = laptop.locator("th.column-created").evaluate("e => e.getBoundingClientRect().right")
    assert right <= WIDTH
