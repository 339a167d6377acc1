"""The example project's embed flow with embed tokens (CONTRACT section 6, the demo).

The customer site (``/demo/``) never puts a token in its page: its script asks the site's
backend (``POST /demo/embed-token/``), which mints a short-lived embed token locked to the
site's origin and to the ``sales`` dashboard. The dashboard sends it in
``Authorization: Embed …`` to ``/embed/api/sales/``, which also still takes group tokens.
Signed in as a person of the customer's (CONTRACT section 7), the backend mints for that
person (``end_user``), whose attributes narrow the rows; "sign out everywhere" revokes the
person's tokens in every customer and the backend mints nothing more for them.
The browser side (refresh without reload, "access revoked", "session ended") is in
tests/e2e/.
"""

import json
import re

import jwt
import pytest
from django.test import Client
from django.utils import timezone

from example_project.dashboards import host_api
from example_project.dashboards.customer_site import SIGNED_IN
from example_project.dashboards.demo import (
    DEMO_GROUPS,
    DEMO_PEOPLE,
    people_of,
    seed_demo_groups,
    seed_demo_people,
)
from example_project.dashboards.models import SignOut
from example_project.dashboards.sources import ensure_sample_data, sample_rows
from tests.support.demo_backend import keep_demo_key, through_test_client
from tests.support.embed import clock_moved
from tests.support.factories import APIKeyFactory, WorkspaceFactory
from usergroups import services
from usergroups.models import AuditEvent, EndUser, UserGroup

SITE = "http://testserver"  # the test client's origin: the customer site's and the host's
PAGE_URL = "/demo/"
MINT_URL = "/demo/embed-token/"
SIGN_IN_URL = "/demo/sign-in/"
SIGN_OUT_URL = "/demo/sign-out/"
SALES_URL = "/embed/api/sales/"
GROUP_TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")
EMBED_TOKEN = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+")


@pytest.fixture
def demo(settings, db, tmp_path, monkeypatch):
    """The demo workspace and its groups, the customer site on, and the API key its
    backend calls the API with, over the test client."""
    settings.DASHBOARDS_DEMO_SITE = True
    ensure_sample_data()
    workspace = WorkspaceFactory(slug="demo")
    seed_demo_groups(workspace)
    workspace.api_key = APIKeyFactory(workspace=workspace, name="demo (make demo)")
    keep_demo_key(settings, tmp_path, workspace.api_key.key)
    monkeypatch.setattr(host_api, "send", through_test_client)
    return workspace


def mint(client, group="acme-eu", person="", **extra):
    return client.post(MINT_URL, {"group": group, "person": person}, **extra)


def minted_token(client, group="acme-eu", person="") -> str:
    response = mint(client, group, person)
    assert response.status_code == 200, response.content
    return response.json()["embed_token"]


def sign_in(client, group, person, **extra):
    return client.post(SIGN_IN_URL, {"group": group, "person": person}, **extra)


def sign_out(client, group, person, **extra):
    return client.post(SIGN_OUT_URL, {"group": group, "person": person}, **extra)


def signed_in_token(client, group, person) -> str:
    """Sign the client in as ``person`` of ``group``, then mint as the page's script does."""
    assert sign_in(client, group, person).status_code == 302
    return minted_token(client, group, person)


def rows_of(source: str, regions: set[str]) -> int:
    return sum(row["region"] in regions for row in sample_rows(source))


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
    # Through the API: the key, the group (and its ancestors), the mint's audit event, and
    # its delivery to the demo site's receiver (the webhooks' SELECT, the outbox INSERT).
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


# --- Signed in as a person (contract section 7) ------------------------------------------


def test_the_page_lists_the_chosen_customers_people_to_sign_in_as(client, demo):
    html = client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    for person in DEMO_PEOPLE:
        listed = f'name="person" value="{person["end_user_id"]}"' in html
        assert listed == ("acme-eu" in person["customers"]), person["end_user_id"]
    # Nobody signed in: the customer's own view, framed for no person.
    assert "Nobody signed in" in html and 'data-person=""' in html
    assert "sign-out-form" not in html


def test_signing_in_shows_the_person_and_frames_the_dashboard_for_them(client, demo):
    response = sign_in(client, "acme-eu", "anna.schmidt")
    assert response.status_code == 302
    assert response["Location"] == "/demo/?group=acme-eu"
    html = client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    assert "Signed in as <strong>Anna Schmidt</strong>" in html
    assert 'data-person="anna.schmidt"' in html and 'id="sign-out-form"' in html
    assert not EMBED_TOKEN.search(html)
    # Another customer's page is that customer's own view: Anna does not work there.
    html = client.get(PAGE_URL, {"group": "globex-us"}).content.decode()
    assert 'data-person=""' in html


@pytest.mark.parametrize(
    ("group", "person"),
    [("acme-eu", "hank.scorpio"), ("acme-eu", "nobody"), ("acme-eu", ""), ("nowhere", "anna")],
)
def test_one_signs_in_only_as_a_person_of_that_customer(client, demo, group, person):
    assert sign_in(client, group, person).status_code == 404
    assert 'data-person=""' in client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()


def test_signing_in_and_out_are_posts_with_csrf(demo):
    client = Client(enforce_csrf_checks=True)
    assert (
        client.get(SIGN_IN_URL, {"group": "acme-eu", "person": "anna.schmidt"}).status_code == 405
    )
    assert sign_in(client, "acme-eu", "anna.schmidt").status_code == 403
    page = client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert sign_in(client, "acme-eu", "anna.schmidt", HTTP_X_CSRFTOKEN=csrf).status_code == 302
    assert client.get(SIGN_OUT_URL).status_code == 405
    assert sign_out(client, "acme-eu", "anna.schmidt").status_code == 403
    assert (
        'data-person="anna.schmidt"' in client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    )


def test_the_backend_mints_for_the_signed_in_person_with_their_attributes(client, demo):
    token = signed_in_token(client, "acme-eu", "anna.schmidt")
    assert claims(token)["end_user_id"] == "anna.schmidt"
    assert "territory" not in claims(token)  # the attributes stay on the host
    body = fetch(client, token).json()
    assert body["end_user"] == {"end_user_id": "anna.schmidt", "display_name": "Anna Schmidt"}
    assert body["variables"] == {"regions": ["DE", "FR"], "territory": ["DE"]}
    assert body["variable_sources"] == {"regions": "user_group:acme-eu", "territory": "end_user"}
    assert expected_regions(body["rows"]) == {"DE"}
    assert len(body["rows"]) == rows_of("eu_warehouse", {"DE"})
    assert body["query"]["params"] == ["DE", "FR", "DE"]


def test_switching_person_switches_the_rows(client, demo):
    anna = fetch(client, signed_in_token(client, "acme-eu", "anna.schmidt")).json()
    bruno = fetch(client, signed_in_token(client, "acme-eu", "bruno.lefevre")).json()
    assert expected_regions(anna["rows"]) == {"DE"} and expected_regions(bruno["rows"]) == {"FR"}
    assert bruno["end_user"]["display_name"] == "Bruno Lefèvre"
    # Signed in as Bruno, the page can no longer mint for Anna.
    assert mint(client, "acme-eu", "anna.schmidt").json() == {
        "error": "signed_out",
        "message": "That person is not signed in on this site.",
    }


def test_a_territory_narrows_the_customers_regions_and_never_widens_them(client, demo):
    # Dana covers DE and UK: at Acme Europe (DE, FR) she sees DE, at Initech UK she sees UK.
    at_acme = fetch(client, signed_in_token(client, "acme-eu", "dana.kowalski")).json()
    at_initech = fetch(client, signed_in_token(client, "initech-uk", "dana.kowalski")).json()
    assert expected_regions(at_acme["rows"]) == {"DE"}
    assert expected_regions(at_initech["rows"]) == {"UK"}


def test_a_token_without_a_person_shows_the_customers_own_view(client, demo):
    body = fetch(client, minted_token(client, "acme-eu")).json()
    assert body["end_user"] is None
    assert body["variables"] == {"regions": ["DE", "FR"]}
    assert body["variable_sources"] == {"regions": "user_group:acme-eu"}
    assert claims(minted_token(client, "acme-eu")).get("end_user_id") is None


def test_the_group_token_has_no_sources_to_show(client, demo):
    token = services.groups.find_group(demo.pk, "acme-eu").token
    body = client.get(SALES_URL, HTTP_AUTHORIZATION=f"GroupToken {token}").json()
    assert body["end_user"] is None and body["variable_sources"] is None


@pytest.mark.parametrize("person", ["anna.schmidt", ""])
def test_the_backend_mints_only_for_whom_the_session_signed_in(client, demo, person):
    # Nobody signed in: Anna's token is refused; the customer's own view is not.
    assert mint(client, "acme-eu", "anna.schmidt").status_code == 403
    sign_in(client, "acme-eu", "bruno.lefevre")
    # Bruno signed in: neither Anna's nor the customer's own view in his stead.
    response = mint(client, "acme-eu", person)
    assert response.status_code == 403 and response.json()["error"] == "signed_out"
    assert not EMBED_TOKEN.search(response.content.decode())


def test_minting_for_a_seeded_person_writes_nothing_to_them(client, demo):
    seed_demo_people(demo)
    before = list(EndUser.objects.order_by("pk").values())
    signed_in_token(client, "acme-eu", "anna.schmidt")
    assert list(EndUser.objects.order_by("pk").values()) == before


def test_a_persons_dashboard_costs_one_more_query_for_their_name(
    client, demo, django_assert_num_queries
):
    token = signed_in_token(client, "acme-eu", "anna.schmidt")
    # verification (revocation included), the person's display name, the sales query
    with django_assert_num_queries(3):
        assert fetch(client, token).status_code == 200


def test_sign_out_everywhere_revokes_the_persons_tokens_in_every_customer(client, demo):
    at_initech = signed_in_token(client, "initech-uk", "dana.kowalski")
    at_acme = signed_in_token(client, "acme-eu", "dana.kowalski")
    other = Client()
    anna = signed_in_token(other, "acme-eu", "anna.schmidt")
    response = sign_out(client, "acme-eu", "dana.kowalski", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response.json() == {"signed_out": "dana.kowalski", "display_name": "Dana Kowalski"}
    assert_refused(fetch(client, at_acme), 401, "authentication_failed")
    assert_refused(fetch(client, at_initech), 401, "authentication_failed")
    # Another person of the same customer is not signed out.
    assert fetch(other, anna).status_code == 200
    # This browser is signed out: no token for Dana, nor the customer's view in her stead.
    assert mint(client, "acme-eu", "dana.kowalski").status_code == 403
    assert mint(client, "acme-eu", "").status_code == 403
    html = client.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    assert "<h1>Signed out</h1>" in html and "was signed out everywhere" in html
    assert "dashboard-frame" not in html
    # Signing in again: a new token, which works.
    assert fetch(client, signed_in_token(client, "acme-eu", "dana.kowalski")).status_code == 200


def test_sign_out_everywhere_ends_the_persons_sign_in_in_every_browser(client, demo):
    laptop = Client()
    on_laptop = signed_in_token(laptop, "acme-eu", "anna.schmidt")
    signed_in_token(client, "acme-eu", "anna.schmidt")
    assert sign_out(client, "acme-eu", "anna.schmidt").status_code == 302
    # The laptop's open dashboard is refused, and its timer gets no fresh token.
    assert_refused(fetch(laptop, on_laptop), 401, "authentication_failed")
    assert mint(laptop, "acme-eu", "anna.schmidt").json()["error"] == "signed_out"
    assert "<h1>Signed out</h1>" in laptop.get(PAGE_URL, {"group": "acme-eu"}).content.decode()
    # Signing in again there is a new sign-in, after the sign-out: it counts.
    assert fetch(laptop, signed_in_token(laptop, "acme-eu", "anna.schmidt")).status_code == 200
    assert mint(client, "acme-eu", "anna.schmidt").status_code == 403  # still signed out here


def test_a_session_without_a_sign_in_time_is_signed_out_by_any_sign_out(client, demo):
    signed_in_token(client, "acme-eu", "anna.schmidt")
    session = client.session
    session[SIGNED_IN] = {"group": "acme-eu", "person": "anna.schmidt"}
    session.save()
    assert mint(client, "acme-eu", "anna.schmidt").status_code == 200
    SignOut.objects.create(end_user_id="anna.schmidt", signed_out_at=timezone.now())
    assert mint(client, "acme-eu", "anna.schmidt").status_code == 403


def test_a_person_the_host_disabled_gets_no_token_and_loses_theirs(client, demo):
    token = signed_in_token(client, "acme-eu", "anna.schmidt")
    services.end_users.disable_end_user(demo.pk, "anna.schmidt")
    assert_refused(fetch(client, token), 401, "authentication_failed")
    response = mint(client, "acme-eu", "anna.schmidt")
    assert response.status_code == 403 and response.json()["error"] == "end_user_disabled"
    assert not EMBED_TOKEN.search(response.content.decode())


def test_each_mint_sends_the_directorys_attributes_which_the_host_keeps(client, demo):
    """The backend names the person in each mint with its directory's fields, with a key
    that has write: the host creates the person at the first mint, and a change made on
    the host since (the admin, the API) is written back at the next one, by that key."""
    sign_in(client, "acme-eu", "anna.schmidt")
    assert services.end_users.find_end_user(demo.pk, "anna.schmidt") is None  # the site's own
    token = minted_token(client, "acme-eu", "anna.schmidt")
    anna = services.end_users.find_end_user(demo.pk, "anna.schmidt")
    assert (anna.display_name, anna.attributes) == ("Anna Schmidt", {"territory": ["DE"]})
    services.end_users.update_end_user(
        demo.pk, "anna.schmidt", {"attributes": {"territory": ["FR"]}}
    )
    assert expected_regions(fetch(client, token).json()["rows"]) == {"FR"}
    assert fetch(client, minted_token(client, "acme-eu", "anna.schmidt")).status_code == 200
    assert services.end_users.find_end_user(demo.pk, "anna.schmidt").attributes == {
        "territory": ["DE"]
    }
    assert expected_regions(fetch(client, token).json()["rows"]) == {"DE"}
    updates = AuditEvent.objects.filter(action="end_user.updated").order_by("pk")
    assert list(updates.values_list("actor_type", "actor_id")) == [
        ("system", "python"),  # the change on the host, in this test's process
        ("api_key", demo.api_key.prefix),  # written back by the next mint
    ]


def test_sign_out_everywhere_without_script_shows_the_signed_out_page(client, demo):
    signed_in_token(client, "acme-eu", "anna.schmidt")
    response = sign_out(client, "acme-eu", "anna.schmidt")
    assert response.status_code == 302 and response["Location"] == "/demo/?group=acme-eu"
    assert "<h1>Signed out</h1>" in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize(
    ("group", "person"), [("acme-eu", "bruno.lefevre"), ("globex-us", "anna.schmidt")]
)
def test_one_signs_out_only_the_person_signed_in(client, demo, group, person):
    token = signed_in_token(client, "acme-eu", "anna.schmidt")
    response = sign_out(client, group, person, HTTP_ACCEPT="application/json")
    assert response.status_code == 403
    assert fetch(client, token).status_code == 200


def test_demo_people_are_end_users_of_the_demo_workspace(demo):
    seeded = seed_demo_people(demo)
    assert [created for _, created in seeded] == [True] * len(DEMO_PEOPLE)
    assert [created for _, created in seed_demo_people(demo)] == [False] * len(DEMO_PEOPLE)
    anna = services.end_users.find_end_user(demo.pk, "anna.schmidt")
    assert anna.display_name == "Anna Schmidt" and anna.attributes == {"territory": ["DE"]}
    for group in DEMO_GROUPS:
        assert 2 <= len(people_of(group["user_group_id"])) <= 4


def test_the_customer_backend_mints_and_revokes_over_http_with_the_demo_api_key(client, demo):
    """The page says its backend calls the API over HTTP with its API key, as a host's
    backend would: the audit trail (and the Activity panel, from its webhooks) names the
    key by its prefix, for the mints and for the sign-out's revocation."""
    signed_in_token(client, "acme-eu", "dana.kowalski")
    sign_out(client, "acme-eu", "dana.kowalski", HTTP_ACCEPT="application/json")
    actors = {
        (event.action, event.actor_type, event.actor_id, event.end_user_id)
        for event in AuditEvent.objects.filter(action__startswith="embed_token.")
    }
    prefix = demo.api_key.prefix
    assert actors == {
        ("embed_token.minted", "api_key", prefix, "dana.kowalski"),
        ("embed_token.revoked", "api_key", prefix, "dana.kowalski"),
    }
    page = client.get(PAGE_URL + "?group=acme-eu").content.decode()
    assert "over HTTP: <code>POST /api/user/embed-token</code> with the demo's API key" in page
    assert "by api_key ugk_" in page


def test_the_backend_answers_unavailable_without_the_demo_key(client, demo, settings):
    settings.DEMO_API_KEY_FILE.unlink()
    response = mint(client)
    assert response.status_code == 502
    assert response.json() == {
        "error": "unavailable",
        "message": "No demo API key: run make demo (manage.py demo_setup).",
    }
