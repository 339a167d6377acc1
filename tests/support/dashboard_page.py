"""The demo's embedded dashboard as a browser test sees it (tests/e2e/)."""

import base64
import json
import re

from playwright.sync_api import FrameLocator, Page, Request, expect

from example_project.dashboards.sources import sample_rows

SALES_PATH = "/embed/api/sales/"
EMBED_HEADER = re.compile(r"Embed (eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+)")


def dashboard(page: Page) -> FrameLocator:
    return page.frame_locator("#dashboard-frame")


def rows_in_source(source: str, regions: set[str]) -> int:
    return sum(row["region"] in regions for row in sample_rows(source))


def expect_rows(page: Page, source: str, regions: set[str]) -> None:
    """The dashboard is drawn with exactly the rows of ``regions`` in ``source``."""
    frame = dashboard(page)
    expect(frame.locator("#dashboard")).to_have_attribute("data-state", "ready")
    cells = frame.locator("#rows tbody td.region")
    expect(cells).to_have_count(rows_in_source(source, regions))
    assert set(cells.all_text_contents()) == regions
    expect(frame.locator("#chart rect.bar")).to_have_count(6 * len(regions))  # months x regions


def data_requests(requests: list[Request]) -> list[Request]:
    return [request for request in requests if request.url.endswith(SALES_PATH)]


def embed_token_of(request: Request) -> str:
    """The embed token a data request carried (it fails the test if it carried another
    kind of credential)."""
    match = EMBED_HEADER.fullmatch(request.all_headers()["authorization"])
    assert match, "the dashboard sent something other than an embed token"
    return match.group(1)


def claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
