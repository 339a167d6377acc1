"""The app's embed.js in Chromium, on real origins: the live server is the analytics host,
each ``origins()`` a site on a loopback port of its own (a customer's, or a third one).

The framing page answers only its frame's origin (a frame gone to a third origin gets
nothing) and the frame takes tokens only from the parent origins it was given; tokens are
refreshed at two thirds of their life without a reload, a request refused as
``token_expired`` is repeated once with a fresh token, and a revocation, a disabled person
or a wrong origin ends the session with the ``ended`` event. The same without a frame.
The host's code the docs show (docs/browser.md) runs as written. The tests that wait
(for a refresh, or for asks that must stay unanswered) are in the slow tier.
Screenshots: artifacts/screenshots/embed-script-*.png.
"""

import json
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.docs_examples.pages import fenced_blocks
from tests.support import ROOT
from tests.support.dashboard_page import claims, data_requests, embed_token_of, expect_rows
from tests.support.embed import clock_moved
from tests.support.http import call_api
from tests.support.origins import Answer, json_answer, minting_backend
from usergroups import services

pytestmark = pytest.mark.django_db(transaction=True)

SALES = "/embed/api/sales/"
DOCS = ROOT / "docs" / "browser.md"
DOCS_HOST = "https://analytics.example"  # the host's address in the docs' code
PROBE = (ROOT / "tests" / "e2e" / "static" / "embed-probe.html").read_text()
LONG_ENOUGH_MS = 2500  # a frame that asks says it again every second


def framing_page(frame_src: str, listen_after_ms: int = 0) -> str:
    """A customer's page: frames ``frame_src`` and serves it the tokens of its backend
    (from ``listen_after_ms`` on: a page whose script runs late), noting when it was asked
    (``window.asks``)."""
    return f"""<!doctype html>
<iframe id="frame" src="{frame_src}"></iframe>
<script type="module">
  import {{ serveTokens }} from "/static/usergroups/embed.js";
  const frame = document.getElementById("frame");
  window.asks = [];
  setTimeout(() => serveTokens(frame, () => {{
    asks.push(Date.now());
    return fetch("/embed-token", {{ method: "POST" }}).then((a) => a.json());
  }}), {listen_after_ms});
</script>
"""


def probe_frame(page):
    return page.frame_locator("#frame").locator("body")


def wait_until(target, script: str, timeout: float = 10):
    """The first truthy value of ``script`` in ``target``'s page, asked until then (the
    page may still be loading, or navigating)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = target.evaluate(script)
        except PlaywrightError:
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"still false: {script}"
        time.sleep(0.05)


def ready(target) -> str:
    """The probe's first token, once it has one."""
    return wait_until(target, "() => window.session && session.ready()")


def events(target) -> list[dict]:
    return target.evaluate("() => window.events")


def fetch_status(target, method: str = "GET") -> int:
    """The status of ``session.fetch`` on the sales endpoint, in the probe's page."""
    script = """async (element, [url, method]) => {
      while (!window.session) await new Promise((resolve) => setTimeout(resolve, 20));
      return (await session.fetch(url, { method })).status;
    }"""
    return target.evaluate(script, [SALES, method])


def sequence(*answers: Answer | Callable[[], Answer]) -> Callable[[], Answer]:
    """A backend answering ``answers`` in turn, then the last one again and again."""
    queue = list(answers)

    def backend() -> Answer:
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return answer() if callable(answer) else answer

    return backend


def expired_token(workspace, group: str, origin: str) -> str:
    with clock_moved(-61):
        minted = services.embed.mint_embed_token(
            workspace.pk, group, resource="sales", origin=origin, expires_in=30
        )
    return minted.token


@pytest.fixture
def customer(demo, live_server, origins, probe):
    """A customer site on its own origin framing the probe, its backend minting tokens
    locked to its origin through the API (told to the page as 3-second ones)."""
    workspace, api_key = demo
    site = origins()
    body = {"user_group_id": "acme-eu", "resource": "sales", "origin": site.url}
    site.backend = minting_backend(live_server.url, api_key, body, shown_expires_in=3)
    site.pages["/"] = framing_page(f"{probe}?parent={site.url}")
    return site


def test_the_documented_host_code_embeds_the_dashboard_from_another_origin(
    page, live_server, demo, origins, settings, monkeypatch, watched, screenshot
):
    workspace, api_key = demo
    (html,) = [block for block in fenced_blocks(DOCS, "html") if "serveTokens" in block]
    (backend,) = [block for block in fenced_blocks(DOCS, "python") if "def embed_token" in block]
    assert len(html.splitlines()) + len(backend.splitlines()) < 30
    site = origins()
    settings.DASHBOARDS_EMBED_PARENT_ORIGINS = [site.url]  # the dashboard's frame-ancestors
    monkeypatch.setenv("ANALYTICS_HOST", live_server.url)
    monkeypatch.setenv("ANALYTICS_API_KEY", api_key)
    monkeypatch.setenv("SITE_ORIGIN", site.url)
    namespace: dict = {}
    exec(compile(backend, str(DOCS), "exec"), namespace)  # the docs' lines, as written
    site.backend = lambda: (200, namespace["embed_token"]("acme-eu"))
    assert DOCS_HOST in html
    site.pages["/"] = html.replace(DOCS_HOST, live_server.url)

    page.goto(f"{site.url}/")
    expect_rows(page, "eu_warehouse", {"DE", "FR"})
    screenshot("embed-script-01-documented-host-code")
    (sent,) = data_requests(watched["requests"])
    token = embed_token_of(sent)
    assert claims(token)["origin"] == site.url and claims(token)["resource"] == "sales"
    assert site.asks == 1
    assert not any(token in request.url for request in watched["requests"])
    assert not watched["problems"]


@pytest.mark.slow  # waits for asks that must not be answered
def test_only_the_frames_origin_gets_a_token_and_a_third_origin_gets_nothing(
    page, customer, origins, probe
):
    third = origins()
    third.pages["/probe"] = PROBE
    page.goto(f"{customer.url}/")
    frame = probe_frame(page)
    ready(frame)
    assert customer.asks == 1

    # The frame goes to a third origin (a link, a redirect): its asks reach the page,
    # which answers the origin it framed only. Its backend is not even asked.
    go = "src => { document.getElementById('frame').src = src; }"
    page.evaluate(go, f"{third.url}/probe?parent={customer.url}")
    wait_until(frame, f"() => location.origin === '{third.url}' && !!window.session")
    page.wait_for_timeout(LONG_ENOUGH_MS)
    assert frame.evaluate("() => window.messages") == []
    assert events(frame) == []
    assert customer.asks == 1

    # Back on the host's origin, the frame is served again.
    page.evaluate(go, f"{probe}?parent={customer.url}")
    wait_until(frame, f"() => location.origin !== '{third.url}' && !!window.session")
    ready(frame)
    assert customer.asks == 2


@pytest.mark.slow  # waits for asks that must not be answered
def test_messages_from_an_origin_not_given_are_ignored(page, demo, origins, probe):
    """A third origin frames the dashboard (its frame-ancestors aside) and offers it a good
    token again and again: the dashboard, given another parent origin, takes none (and its
    asks, posted to that origin only, never reach the third one)."""
    workspace, _ = demo
    minted = services.embed.mint_embed_token(workspace.pk, "acme-eu", resource="sales")
    customer_origin, third = "http://customer.invalid", origins()
    host = probe.split("/static/")[0]
    third.pages["/"] = f"""<!doctype html>
<iframe id="frame" src="{probe}?parent={customer_origin}"></iframe>
<script>
  const frame = document.getElementById("frame");
  const offer = () => frame.contentWindow.postMessage(
    {{ v: 1, type: "usergroups:embed-token", token: "{minted.token}", expiresIn: 60 }}, "{host}");
  setInterval(offer, 300);
</script>
"""
    page.goto(f"{third.url}/")
    frame = probe_frame(page)
    wait_until(frame, "() => !!window.session")
    page.wait_for_timeout(LONG_ENOUGH_MS)
    offered = frame.evaluate("() => window.messages")
    assert len(offered) >= 5  # they were delivered
    assert {message["origin"] for message in offered} == {third.url}
    assert events(frame) == []
    waiting = "() => Promise.race([session.ready(), new Promise(r => setTimeout(r, 100, 'none'))])"
    assert frame.evaluate(waiting) == "none"


@pytest.mark.slow  # lives through two refreshes
@pytest.mark.parametrize("framed", [True, False], ids=["framed", "no-frame"])
def test_tokens_are_refreshed_at_two_thirds_of_their_life_without_a_reload(
    page, demo, live_server, origins, probe, watched, framed
):
    workspace, api_key = demo
    site = origins()
    host = live_server.url
    if framed:
        origin, address = site.url, f"{site.url}/"
        site.pages["/"] = framing_page(f"{probe}?parent={site.url}")
    else:  # a page of the host that gets its tokens itself
        origin, address = host, f"{probe}?token-url={site.url}/embed-token"
        site.cors_origin = host
    body = {"user_group_id": "acme-eu", "resource": "sales", "origin": origin}
    site.backend = minting_backend(host, api_key, body, shown_expires_in=3)
    page.goto(address)
    target = probe_frame(page) if framed else page.locator("body")
    ready(target)
    target.evaluate("() => { window.mark = 'never reloaded'; }")
    wait_until(target, "() => events.filter((event) => event.type === 'token').length === 3")

    tokens = [event for event in events(target) if event["type"] == "token"]
    asks = page.evaluate("() => asks") if framed else target.evaluate("() => asks")
    assert len(asks) == 3 and site.asks == 3
    # Each token is followed by an ask 2 s later: two thirds of the 3 s it was told.
    waits = [ask - token["at"] for token, ask in zip(tokens, asks[1:], strict=False)]
    assert all(1990 <= wait <= 2300 for wait in waits), waits
    assert len({event["claims"]["jti"] for event in tokens}) == 3
    assert fetch_status(target) == 200
    (sent,) = data_requests(watched["requests"])
    assert claims(embed_token_of(sent))["jti"] == tokens[-1]["claims"]["jti"]
    assert target.evaluate("() => window.mark") == "never reloaded"
    loads = [r for r in watched["requests"] if "embed-probe.html" in r.url]
    assert len(loads) == 1


def test_a_request_refused_as_token_expired_is_repeated_once_with_a_fresh_token(
    page, demo, live_server, customer, watched
):
    workspace, _ = demo
    expired = expired_token(workspace, "acme-eu", customer.url)
    fresh = customer.backend
    customer.backend = sequence(json_answer(200, {"embed_token": expired, "expires_in": 30}), fresh)
    page.goto(f"{customer.url}/")
    frame = probe_frame(page)
    assert fetch_status(frame) == 200
    first, again = data_requests(watched["requests"])
    assert embed_token_of(first) == expired and embed_token_of(again) != expired
    assert first.response().status == 401 and again.response().status == 200
    assert [event["type"] for event in events(frame)] == ["token", "token"]

    # A token that is expired again: once more only, then the answer as it is.
    customer.backend = sequence(json_answer(200, {"embed_token": expired, "expires_in": 30}))
    page.reload()
    frame = probe_frame(page)
    assert fetch_status(frame) == 401
    assert len(data_requests(watched["requests"])) == 4
    assert [event["type"] for event in events(frame)] == ["token", "token"]
    assert frame.evaluate("() => session.ended") is None


PAGE_HEIGHT = "163px"  # the probe's: its 137 px pre and 13 px of collapsed margins each side


@pytest.mark.parametrize("listen_after_ms", [0, 1500])
def test_the_frame_takes_the_height_the_dashboard_reports(page, customer, probe, listen_after_ms):
    """Also when the page's script listens only after the frame has said its size."""
    customer.pages["/"] = framing_page(f"{probe}?parent={customer.url}", listen_after_ms)
    page.goto(f"{customer.url}/")
    ready(probe_frame(page))
    expect(page.locator("#frame")).to_have_css("height", PAGE_HEIGHT)


@pytest.mark.parametrize("size_of", ["root", "element"])
def test_the_frame_holds_the_margins_of_the_page_and_shrinks_with_it(
    page, customer, probe, size_of
):
    """The body's and a ``<pre>``'s margins lie outside the element the dashboard names
    (0.4 sized the frame to that element alone and cut them off): the frame takes the
    whole page's height, nothing in it scrolls, and it shrinks when the page does."""
    customer.pages["/"] = framing_page(f"{probe}?parent={customer.url}&size-of={size_of}")
    page.goto(f"{customer.url}/")
    body = probe_frame(page)
    ready(body)
    frame = page.locator("#frame")
    expect(frame).to_have_css("height", PAGE_HEIGHT)
    fits = "() => document.documentElement.scrollHeight <= innerHeight"
    assert body.evaluate(fits)
    body.evaluate("() => { document.querySelector('pre').style.height = '50px'; }")
    expect(frame).to_have_css("height", "76px")  # 50 + 13 + 13
    assert body.evaluate(fits)


def ended(target) -> list[dict]:
    return [event for event in events(target) if event["type"] == "ended"]


def test_the_refusal_code_is_read_from_the_challenge_and_from_the_body(page, customer):
    """A 401 whose code is in ``WWW-Authenticate`` alone (its body is no JSON), then a 403
    whose code is in its body alone (no challenge): both are read."""
    answers = [
        {"status": 401, "headers": {"WWW-Authenticate": 'Embed error="token_expired"'}},
        {
            "status": 403,
            "content_type": "application/json",
            "body": json.dumps({"success": 0, "error": {"code": "origin_not_allowed"}}),
        },
    ]
    sent = []

    def answer(route):
        sent.append(route.request.headers["authorization"])
        route.fulfill(**answers[len(sent) - 1])

    page.route(f"**{SALES}", answer)
    page.goto(f"{customer.url}/")
    frame = probe_frame(page)
    assert fetch_status(frame) == 403
    assert len(sent) == 2 and sent[0] != sent[1]  # repeated once, with a fresh token
    (event,) = ended(frame)
    assert event["code"] == "origin_not_allowed"


@pytest.mark.slow  # waits for asks that must not be answered
def test_a_revocation_ends_the_session(page, demo, live_server, customer, screenshot):
    workspace, api_key = demo
    page.goto(f"{customer.url}/")
    frame = probe_frame(page)
    assert fetch_status(frame) == 200
    status, body = call_api(
        live_server.url, api_key, "POST", {"user_group_id": "acme-eu"},
        path="/api/user/embed-token/revoke",
    )  # fmt: skip
    assert status == 200, body
    assert fetch_status(frame) == 401  # read from WWW-Authenticate: Embed error="..."
    (event,) = ended(frame)
    assert event["code"] == "authentication_failed"
    assert frame.evaluate("() => session.ended") == "authentication_failed"
    refused = "() => session.fetch('/embed/api/sales/').then(() => 'sent', (e) => e.code)"
    assert frame.evaluate(refused) == "authentication_failed"
    asks = customer.asks
    page.wait_for_timeout(LONG_ENOUGH_MS)  # past the refresh the token would have had
    assert customer.asks == asks


def test_a_disabled_person_ends_the_session(page, demo, live_server, customer):
    workspace, api_key = demo
    body = {"user_group_id": "acme-eu", "resource": "sales", "origin": customer.url}
    body["end_user"] = {"id": "anna.schmidt"}
    customer.backend = minting_backend(live_server.url, api_key, body)
    page.goto(f"{customer.url}/")
    frame = probe_frame(page)
    assert fetch_status(frame) == 200
    status, answer = call_api(
        live_server.url, api_key, "PUT", {"end_user_id": "anna.schmidt", "disabled": True},
        path="/api/user/end-user",
    )  # fmt: skip
    assert status == 200, answer

    # The open dashboard's next request is refused; the event names the person's token.
    assert fetch_status(frame) == 401
    (event,) = ended(frame)
    assert event["code"] == "authentication_failed"
    assert event["claims"]["end_user_id"] == "anna.schmidt"

    # Opened again, the backend's mint is refused: the session ends before any token.
    page.reload()
    frame = probe_frame(page)
    refused = "() => window.session && session.ready().then(() => 'token', (e) => e.code)"
    assert wait_until(frame, refused) == "end_user_disabled"
    assert [event["type"] for event in events(frame)] == ["ended"]
    assert ended(frame)[0]["code"] == "end_user_disabled"


def test_a_token_used_from_the_wrong_origin_ends_the_session(
    page, demo, live_server, origins, probe
):
    """No frame: a page of the host whose backend mints for another site's origin. A
    request that carries ``Origin`` (a POST does, always) is refused: 403, read from the
    body, which has no challenge."""
    workspace, api_key = demo
    site = origins()
    site.cors_origin = live_server.url
    body = {"user_group_id": "acme-eu", "resource": "sales", "origin": "https://elsewhere.example"}
    site.backend = minting_backend(live_server.url, api_key, body)
    page.goto(f"{probe}?token-url={site.url}/embed-token")
    target = page.locator("body")
    assert fetch_status(target, "POST") == 403
    (event,) = ended(target)
    assert event["code"] == "origin_not_allowed"
