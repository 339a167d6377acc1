"""The customer site's backend as a client of the analytics host's API: over HTTP, with
the demo's API key, as any customer's backend calls it.

The host is this very site, so :func:`post` sends its JSON to this site's own address
(the request's origin, whose host ``ALLOWED_HOSTS`` vouches for: the key goes to no
other) with ``Authorization: Token <key>``. The host authenticates the key, checks its
scopes and records what it does under the key's prefix (audit trail, webhooks, the
Activity panel), as for any client. A server that answers one request at a time would
wait on itself: ``runserver`` (``make demo``) answers each in a thread of its own.

The key is the one ``manage.py demo_setup`` issued. The database holds only its digest;
the plain key is in ``.demo-api-key`` (git-ignored, readable by its owner only), read for
each call and never logged.
"""

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings
from django.views.decorators.debug import sensitive_variables

TIMEOUT_SECONDS = 10


class HostUnavailable(Exception):
    """The host's API could not be asked, or gave no JSON answer (no demo key, no
    connection, a timeout)."""


def read_secret(path: Path) -> str:
    """A secret kept in a file of its own (the demo's API key, its webhook secret), or ""
    when the file is missing or unreadable."""
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def api_key_file() -> Path:
    """Where ``demo_setup`` keeps the demo's API key: ``DEMO_API_KEY_FILE``, by default
    ``.demo-api-key`` in the repo root."""
    return Path(getattr(settings, "DEMO_API_KEY_FILE", settings.BASE_DIR / ".demo-api-key"))


@sensitive_variables("key", "request")
def post(base_url: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST ``body`` as JSON to the host's API at ``base_url + path`` with the demo's API
    key: the answer's status and decoded JSON, an error's included."""
    key = read_secret(api_key_file())
    if not key:
        raise HostUnavailable("No demo API key: run make demo (manage.py demo_setup).")
    request = urllib.request.Request(
        f"{base_url}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Token {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
    )
    try:
        status, raw = send(request)
    except OSError as exc:  # refused, unreachable, timed out (URLError is an OSError)
        raise HostUnavailable(f"The host's API did not answer ({type(exc).__name__}).") from None
    try:
        return status, json.loads(raw)
    except ValueError:
        raise HostUnavailable(f"The host's API answered {status} without JSON.") from None


def send(request: urllib.request.Request) -> tuple[int, bytes]:
    """The demo's one request over the network: ``request``'s status and body, those of
    an error status too. (Tests without a server send it through Django's test client.)"""
    # This site, on loopback or its own name: never through a proxy of the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=TIMEOUT_SECONDS) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()
