"""What the errors page promises about a 405 is what the server sends. The documented
examples checker (tests/docs_examples) runs the page's curl; this holds the table row too."""

import re
from pathlib import Path

from tests.support.api import send

ERRORS_PAGE = (Path(__file__).resolve().parent.parent / "docs" / "errors.md").read_text()


def test_the_405_example_shows_the_allow_header_the_server_sends(api_client):
    allow = send(api_client, "PATCH", {})["Allow"]
    (row,) = re.findall(r"^\| 405 \| .*`method_not_allowed`.*$", ERRORS_PAGE, re.MULTILINE)
    assert "`Allow`" in row
    documented = set(re.findall(r"^Allow: (.*)$", ERRORS_PAGE, re.MULTILINE))
    assert allow in documented
