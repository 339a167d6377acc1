"""The demo customer site's backend, as tests run it: with an API key of the test's in the
file it reads, and (where no server runs) its HTTP requests sent through the test client.
"""

import urllib.parse
import urllib.request
from pathlib import Path

from django.test import Client

from example_project.demo.management.commands.demo_setup import write_key

TEST_SERVER = "http://testserver"  # the test client's origin


def keep_demo_key(settings, directory: Path, key: str) -> Path:
    """Keep ``key`` as ``demo_setup`` keeps the demo's (a file of its owner's, which
    ``DEMO_API_KEY_FILE`` names) for the customer site's backend to call the API with."""
    settings.DEMO_API_KEY_FILE = directory / ".demo-api-key"
    write_key(settings.DEMO_API_KEY_FILE, key)
    return settings.DEMO_API_KEY_FILE


def through_test_client(request: urllib.request.Request) -> tuple[int, bytes]:
    """For ``host_api.send``: the request the backend would send over the network, through
    Django's test client instead (the same URL, method, headers and body); its answer's
    status and body."""
    url = urllib.parse.urlsplit(request.full_url)
    assert f"{url.scheme}://{url.netloc}" == TEST_SERVER, request.full_url
    headers = dict(request.header_items())
    response = Client().generic(
        request.get_method(),
        url.path,
        request.data or b"",
        content_type=headers.pop("Content-type", ""),
        headers=headers,
    )
    return response.status_code, response.content
