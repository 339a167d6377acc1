"""What the README promises about responses is what the server sends."""

import re
from pathlib import Path

from tests.support.api import send

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_the_405_row_and_example_name_the_allow_header_the_server_sends(api_client):
    allow = send(api_client, "PATCH", {})["Allow"]
    (row,) = re.findall(r"^\| 405 \| `method_not_allowed` \|.*$", README, re.MULTILINE)
    assert f"`Allow: {allow}`" in row
    documented = set(re.findall(r"^Allow: (.*)$", README, re.MULTILINE))
    assert documented == {allow}
    # The row names the allowed methods in words too.
    assert all(method in row for method in allow.split(", "))
