"""The demo signs in as a person (CONTRACT section 7), in a real browser.

On the customer site a customer is picked, then one of its people: the backend mints
embed tokens naming that person, whose ``territory`` narrows the customer's regions, and
the dashboard says whom it shows and where each filter came from. Another person sees
other rows. "Sign out everywhere" revokes the person's tokens: the dashboard on the page
shows "Session ended" and no rows at once, one in another browser at its next data
request, and the customer site mints nothing more for the person (not even the
customer's own view in their stead) until they sign in again.
Screenshots: artifacts/screenshots/person-*.png.
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


def expect_viewing(page, viewer: str, sources: dict[str, tuple[str, str]]) -> None:
    """The dashboard shows whom it is for, and each filter as ``name: (value, source)``."""
    frame = dashboard(page)
    expect(frame.locator("#viewing-as")).to_have_text(f"Viewing as {viewer}")
    items = frame.locator("#provenance li")
    expect(items).to_have_count(len(sources))
    for name, (value, source) in sources.items():
        item = frame.locator(f'#provenance li[data-variable="{name}"]')
        expect(item).to_have_attribute("data-source", source)
        expect(item).to_contain_text(f"{name} {value}")


def test_a_person_signs_in_sees_their_rows_and_signs_out_everywhere(
    page, live_server, screenshot, demo, watched
):
    page.goto(f"{live_server.url}/demo/")
    page.get_by_role("link", name=re.compile("Acme Europe")).click()
    # Nobody signed in yet: the customer's own view, and its people to sign in as.
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    expect_viewing(page, "Acme Europe (no person)", {"regions": ("DE, FR", "user_group:acme-eu")})
    people = page.get_by_role("list", name="People of Acme Europe").get_by_role("button")
    expect(people).to_have_count(4)
    screenshot("person-01-customer-view")

    # Anna, whose territory is Germany: the DE rows only, and why.
    people.filter(has_text="Anna Schmidt").click()
    expect(page.locator("#viewer")).to_contain_text("Signed in as Anna Schmidt")
    expect_rows(page, "eu_warehouse", {"DE"})
    expect_viewing(
        page,
        "Anna Schmidt (Acme Europe)",
        {"regions": ("DE, FR", "user_group:acme-eu"), "territory": ("DE", "end_user")},
    )
    expect(dashboard(page).locator("#provenance")).to_contain_text(
        "territory DE from Anna Schmidt's attributes"
    )
    anna = embed_token_of(data_requests(watched["requests"])[-1])
    assert claims(anna)["end_user_id"] == "anna.schmidt"
    screenshot("person-02-anna")

    # Switching to Bruno (France): other rows, his name, a token naming him.
    people.filter(has_text="Bruno Lefèvre").click()
    expect(page.locator("#viewer")).to_contain_text("Signed in as Bruno Lefèvre")
    expect_rows(page, "eu_warehouse", {"FR"})
    expect_viewing(
        page,
        "Bruno Lefèvre (Acme Europe)",
        {"regions": ("DE, FR", "user_group:acme-eu"), "territory": ("FR", "end_user")},
    )
    bruno = embed_token_of(data_requests(watched["requests"])[-1])
    assert claims(bruno)["end_user_id"] == "bruno.lefevre"
    screenshot("person-03-bruno")

    # Sign out everywhere: the page stays and says so, and its dashboard ends at once,
    # without a click of its own: refused a token, it shows none of his rows.
    sent = len(data_requests(watched["requests"]))
    page.get_by_role("button", name="Sign out everywhere").click()
    notice = page.locator("#signed-out-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Bruno Lefèvre was signed out everywhere")
    expect(notice).to_contain_text("the dashboard below ended at once")
    expect(page.locator("#viewer")).to_be_hidden()
    frame = dashboard(page)
    body = frame.locator("#dashboard")
    expect(body).to_have_attribute("data-state", "ended")
    expect(frame.get_by_role("status")).to_contain_text("Session ended.")
    expect(frame.get_by_role("status")).to_contain_text("signed out everywhere")
    expect(frame.locator("#rows tbody tr")).to_have_count(0)
    expect(frame.locator("#content")).to_be_hidden()
    expect(frame.get_by_role("button", name="Refresh")).to_be_disabled()
    assert len(data_requests(watched["requests"])) == sent  # nothing asked with his token
    # His token is refused by the host: revoked, not only forgotten by the page.
    revoked = page.request.get(
        f"{live_server.url}/embed/api/sales/",
        headers={"Authorization": f"Embed {bruno}", "Origin": live_server.url},
    )
    assert revoked.status == 401
    screenshot("person-04-session-ended")

    # Asked for a fresh token (as its timer would), the customer site mints none for
    # Bruno: the dashboard stays ended, and no data request follows.
    with page.expect_response(lambda r: r.url.endswith("/demo/embed-token/")) as asked:
        body.evaluate(
            "() => window.parent.postMessage({v: 1, type: 'usergroups:token-request'}, location.origin)"
        )
    assert asked.value.status == 403 and asked.value.json()["error"] == "signed_out"
    expect(body).to_have_attribute("data-state", "ended")
    assert len(data_requests(watched["requests"])) == sent

    # Only Bruno's tokens were revoked: Anna's still loads (from this site's origin).
    still = page.request.get(
        f"{live_server.url}/embed/api/sales/",
        headers={"Authorization": f"Embed {anna}", "Origin": live_server.url},
    )
    assert still.status == 200 and still.json()["end_user"]["end_user_id"] == "anna.schmidt"

    # Reloaded, the customer site shows the signed-out state, and frames no dashboard.
    page.reload()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()
    expect(page.locator("#dashboard-frame")).to_have_count(0)
    screenshot("person-05-signed-out")

    # Signed in again: a new token, his rows again.
    people.filter(has_text="Bruno Lefèvre").click()
    expect_rows(page, "eu_warehouse", {"FR"})
    again = embed_token_of(data_requests(watched["requests"])[-1])
    assert again != bruno and claims(again)["end_user_id"] == "bruno.lefevre"
    assert not watched["problems"]


def test_a_persons_dashboard_says_revoked_or_signed_out_and_another_browser_follows(
    page, live_server, screenshot, demo, watched, browser, browser_context_args
):
    """Refused with a token naming a person, the dashboard tells a revocation of the
    group's access ("Access revoked": the person stays signed in) from the person's sign
    out everywhere ("Session ended"), which another browser's page shows too, unreloaded,
    and from the host's operator disabling the person."""
    workspace, api_key = demo
    page.goto(f"{live_server.url}/demo/?group=acme-eu")
    anna = page.get_by_role("list", name="People of Acme Europe").get_by_role(
        "button", name=re.compile("Anna Schmidt")
    )
    anna.click()
    expect_rows(page, "eu_warehouse", {"DE"})

    # The customer's backend revokes the group's embed tokens: Anna's open dashboard says
    # "Access revoked" at its next request, and she is still signed in on the site.
    status, body = call_api(
        live_server.url, api_key, "POST", {"user_group_id": "acme-eu"},
        path="/api/user/embed-token/revoke",
    )  # fmt: skip
    assert status == 200, body
    frame = dashboard(page)
    frame.get_by_role("button", name="Refresh").click()
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "revoked")
    expect(frame.get_by_role("status")).to_contain_text("Access revoked.")
    expect(frame.get_by_role("status")).not_to_contain_text("signed out")
    expect(page.locator("#viewer")).to_contain_text("Signed in as Anna Schmidt")
    screenshot("person-06-group-revoked")

    # Reloaded: a new token, her rows. Browser B (cookies of its own) signs her in too.
    page.reload()
    expect_rows(page, "eu_warehouse", {"DE"})
    other = browser.new_context(**browser_context_args)
    try:
        page_b = other.new_page()
        page_b.goto(f"{live_server.url}/demo/?group=acme-eu")
        page_b.get_by_role("list", name="People of Acme Europe").get_by_role(
            "button", name=re.compile("Anna Schmidt")
        ).click()
        expect_rows(page_b, "eu_warehouse", {"DE"})
        expect(page_b.locator("#viewer")).to_contain_text("Signed in as Anna Schmidt")

        # Signed out everywhere in browser A: B's dashboard ends at its next request,
        # and B's page no longer says she is signed in, without a reload.
        page.get_by_role("button", name="Sign out everywhere").click()
        expect(page.locator("#signed-out-notice")).to_be_visible()
        frame_b = dashboard(page_b)
        frame_b.get_by_role("button", name="Refresh").click()
        expect(frame_b.locator("#dashboard")).to_have_attribute("data-state", "ended")
        expect(frame_b.get_by_role("status")).to_contain_text("Session ended.")
        expect(frame_b.get_by_role("status")).to_contain_text(
            "Anna Schmidt was signed out everywhere"
        )
        expect(page_b.get_by_text("Signed in as")).to_be_hidden()
        expect(page_b.locator("#signed-out-notice")).to_be_visible()
        expect(page_b.locator(".person.active")).to_have_count(0)
        screenshot("person-07-another-browser-signed-out", page_b)
    finally:
        other.close()

    # In browser A, Bruno signs in; the host's operator disables him: his dashboard says
    # that at its next request, not that he signed out.
    page.get_by_role("list", name="People of Acme Europe").get_by_role(
        "button", name=re.compile("Bruno Lefèvre")
    ).click()
    expect_rows(page, "eu_warehouse", {"FR"})
    services.end_users.disable_end_user(workspace.pk, "bruno.lefevre")
    frame.get_by_role("button", name="Refresh").click()
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "ended")
    expect(frame.get_by_role("status")).to_contain_text(
        "Bruno Lefèvre's access is disabled on the analytics host"
    )
    assert not watched["problems"]
