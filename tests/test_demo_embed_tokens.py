"""The example project's embed flow with embed tokens (CONTRACT section 6, the demo).

The customer site (``/demo/``) never puts a token in its page: its script asks the site's
backend (``POST /demo/embed-token/``), which mints a short-lived embed token locked to the
site's origin and to the ``sales`` dashboard. The dashboard sends it in
``Authorization: Embed …`` to ``/embed/api/sales/``, which also still takes group tokens.
The browser side (refresh without reload, "access revoked") is in tests/e2e/.
"""

import json
import re

import jwt
import pytest
from django.test import Client

from example_project.dashboards.demo import DEMO_GROUPS, seed_demo_groups
from example_project.dashboards.sources import ensure_sample_data, sample_rows
from tests.support.embed import clock_moved
from tests.support.factories import WorkspaceFactory
from usergroups import services
from usergroups.models import UserGroup

SITE = "http://testserver"  # the test client's origin: the customer site's and the host's
PAGE_URL = "/demo/"
MINT_URL = "/demo/embed-token/"
SALES_URL = "/embed/api/sales/"
GROUP_TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")
EMBED_TOKEN = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+")


@pytest.fixture
def demo(settings, db):
    """The demo workspace and its groups, the customer site on."""
    settings.DASHBOARDS_DEMO_SITE = True
    ensure_sample_data()
    workspace = WorkspaceFactory(slug="demo")
    seed_demo_groups(workspace)
    return workspace


def mint(client, group="acme-eu", **extra):
    return client.post(MINT_URL, {"group": group}, **extra)


def minted_token(client, group="acme-eu") -> str:
    response = mint(client, group)
    assert response.status_code == 200, response.content
    return response.json()["embed_token"]


def fetch(client, token, **extra):
    return client.get(SALES_URL, HTTP_AUTHORIZATION=f"Embed {token}", **extra)


def claims(token: str) -> dict:
    """What anyone holding the token can read (its signature is checked by the host)."""
    return jwt.decode(token, options={"verify_signature": False})


def expected_regions(rows) -> set[str]:
    return {row["region"] for row in rows}


def spec(provided_id: str) -> dict:
    return next(spec for spec in DEMO_GROUPS if spec["user_group_id"] == provided_id)


def assert_refused(response, status, code):
    assert response.status_code == status, response.content[:300]
    body = response.json()
    assert body["success"] == 0 and body["error"]["code"] == code
    assert "rows" not in body
    if status == 401:
        assert response["WWW-Authenticate"] == f'Embed error="{code}"'


# --- The customer site's page -------------------------------------------------------


def test_the_page_holds_no_token_and_frames_the_dashboard_by_a_plain_address(client, demo):
    response = client.get(PAGE_URL, {"group": "acme-eu"})
    assert response.status_code == 200
    html = response.content.decode()
    assert not GROUP_TOKEN.search(html) and not EMBED_TOKEN.search(html)
    assert 'src="/embed/dashboard/"' in html
    assert 'data-mint-url="/demo/embed-token/"' in html and 'data-group="acme-eu"' in html
    assert response["X-Frame-Options"] == "DENY"
    # Its script may talk to this site only: to mint.
    assert "connect-src 'self'" in response["Content-Security-Policy"]
    assert "no-store" in response["Cache-Control"]


# --- Its backend's minting ----------------------------------------------------------


def test_the_backend_mints_a_short_token_locked_to_the_site_and_the_dashboard(client, demo):
    response = mint(client, "globex-us")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    body = response.json()
    assert set(body) == {"embed_token", "expires_in"}
    assert body["expires_in"] == 60  # DASHBOARDS_EMBED_TOKEN_SECONDS of the example project
    said = claims(body["embed_token"])
    group = services.groups.find_group(demo.pk, "globex-us")
    assert said["sub"] == str(group.team_id)
    assert said["origin"] == SITE
    assert said["resource"] == "sales"
    assert said["exp"] - said["iat"] == 60
    # Nothing of the group token or its properties in it.
    assert group.token not in body["embed_token"]
    assert "properties" not in said and "regions" not in said


def test_the_lifetime_is_a_setting_of_the_site(client, demo, settings):
    settings.DASHBOARDS_EMBED_TOKEN_SECONDS = 30
    token = minted_token(client)
    assert claims(token)["exp"] - claims(token)["iat"] == 30


def test_each_mint_is_a_new_token(client, demo):
    first, second = minted_token(client), minted_token(client)
    assert first != second and claims(first)["jti"] != claims(second)["jti"]


def test_minting_changes_no_group(client, demo, django_assert_max_num_queries):
    before = list(UserGroup.objects.order_by("pk").values())
    mint(client)  # warm
    # The workspace, the group (and its ancestors), the mint's audit event, and its
    # delivery to the demo site's receiver (the webhooks' SELECT, the outbox INSERT).
    with django_assert_max_num_queries(5):
        assert mint(client).status_code == 200
    assert list(UserGroup.objects.order_by("pk").values()) == before


def test_the_backend_refuses_when_the_demo_site_is_off(client, demo, settings):
    settings.DASHBOARDS_DEMO_SITE = False
    response = mint(client)
    assert response.status_code == 404
    assert not EMBED_TOKEN.search(response.content.decode())
    assert client.get(PAGE_URL).status_code == 404


@pytest.mark.parametrize("group", ["not-a-customer", ""])
def test_the_backend_mints_for_its_customers_only_and_creates_no_group(client, demo, group):
    before = UserGroup.objects.count()
    response = mint(client, group)
    assert response.status_code == 404
    assert not EMBED_TOKEN.search(response.content.decode())
    assert UserGroup.objects.count() == before


def test_a_group_of_another_workspace_is_not_a_customer(client, demo, other_workspace):
    services.groups.get_or_create_group(other_workspace.pk, "elsewhere")
    assert mint(client, "elsewhere").status_code == 404


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_minting_is_a_post(client, demo, method):
    response = getattr(client, method)(MINT_URL, {"group": "acme-eu"})
    assert response.status_code == 405
    assert not EMBED_TOKEN.search(response.content.decode())


def test_minting_is_csrf_protected(demo):
    client = Client(enforce_csrf_checks=True)
    response = mint(client)
    assert response.status_code == 403
    assert not EMBED_TOKEN.search(response.content.decode())
    # With the token the page carries (what its script sends), it works.
    page = client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    csrf = re.search(r'<meta name="csrf-token" content="([^"]+)">', page).group(1)
    assert mint(client, HTTP_X_CSRFTOKEN=csrf).status_code == 200


# --- The host's data endpoint with embed tokens -----------------------------------------


@pytest.mark.parametrize("provided_id", [group["user_group_id"] for group in DEMO_GROUPS])
def test_each_customer_sees_its_own_rows_with_an_embed_token(client, demo, provided_id):
    response = fetch(client, minted_token(client, provided_id))
    assert response.status_code == 200
    regions = spec(provided_id)["properties"]["regions"]
    regions = set(regions) if isinstance(regions, list) else {regions}
    rows = response.json()["rows"]
    source = spec(provided_id)["mapping"]["sales"]
    assert rows and expected_regions(rows) == regions
    assert len(rows) == sum(row["region"] in regions for row in sample_rows(source))
    assert response["Cache-Control"] == "no-store"


def test_the_group_token_still_works_there(client, demo):
    token = services.groups.find_group(demo.pk, "acme-eu").token
    response = client.get(SALES_URL, HTTP_AUTHORIZATION=f"GroupToken {token}")
    assert response.status_code == 200 and response.json()["rows"]


def test_a_host_may_turn_the_group_tokens_off_there(client, demo, settings):
    settings.USERGROUPS = {"EMBED_ACCEPT_GROUP_TOKENS": False}
    token = services.groups.find_group(demo.pk, "acme-eu").token
    response = client.get(SALES_URL, HTTP_AUTHORIZATION=f"GroupToken {token}")
    assert response.status_code == 401
    assert fetch(client, minted_token(client)).status_code == 200


def test_the_site_origin_is_let_in_and_another_refused(client, demo):
    token = minted_token(client)
    assert fetch(client, token, HTTP_ORIGIN=SITE).status_code == 200
    assert_refused(
        fetch(client, token, HTTP_ORIGIN="https://evil.example"), 403, "origin_not_allowed"
    )
    assert_refused(fetch(client, token, HTTP_ORIGIN="null"), 403, "origin_not_allowed")


def test_a_token_past_its_60_seconds_is_token_expired_without_a_query(
    client, demo, django_assert_num_queries
):
    with clock_moved(-61):
        token = minted_token(client)
    with django_assert_num_queries(0):
        assert_refused(fetch(client, token), 401, "token_expired")
    with clock_moved(-58):
        token = minted_token(client)
    assert fetch(client, token).status_code == 200


def test_a_token_for_another_dashboard_is_refused(client, demo):
    minted = services.embed.mint_embed_token(demo.pk, "acme-eu", resource="orders")
    assert_refused(fetch(client, minted.token), 403, "permission_denied")


def test_a_token_for_no_resource_may_load_the_dashboard(client, demo):
    minted = services.embed.mint_embed_token(demo.pk, "acme-eu")
    assert fetch(client, minted.token).status_code == 200


def test_locked_params_filter_over_the_groups_properties(client, demo):
    minted = services.embed.mint_embed_token(
        demo.pk, "acme-eu", resource="sales", params={"regions": ["FR"]}
    )
    body = fetch(client, minted.token).json()
    assert expected_regions(body["rows"]) == {"FR"}
    assert body["variables"] == {"regions": ["FR"]}
    assert body["query"]["params"] == ["FR"]


def test_rotating_the_group_token_revokes_the_embed_tokens(client, demo):
    token = minted_token(client)
    group = services.groups.find_group(demo.pk, "acme-eu")
    services.groups.rotate_group_token(group)
    assert_refused(fetch(client, token), 401, "authentication_failed")
    # The customer site's next mint works: the dashboard reloaded is back.
    assert fetch(client, minted_token(client)).status_code == 200


def test_revoking_the_embed_tokens_refuses_them_and_not_later_ones(client, demo):
    token = minted_token(client)
    group_token = services.groups.find_group(demo.pk, "acme-eu").token
    services.embed.revoke_embed_tokens_of(demo.pk, "acme-eu")
    assert_refused(fetch(client, token), 401, "authentication_failed")
    assert fetch(client, minted_token(client)).status_code == 200
    assert client.get(SALES_URL, HTTP_AUTHORIZATION=f"GroupToken {group_token}").status_code == 200


def test_a_deleted_group_s_token_is_refused(client, demo):
    token = minted_token(client)
    services.groups.delete_group(demo.pk, provided_id="acme-eu")
    assert_refused(fetch(client, token), 401, "authentication_failed")
    assert mint(client).status_code == 404


@pytest.mark.parametrize("tampered", ["payload", "signature", "truncated"])
def test_a_tampered_token_is_refused_without_a_query(
    client, demo, tampered, django_assert_num_queries
):
    head, payload, signature = minted_token(client).split(".")
    if tampered == "payload":
        other = claims(minted_token(client, "globex-us"))
        payload = jwt.utils.base64url_encode(json.dumps(other).encode()).decode()
    token = {
        "payload": f"{head}.{payload}.{signature}",
        "signature": f"{head}.{payload}.{signature[::-1]}",
        "truncated": f"{head}.{payload}",
    }[tampered]
    with django_assert_num_queries(0):
        assert_refused(fetch(client, token), 401, "authentication_failed")


def test_an_embed_token_in_the_query_string_is_ignored(client, demo):
    token = minted_token(client)
    response = client.get(SALES_URL, {"embed_token": token, "token": token})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_good_token_costs_one_query_then_the_dashboard_s(client, demo, django_assert_num_queries):
    token = minted_token(client)
    with django_assert_num_queries(2):  # verification (revocation included), the sales query
        assert fetch(client, token).status_code == 200


# --- The dashboard page ------------------------------------------------------------------


def test_the_dashboard_may_be_framed_by_the_origin_its_tokens_name(client, demo):
    token_origin = claims(minted_token(client))["origin"]
    response = client.get("/embed/dashboard/")
    csp = response["Content-Security-Policy"]
    ancestors = re.search(r"frame-ancestors ([^;]*)", csp).group(1).split()
    assert ancestors == ["'self'", token_origin]
    html = response.content.decode()
    assert not GROUP_TOKEN.search(html) and not EMBED_TOKEN.search(html)
    assert response["X-Frame-Options"] == "SAMEORIGIN"


def test_the_dashboard_names_the_configured_customer_sites_too(client, demo, settings):
    settings.DASHBOARDS_EMBED_PARENT_ORIGINS = ["https://app.example.com", "x; script-src *"]
    response = client.get("/embed/dashboard/")
    assert response["Content-Security-Policy"].endswith(
        f"frame-ancestors 'self' {SITE} https://app.example.com"
    )
    assert f'["{SITE}", "https://app.example.com"]' in response.content.decode()
